package facts

import (
	"slices"
	"strconv"
)

// Kind is what a fact is. Lower values are more important: when a text
// holds more than [MaxFacts] facts, the more important kinds are kept.
//
// The zero Kind is no kind; [Extract] never returns it.
type Kind uint8

// The kinds of facts, from the most to the least important. The package
// documentation says what each one matches.
const (
	KindNegative Kind = iota + 1 // a sentence recording a negative result
	KindError                    // a line reporting an error
	KindID                       // an identifier, a hash, a UUID
	KindKV                       // a setting: key=value
	KindNumber                   // an amount, a code, a version, a measurement
	KindTime                     // a date or a time of day
	KindPath                     // a file path or file name
	KindURL                      // a URL or host:port
	KindEmail                    // an e-mail address
	KindQuoted                   // a quoted value
	numKinds
)

var kindNames = [numKinds]string{"", "negative", "error", "id", "kv", "number", "time", "path", "url", "email", "quoted"}

// String returns the kind's name: "negative", "error", "id", "kv",
// "number", "time", "path", "url", "email" or "quoted".
func (k Kind) String() string {
	if k == 0 || k >= numKinds {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// The bounds of extraction.
const (
	// MaxFacts is the most facts [Extract] returns for one text.
	MaxFacts = 64
	// MaxLen is the longest fact, in bytes.
	MaxLen = 200
)

// Fact is one load-bearing string of a text.
//
// The zero Fact is no fact. A Fact is a value; it is safe to copy and to
// share.
type Fact struct {
	// Kind is what the fact is.
	Kind Kind
	// Text is the fact's exact string (see the package documentation).
	Text string
	// Offset is the byte offset in the text where Text starts. For a fact
	// whose Text is not a span of the text (a KindKV fact from JSON, or a
	// fact of a JSON string holding escapes or nested JSON), it is the
	// offset of the JSON value it was read from.
	Offset int
	// Key names the fact when the text did: the JSON key of a leaf, the
	// key of a key=value word, the keyword before a number ("exit").
	// Empty otherwise.
	Key string
}

// collector gathers the facts of one text: each string once, as its most
// important kind, and at most MaxFacts of each kind (the earliest), which
// is enough to choose the MaxFacts to return.
type collector struct {
	facts []Fact
	seen  map[string]int // text -> index in facts
	count [numKinds]int
}

// add records a fact unless its text is already known as a kind at least
// as important, or its kind is full. It reports whether the fact is
// known now.
func (c *collector) add(k Kind, text string, off int, key string) bool {
	if text == "" || len(text) > MaxLen {
		return false
	}
	if i, ok := c.seen[text]; ok {
		f := &c.facts[i]
		if k < f.Kind && c.count[k] < MaxFacts {
			c.count[f.Kind]--
			c.count[k]++
			f.Kind, f.Key = k, key
		}
		return true
	}
	if c.count[k] >= MaxFacts {
		return false
	}
	if c.seen == nil {
		c.seen = make(map[string]int)
	}
	c.seen[text] = len(c.facts)
	c.facts = append(c.facts, Fact{Kind: k, Text: text, Offset: off, Key: key})
	c.count[k]++
	return true
}

// full reports whether kind k holds MaxFacts facts already.
func (c *collector) full(k Kind) bool { return c.count[k] >= MaxFacts }

// result returns at most MaxFacts facts, the most important kinds first
// chosen, in the order of their offsets.
func (c *collector) result() []Fact {
	fs := c.facts
	if len(fs) > MaxFacts {
		slices.SortStableFunc(fs, func(a, b Fact) int {
			if a.Kind != b.Kind {
				return int(a.Kind) - int(b.Kind)
			}
			return a.Offset - b.Offset
		})
		fs = fs[:MaxFacts]
	}
	slices.SortStableFunc(fs, func(a, b Fact) int { return a.Offset - b.Offset })
	return fs
}

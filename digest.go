package pruneguard

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pruneguard/pruneguard/internal/facts"
)

// Digest is the built-in [Summarizer]: deterministic, with no model, for
// tests, examples, the command and runtimes that want a cheap first step.
// For each message of the run it writes one line of what happened (the
// role, the tools called with their arguments, the tool answered, the
// start of the text), then the facts the Brief requires, verbatim, then
// as many of the other facts found as fit (those its pointer lines show
// already are not written again), and a line for each pointer it
// carries. Secrets withheld from the Brief never reach it. Within its
// bound (MaxTokens, and the Brief's Room when it is set), the other
// facts take the room before the lines of the messages do, a model
// needing them verbatim where the lines say only what happened: first
// those of the user's and the model's own messages (their text and the
// arguments of their calls), then those an earlier summary of the run
// carried, then those of tool results, a fact of each result in turn,
// each result's most telling kinds first (negative results, errors, ids,
// paths, URLs, addresses, settings, quotes, numbers, times), so that a
// result of many facts of one kind does not crowd out the others. A fact
// too long for the room left is passed over for shorter ones.
//
// The zero Digest is ready to use. A Digest is a plain value, safe for
// concurrent use.
type Digest struct {
	// MaxTokens bounds what the summary holds beyond the facts the
	// Brief requires and the pointer lines, counted as [ApproxCounter]
	// counts (a quarter of the bytes). Zero means a quarter of the run's
	// tokens, or what the earlier summaries of the run hold when that is
	// more (a summary of a summary may hold what the earlier one held),
	// at least 64. With the Brief's Room set, what the summary
	// holds in all stays within Room as well, when the required facts
	// and the pointer lines leave any.
	MaxTokens int
	// PointerText writes the line for a pointer the summary carries; it
	// must hold the pointer's key. Nil writes where the content is and
	// that a recall with the key reads it back.
	PointerText func(Pointer) string
}

// Digest's bounds on what it quotes of a message.
const (
	digestLine = 120 // the start of a text, in bytes
	digestArgs = 100 // a call's arguments, in bytes
)

// Summarize implements [Summarizer]. It fails only when ctx is done.
//
// The facts the Brief requires and the pointer lines are always written;
// within MaxTokens, the other facts take the room first, then the lines
// of the messages, oldest first, and a count of the lines left out.
func (g Digest) Summarize(ctx context.Context, b *Brief) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	n := "1 earlier message"
	if len(b.Replace) != 1 {
		n = strconv.Itoa(len(b.Replace)) + " earlier messages"
	}
	header := "[Summary of " + n + ", not your words nor the user's; facts quoted verbatim]\n"
	written := map[string]bool{}
	required := factLine("Facts to keep:", b.Facts, written, -1)
	var pointers strings.Builder
	for _, p := range b.Pointers {
		pointers.WriteString(g.pointerText(p) + "\n")
	}
	others := otherFacts(b)
	shown := facts.NewCarrier(pointers.String()) // a pointer line that lists facts
	for _, f := range others {
		if k, _ := factKind(f.Kind); shown.Carries(facts.Fact{Text: f.Text, Kind: k}) {
			written[f.Text] = true
		}
	}
	room := g.limit(b)*4 - len(header) - len(required) - pointers.Len()
	if b.Room > 0 {
		room = min(room, b.Room*4-len(header)-len(required)-pointers.Len())
	}
	room = max(room, 0)
	other := factLine("Other facts:", others, written, room)
	lines := digestLines(b.Messages, room-len(other))
	return header + lines + required + other + pointers.String(), nil
}

// digestLines writes the lines of the messages ms that fit in room
// bytes, oldest first, then, when it fits too, a count of those left out.
func digestLines(ms []BriefMessage, room int) string {
	const more = len("- … and 00000 more messages\n")
	var w strings.Builder
	for i, m := range ms {
		line := digestMessage(m)
		if i < len(ms)-1 && w.Len()+len(line)+more > room || w.Len()+len(line) > room {
			if left := "- … and " + strconv.Itoa(len(ms)-i) + " more messages\n"; w.Len()+len(left) <= room {
				w.WriteString(left)
			}
			break
		}
		w.WriteString(line)
	}
	return w.String()
}

// limit returns the bound of what a summary of b holds beyond what it
// must, in tokens: MaxTokens, or a quarter of the run, or what the
// earlier summaries of the run hold, whichever is more.
func (g Digest) limit(b *Brief) int {
	if g.MaxTokens > 0 {
		return g.MaxTokens
	}
	earlier := 0
	for _, m := range b.Messages {
		if m.Role == RoleSummary {
			earlier += (len(m.Content) + 3) / 4
		}
	}
	return max(64, b.Tokens/4, earlier)
}

// factLine writes the facts not yet written, after title, on one line,
// in order, those that fit in room bytes (all of them for a negative
// room), and records them as written: a fact that does not fit is passed
// over for the next. It writes nothing when no fact is new.
func factLine(title string, fs []Fact, written map[string]bool, room int) string {
	var w strings.Builder
	for _, f := range fs {
		if written[f.Text] {
			continue
		}
		if room >= 0 && max(w.Len(), len(title))+len(f.Text)+3 > room {
			continue
		}
		if w.Len() == 0 {
			w.WriteString(title)
		}
		written[f.Text] = true
		w.WriteString(" " + f.Text + ";")
	}
	if w.Len() <= len(title) {
		return ""
	}
	w.WriteString("\n")
	return w.String()
}

// otherFacts returns the facts of the messages of b in the order a
// Digest writes them as room allows (see [Digest]).
func otherFacts(b *Brief) []Fact {
	var words, carried []Fact
	var results [][]Fact
	for _, m := range b.Messages {
		switch {
		case m.Role == RoleSummary:
			carried = append(carried, m.Facts...)
		case len(m.Answers) > 0 || m.Role == RoleTool:
			fs := slices.Clone(m.Facts)
			slices.SortStableFunc(fs, func(a, b Fact) int { return kindRank(a.Kind) - kindRank(b.Kind) })
			results = append(results, fs)
		default:
			words = append(words, m.Facts...)
		}
	}
	out := append(words, carried...)
	for k := 0; len(results) > 0; k++ {
		results = slices.DeleteFunc(results, func(fs []Fact) bool { return k >= len(fs) })
		for _, fs := range results {
			out = append(out, fs[k])
		}
	}
	return out
}

// kindRank ranks the kinds of [Fact] by how much a later turn may need
// one of its facts verbatim, the most first.
func kindRank(kind string) int {
	if i := slices.Index(factKinds, kind); i >= 0 {
		return i
	}
	return len(factKinds)
}

// factKinds are the kinds of [Fact], as kindRank ranks them.
var factKinds = []string{"negative", "error", "id", "path", "url", "email", "kv", "quoted", "number", "time", "text", "pointer"}

func (g Digest) pointerText(p Pointer) string {
	if g.PointerText != nil {
		return g.PointerText(p)
	}
	return "[the messages summarized are stored at " + p.Store + ":" + p.Key + "; recall them with key " + strconv.Quote(p.Key) + "]"
}

// digestMessage writes the line of one message.
func digestMessage(m BriefMessage) string {
	var w strings.Builder
	if m.Role == RoleSummary {
		return "- an earlier summary: its facts are kept below\n"
	}
	w.WriteString("- " + string(m.Role))
	for _, k := range m.Calls {
		w.WriteString(" called " + k.Tool)
		if len(k.Args) > 0 {
			w.WriteString(" " + clip(strings.Join(strings.Fields(string(k.Args)), " "), digestArgs))
		}
	}
	if len(m.Answers) > 0 && len(m.Calls) == 0 {
		w.WriteString(" result of " + strings.Join(m.Tools, ", "))
	}
	if m.IsError {
		w.WriteString(" (error)")
	}
	switch {
	case m.Withheld:
		w.WriteString(": [withheld: a one-time secret]")
	case m.Stubbed:
		w.WriteString(": [content already removed]")
	case len(m.Content) > 0:
		w.WriteString(": " + clip(strings.Join(strings.Fields(string(m.Content)), " "), digestLine))
	}
	w.WriteString("\n")
	return w.String()
}

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

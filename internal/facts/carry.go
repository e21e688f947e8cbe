package facts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Carrier answers whether a text, such as a summary, carries facts (see
// the package documentation for the rule). Make one with [NewCarrier] to
// check many facts against one text.
//
// The zero Carrier is an empty text: it carries nothing. A Carrier is
// safe for concurrent use.
type Carrier struct {
	text string // white space runs as one space
}

// NewCarrier returns a Carrier for text. It costs one pass over text.
func NewCarrier(text string) *Carrier {
	return &Carrier{text: squeeze(text)}
}

// Contains reports whether text carries fact f. To check many facts
// against one text, use a [Carrier].
func Contains(text string, f Fact) bool { return NewCarrier(text).Carries(f) }

// Carries reports whether the Carrier's text carries fact f.
func (c *Carrier) Carries(f Fact) bool {
	if c == nil || f.Text == "" {
		return false
	}
	if c.has(squeeze(f.Text)) {
		return true
	}
	if f.Kind != KindKV || f.Key == "" || !strings.HasPrefix(f.Text, f.Key+"=") {
		return false
	}
	k, v := f.Key, squeeze(f.Text[len(f.Key)+1:])
	for _, form := range [...]string{
		k + ": " + v, k + " = " + v,
		`"` + k + `": ` + v, `"` + k + `":` + v,
		`"` + k + `": "` + v + `"`, `"` + k + `":"` + v + `"`,
	} {
		if c.has(form) {
			return true
		}
	}
	return false
}

// Missing returns the facts of fs the Carrier's text does not carry, in
// their order.
func (c *Carrier) Missing(fs []Fact) []Fact {
	var out []Fact
	for _, f := range fs {
		if !c.Carries(f) {
			out = append(out, f)
		}
	}
	return out
}

// has reports whether s appears in the text as a whole word or number.
func (c *Carrier) has(s string) bool {
	t := c.text
	for from := 0; from <= len(t)-len(s); {
		i := strings.Index(t[from:], s)
		if i < 0 {
			return false
		}
		at := from + i
		if bounded(t, s, at) {
			return true
		}
		from = at + 1
	}
	return false
}

// bounded reports whether s, found at t[at:], stands alone: a word byte
// at either end of s has no word byte beside it in t, and a digit there
// no '.' or ',' joining another digit; a path that starts with '/', '\\',
// '.' or '~' is not the tail of a longer path.
func bounded(t, s string, at int) bool {
	end := at + len(s)
	if pathLead(s[0]) && at > 0 {
		if p, _ := utf8.DecodeLastRuneInString(t[:at]); isWordRune(p) || p < utf8.RuneSelf && pathLead(byte(p)) || p == '-' {
			return false
		}
	}
	if r, _ := utf8.DecodeRuneInString(s); isWordRune(r) && at > 0 {
		p, w := utf8.DecodeLastRuneInString(t[:at])
		if isWordRune(p) {
			return false
		}
		if isDigit(s[0]) && (p == '.' || p == ',') && at-w > 0 && isDigit(t[at-w-1]) {
			return false
		}
	}
	if r, _ := utf8.DecodeLastRuneInString(s); isWordRune(r) && end < len(t) {
		n, w := utf8.DecodeRuneInString(t[end:])
		if isWordRune(n) {
			return false
		}
		if isDigit(s[len(s)-1]) && (n == '.' || n == ',') && end+w < len(t) && isDigit(t[end+w]) {
			return false
		}
	}
	return true
}

// pathLead reports whether c may start a path and continue one: '/',
// '\\', '.' or '~'.
func pathLead(c byte) bool { return c == '/' || c == '\\' || c == '.' || c == '~' }

// isWordRune reports whether r is a letter, a digit or '_'.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// squeeze returns s with each run of white space as one space. It
// returns s itself when there is nothing to change.
func squeeze(s string) string {
	i := 0
	for ; i < len(s); i++ {
		if isSpace(s[i]) && (s[i] != ' ' || i+1 < len(s) && isSpace(s[i+1])) {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		if isSpace(s[i]) {
			b.WriteByte(' ')
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

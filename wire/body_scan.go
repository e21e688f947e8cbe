package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner checks JSON text in one pass without building anything:
// it accepts exactly what encoding/json accepts (RFC 8259, with a value
// nested at most maxDepth containers deep) and returns where each value
// ends. It also counts the whitespace between tokens, so that the length
// of a value's compact form is known without compacting it. Error
// wording is left to encoding/json: a reader that meets a fault asks it
// for the message (see readErr), so that the fast path and the error
// path say the same thing.

// maxDepth is the deepest nesting encoding/json decodes.
const maxDepth = 10000

// errSyntax is the scanner's only error: the text is not valid JSON.
var errSyntax = errors.New("wire: invalid JSON")

// scanner validates values of src. Its zero value with src set is ready.
type scanner struct {
	src   []byte
	stack []byte // open containers: '{' or '['
	ws    int    // whitespace bytes skipped between tokens so far
}

// space skips whitespace from i and counts it.
func (s *scanner) space(i int) int {
	src := s.src
	j := i
	for j < len(src) {
		switch src[j] {
		case ' ', '\t', '\n', '\r':
			j++
			continue
		}
		break
	}
	s.ws += j - i
	return j
}

// value checks the value starting at i (whitespace first allowed) and
// returns the index just past it. Nesting is counted from this value,
// which may hold at most depth containers one inside the other.
func (s *scanner) value(i, depth int) (int, error) {
	src := s.src
	stack := s.stack[:0]
	defer func() { s.stack = stack[:0] }()
	var err error
	for {
		// A value is expected at i.
		i = s.space(i)
		if i >= len(src) {
			return 0, errSyntax
		}
		switch c := src[i]; {
		case c == '{':
			if len(stack) >= depth {
				return 0, errSyntax
			}
			stack = append(stack, '{')
			i = s.space(i + 1)
			if i < len(src) && src[i] == '}' {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if i, err = s.member(i); err != nil {
				return 0, err
			}
			continue
		case c == '[':
			if len(stack) >= depth {
				return 0, errSyntax
			}
			stack = append(stack, '[')
			i = s.space(i + 1)
			if i < len(src) && src[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			continue
		case c == '"':
			if i, err = s.str(i); err != nil {
				return 0, err
			}
		case c == 't':
			if i, err = s.lit(i, "true"); err != nil {
				return 0, err
			}
		case c == 'f':
			if i, err = s.lit(i, "false"); err != nil {
				return 0, err
			}
		case c == 'n':
			if i, err = s.lit(i, "null"); err != nil {
				return 0, err
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i, err = s.num(i); err != nil {
				return 0, err
			}
		default:
			return 0, errSyntax
		}
		// A value ended at i: close containers, or go on to the next one.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = s.space(i)
			if i >= len(src) {
				return 0, errSyntax
			}
			top, c := stack[len(stack)-1], src[i]
			if c == ',' {
				i++
				if top == '{' {
					if i, err = s.member(s.space(i)); err != nil {
						return 0, err
					}
				}
				break
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return 0, errSyntax
		}
	}
}

// member checks an object key at i and the colon after it, and returns
// the index after the colon.
func (s *scanner) member(i int) (int, error) {
	if i >= len(s.src) || s.src[i] != '"' {
		return 0, errSyntax
	}
	i, err := s.str(i)
	if err != nil {
		return 0, err
	}
	i = s.space(i)
	if i >= len(s.src) || s.src[i] != ':' {
		return 0, errSyntax
	}
	return i + 1, nil
}

// str checks the string starting at the quote at i and returns the index
// past its closing quote. Plain bytes are skipped eight at a time.
func (s *scanner) str(i int) (int, error) {
	src := s.src
	i++
	for i < len(src) {
		for i+8 <= len(src) && !special(binary.LittleEndian.Uint64(src[i:])) {
			i += 8
		}
		if i >= len(src) {
			break
		}
		c := src[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(src) {
				return 0, errSyntax
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(src) || !isHex(src[i+2]) || !isHex(src[i+3]) || !isHex(src[i+4]) || !isHex(src[i+5]) {
					return 0, errSyntax
				}
				i += 6
			default:
				return 0, errSyntax
			}
		case c < 0x20:
			return 0, errSyntax
		default:
			i++
		}
	}
	return 0, errSyntax
}

// special reports whether any of the eight bytes of w is a quote, a
// backslash or a control character: a byte a string scan must look at.
func special(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) &^ x & highs }
	// A byte below 0x20: w - 0x20 borrows into its high bit, unless the
	// byte itself has it set.
	ctl := (w - 0x20*ones) &^ w & highs
	return ctl|zero(w^('"'*ones))|zero(w^('\\'*ones)) != 0
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *scanner) lit(i int, word string) (int, error) {
	if len(s.src)-i < len(word) || string(s.src[i:i+len(word)]) != word {
		return 0, errSyntax
	}
	return i + len(word), nil
}

// num checks a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) num(i int) (int, error) {
	src := s.src
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	default:
		return 0, errSyntax
	}
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return 0, errSyntax
		}
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return 0, errSyntax
		}
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	}
	return i, nil
}

// ---- values already checked --------------------------------------------------

// skip returns the index past the value starting at i in text already
// checked by a scanner (whitespace first allowed).
func skip(src []byte, i int) int {
	i = skipSpace(src, i)
	if i >= len(src) {
		return i
	}
	switch src[i] {
	case '"':
		return skipString(src, i)
	case '{', '[':
		depth := 0
		for i < len(src) {
			switch src[i] {
			case '"':
				i = skipString(src, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	// A literal or a number: up to the next delimiter.
	for i < len(src) {
		switch src[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the index past the checked string whose quote is at
// i.
func skipString(src []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(src[i:], '"')
		if j < 0 {
			return len(src)
		}
		i += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		k := i
		for k > 0 && src[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 {
			return i
		}
	}
}

func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		return i
	}
	return i
}

// compactLen returns the length of raw, a checked JSON value, without the
// whitespace between its tokens: the length json.Compact gives it.
func compactLen(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			j := skipString(raw, i)
			n += j - i
			i = j
		default:
			n++
			i++
		}
	}
	return n
}

// unquote decodes the checked JSON string raw, as encoding/json does
// (an escaped surrogate that pairs with nothing becomes U+FFFD).
func unquote(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	return string(unescape(body))
}

// unquoteBytes is unquote into bytes of their own.
func unquoteBytes(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return append([]byte(nil), body...)
	}
	return unescape(body)
}

// unescape decodes the escapes of a checked JSON string's body.
func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			j := bytes.IndexByte(b[i:], '\\')
			if j < 0 {
				return append(out, b[i:]...)
			}
			out = append(out, b[i:i+j]...)
			i += j
			continue
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out = append(out, b[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(b[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
					r2 = hex4(b[i+2 : i+6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					i += 6
					r = dec
				} else {
					r = unicode.ReplacementChar
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		}
		i += 2
	}
	return out
}

// hex4 decodes four checked hex digits.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		default:
			r |= rune(c-'A') + 10
		}
	}
	return r
}

// validJSON reports whether b is one JSON value, whitespace around it
// allowed, as json.Valid does.
func validJSON(b []byte) bool {
	s := scanner{src: b}
	end, err := s.value(0, maxDepth)
	return err == nil && s.space(end) == len(b)
}

// rawEquals reports whether the checked JSON string raw decodes to s.
func rawEquals(raw []byte, s string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	body := raw[1 : len(raw)-1]
	if len(body) == len(s) && string(body) == s {
		return true
	}
	for _, c := range body {
		if c == '\\' {
			return unquote(raw) == s
		}
	}
	return false
}

// blankString reports whether the checked JSON string raw decodes to
// text that strings.TrimSpace leaves empty: only Unicode white space.
func blankString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return true
	}
	b := raw[1 : len(raw)-1]
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			switch b[i+1] {
			case 'n', 't', 'r', 'f':
				i += 2
			case 'u':
				r := hex4(b[i+2 : i+6])
				if !unicode.IsSpace(r) { // surrogates are never space
					return false
				}
				i += 6
			default:
				return false
			}
		case c < utf8.RuneSelf:
			if c != ' ' {
				return false
			}
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if !unicode.IsSpace(r) {
				return false
			}
			i += n
		}
	}
	return true
}

package wire

import (
	"encoding/json"
	"errors"
	"unicode"
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
// past its closing quote.
func (s *scanner) str(i int) (int, error) {
	src := s.src
	i++
	for i < len(src) {
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
	for i < len(src) {
		switch src[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
			continue
		}
		i++
	}
	return i
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

// unquote decodes the checked JSON string raw. A string without escapes
// is converted directly; one with escapes is decoded by encoding/json,
// which replaces invalid surrogates as it always does.
func unquote(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' {
			var s string
			_ = json.Unmarshal(raw, &s)
			return s
		}
	}
	return string(body)
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
				var r rune
				for _, h := range b[i+2 : i+6] {
					r <<= 4
					switch {
					case h >= '0' && h <= '9':
						r |= rune(h - '0')
					case h >= 'a' && h <= 'f':
						r |= rune(h-'a') + 10
					default:
						r |= rune(h-'A') + 10
					}
				}
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

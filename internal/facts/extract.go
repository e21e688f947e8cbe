package facts

import (
	"encoding/json"
	"slices"
	"strings"
)

// Extract returns the facts of a message's text, or of a call's JSON
// arguments: at most [MaxFacts], each at most [MaxLen] bytes, each
// string once, in the order of their offsets (see the package
// documentation for what each kind matches). A text that is a JSON
// object or array is read as JSON, anything else as text. Extract is
// pure and safe for concurrent use; its cost is linear in len(text).
func Extract(text string) []Fact {
	var s scanner
	if looksJSON(text) {
		s.json(text, 0, true, 0)
	} else {
		s.text(text, 0, true)
	}
	return s.c.result()
}

// scanner holds the state of one extraction.
type scanner struct {
	c     collector
	key   string // the JSON key of the string being read as text
	lower []byte // a buffer for the lower-case text
}

// off returns the offset of position i of a text that starts at base in
// the input: base+i when the text is a span of the input, base when it
// is a decoded JSON string.
func (s *scanner) off(base, i int, exact bool) int {
	if exact {
		return base + i
	}
	return base
}

// text adds the facts of plain text t, which starts at base in the input
// (see off).
func (s *scanner) text(t string, base int, exact bool) {
	if strings.TrimSpace(t) == "" {
		return
	}
	s.lower = appendLower(s.lower[:0], t)
	s.lines(t, string(s.lower), base, exact)
	s.words(t, base, exact)
	s.quotes(t, base, exact)
}

// looksJSON reports whether t is a JSON object or array.
func looksJSON(t string) bool {
	i, j := 0, len(t)
	for i < j && isSpace(t[i]) {
		i++
	}
	for j > i && isSpace(t[j-1]) {
		j--
	}
	if j-i < 2 || !(t[i] == '{' && t[j-1] == '}' || t[i] == '[' && t[j-1] == ']') {
		return false
	}
	return json.Valid([]byte(t))
}

// appendLower appends t in ASCII lower case to b (other bytes as they
// are, so that offsets agree).
func appendLower(b []byte, t string) []byte {
	n := len(b)
	b = slices.Grow(b, len(t))[:n+len(t)]
	for i := 0; i < len(t); i++ {
		c := t[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[n+i] = c
	}
	return b
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isWordByte reports whether c belongs to a word: an ASCII letter or
// digit, '_', or a byte of a non-ASCII character.
func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c >= 0x80 }

// trimSpace returns t[from:to] without white space at either end, as
// bounds.
func trimSpace(t string, from, to int) (int, int) {
	for from < to && isSpace(t[from]) {
		from++
	}
	for to > from && isSpace(t[to-1]) {
		to--
	}
	return from, to
}

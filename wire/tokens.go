package wire

import (
	"encoding/json"
)

// Tokenizer counts the tokens of one message, item or content turn given
// as its raw JSON, or of the rest of a request body.
type Tokenizer interface {
	Tokens(raw json.RawMessage) int
}

// TokenizerFunc adapts a function to a [Tokenizer].
type TokenizerFunc func(raw json.RawMessage) int

// Tokens calls f.
func (f TokenizerFunc) Tokens(raw json.RawMessage) int { return f(raw) }

// ApproxTokens is the default [Tokenizer]: a quarter of the length of the
// compact JSON, rounded up. It is a rough estimate, close enough for
// English text and JSON with the common BPE tokenizers; pass a real one
// for accurate budgets. For a message read by this package the length is
// known from the reading, so the count costs nothing more.
var ApproxTokens Tokenizer = approxTokens{}

// approxTokens is ApproxTokens' type, known to the package so that it can
// count a message from what reading it found.
type approxTokens struct{}

// Tokens returns a quarter of the length of raw's compact JSON (of raw
// itself when it is not valid JSON), rounded up.
func (approxTokens) Tokens(raw json.RawMessage) int {
	n := len(raw)
	s := scanner{src: raw}
	if end, err := s.value(0, maxDepth); err == nil && s.space(end) == len(raw) {
		n = len(raw) - s.ws
	}
	return (n + 3) / 4
}

// countTokens counts the tokens of message f with tok.
func countTokens(tok Tokenizer, f *facts) int {
	if _, ok := tok.(approxTokens); ok {
		return (f.compact() + 3) / 4
	}
	return tok.Tokens(f.raw)
}

// Tokens counts the tokens of a body with t (nil means [ApproxTokens]):
// each message, plus the rest of the body (system prompt, tools and
// settings) with an empty message array.
func Tokens(b *Body, t Tokenizer) int {
	if b == nil {
		return 0
	}
	if t == nil {
		t = ApproxTokens
	}
	n := 0
	for i := range b.facts {
		n += countTokens(t, &b.facts[i])
	}
	return n + Overhead(b, t)
}

// Overhead counts the tokens of a body outside its message array.
func Overhead(b *Body, t Tokenizer) int {
	if t == nil {
		t = ApproxTokens
	}
	if b == nil || b.top == nil {
		return 0
	}
	return t.Tokens(b.top.with(b.topEdits([]byte("[]"))))
}

package wire

import (
	"github.com/pruneguard/pruneguard"
)

// Token counts. The package counts with a [pruneguard.Counter], the one
// the Context is configured with (Config.Counter; nil means
// [pruneguard.ApproxCounter]), so that the wire layer and the core count
// alike: each message is counted once, as its JSON, when it is read or
// fed, and the Context is told the count; the Context itself counts the
// tool schemas it holds and the tombstone lines that stand. With
// ApproxCounter a JSON text is counted by its compact length (a quarter
// of it, rounded up), so that whitespace between the tokens of a
// pretty-printed body does not count.

// counterOf returns c, or ApproxCounter when c is nil.
func counterOf(c pruneguard.Counter) pruneguard.Counter {
	if c == nil {
		return pruneguard.ApproxCounter{}
	}
	return c
}

// approx reports whether c is the approximate counter.
func approx(c pruneguard.Counter) bool {
	switch c.(type) {
	case pruneguard.ApproxCounter, *pruneguard.ApproxCounter:
		return true
	}
	return false
}

// countJSON counts the JSON text raw with c: with ApproxCounter, a
// quarter of its compact length (of raw itself when it is not valid
// JSON), rounded up.
func countJSON(c pruneguard.Counter, raw []byte) int {
	if len(raw) == 0 {
		return 0
	}
	if approx(c) {
		n := len(raw)
		s := scanner{src: raw}
		if end, err := s.value(0, maxDepth); err == nil && s.space(end) == len(raw) {
			n = len(raw) - s.ws
		}
		return (n + 3) / 4
	}
	return c.Count(raw)
}

// countFacts counts message f with c. With ApproxCounter the compact
// length is known from reading it, so the count costs nothing more.
func countFacts(c pruneguard.Counter, f *facts) int {
	if approx(c) {
		return (f.compact() + 3) / 4
	}
	return c.Count(f.raw)
}

// Tokens counts the tokens of a body with c (nil means
// [pruneguard.ApproxCounter]): each message as its JSON, plus the rest of
// the body (system prompt, tools and settings) with an empty message
// array. It is what a provider bills for the request, as c counts it.
func Tokens(b *Body, c pruneguard.Counter) int {
	if b == nil {
		return 0
	}
	c = counterOf(c)
	n := 0
	for i := range b.facts {
		n += countFacts(c, &b.facts[i])
	}
	return n + Overhead(b, c)
}

// Overhead counts the tokens of a body outside its message array with c
// (nil means [pruneguard.ApproxCounter]): the body with an empty message
// array.
func Overhead(b *Body, c pruneguard.Counter) int {
	if b == nil || b.top == nil {
		return 0
	}
	return countJSON(counterOf(c), b.top.with(b.topEdits([]byte("[]"))))
}

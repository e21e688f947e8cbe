package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes the pre-tokenizers test, as bits of one byte. A rune
// may carry several: a modifier letter (Lm) is a letter, upper-ish and
// lower-ish at once, and a combining mark (M) is upper-ish and lower-ish
// but not a letter.
const (
	cLetter  uint8 = 1 << iota // \p{L}
	cNumber                    // \p{N}
	cSpace                     // \s: Unicode White_Space
	cNewline                   // \r or \n
	cUpper                     // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower                     // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

// classTable holds the classes of ASCII and of the rest of the Basic
// Multilingual Plane; runes above it are classified on demand.
var (
	classOnce  sync.Once
	classTable [0x10000]uint8
)

// classSets lists, for each class bit, the Unicode tables whose runes
// carry it.
var classSets = []struct {
	bits   uint8
	tables []*unicode.RangeTable
}{
	{cLetter | cUpper, []*unicode.RangeTable{unicode.Lu, unicode.Lt}},
	{cLetter | cLower, []*unicode.RangeTable{unicode.Ll}},
	{cLetter | cUpper | cLower, []*unicode.RangeTable{unicode.Lm, unicode.Lo}},
	{cUpper | cLower, []*unicode.RangeTable{unicode.M}},
	{cNumber, []*unicode.RangeTable{unicode.N}},
	{cSpace, []*unicode.RangeTable{unicode.White_Space}},
}

func buildClasses() {
	for _, s := range classSets {
		for _, t := range s.tables {
			for _, r := range t.R16 {
				for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
					classTable[c] |= s.bits
				}
			}
		}
	}
	classTable['\r'] |= cNewline
	classTable['\n'] |= cNewline
}

// classOf returns the classes of a rune above the Basic Multilingual Plane.
func classOf(r rune) uint8 {
	var c uint8
	for _, s := range classSets {
		for _, t := range s.tables {
			if unicode.Is(t, r) {
				c |= s.bits
			}
		}
	}
	return c
}

// runeAt returns the classes and the encoded length of the rune that
// starts at b[i]. A byte that does not start valid UTF-8 is one rune of
// length 1 in the classes of U+FFFD (a symbol: none of the bits).
func runeAt(b []byte, i int) (uint8, int) {
	if c := b[i]; c < utf8.RuneSelf {
		return classTable[c], 1
	}
	return runeAtSlow(b, i)
}

func runeAtSlow(b []byte, i int) (uint8, int) {
	r, n := utf8.DecodeRune(b[i:])
	if r < 0x10000 {
		return classTable[r], n
	}
	return classOf(r), n
}

package tokenizer

import "unicode/utf8"

// The encodings cut text into pieces with a regular expression before
// byte pair encoding, and byte pair merges never cross a piece. Both
// expressions need lookahead, which package regexp lacks, so each is
// written out here by hand as the backtracking engine would run it at one
// position: the alternatives in order, each quantifier greedy, giving back
// one rune at a time until what follows can match. A splitter returns the
// end of the piece that starts at b[i]; i < len(b), and every piece holds
// at least one rune, so a caller that restarts at the end always advances.

// notP is the complement of [^\r\n\p{L}\p{N}], the optional lead rune of
// the letter alternatives.
const notP = cNewline | cLetter | cNumber

// notQ is the complement of [^\s\p{L}\p{N}], the punctuation alternative.
const notQ = cSpace | cLetter | cNumber

// splitO200k cuts with the expression of o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n/]*
//	|\s*[\r\n]+
//	|\s+(?!\S)
//	|\s+
func splitO200k(b []byte, i int) int {
	if e := asciiWordO200k(b, i); e >= 0 {
		return e
	}
	c0, n0 := runeAt(b, i)
	lead := c0&notP == 0 && i+n0 < len(b)
	// The first alternative, with the lead rune and then without.
	if lead {
		if e := upperThenLower(b, i+n0); e >= 0 {
			return contraction(b, e)
		}
	}
	if c0&(cUpper|cLower) != 0 {
		if e := upperThenLower(b, i); e >= 0 {
			return contraction(b, e)
		}
	}
	// The second, likewise.
	if lead {
		if e := upperRun(b, i+n0); e >= 0 {
			return contraction(b, e)
		}
	}
	if c0&cUpper != 0 {
		if e := upperRun(b, i); e >= 0 {
			return contraction(b, e)
		}
	}
	if c0&cNumber != 0 {
		return numbers(b, i+n0)
	}
	if e := punctuation(b, i, c0, n0); e >= 0 {
		for e < len(b) && (b[e] == '\r' || b[e] == '\n' || b[e] == '/') {
			e++
		}
		return e
	}
	// Only white space is left.
	e, last, newline := spaceRun(b, i)
	switch {
	case newline >= 0: // \s*[\r\n]+ ends after the run's last line break
		return newline + 1
	case e == len(b) || last == i: // \s+ to the end, or a single rune
		return e
	default: // \s+(?!\S) gives back the run's last rune
		return last
	}
}

// asciiWordO200k is splitO200k's fast path for the commonest piece, an
// ASCII word with or without a lead rune: it returns the piece's end, or
// -1 when the piece is something else or runs into a byte above ASCII,
// which the general path must see.
func asciiWordO200k(b []byte, i int) int {
	j := i
	if c := b[i]; c < utf8.RuneSelf && classTable[c]&notP == 0 && i+1 < len(b) {
		j = i + 1 // a lead rune, if a letter follows
	}
	if c := b[j]; c >= utf8.RuneSelf || classTable[c]&cLetter == 0 {
		return -1
	}
	k := j
	for k < len(b) && 'A' <= b[k] && b[k] <= 'Z' {
		k++
	}
	m := k
	for m < len(b) && 'a' <= b[m] && b[m] <= 'z' {
		m++
	}
	if m < len(b) && b[m] >= utf8.RuneSelf {
		return -1
	}
	// With lower-case letters after the capitals the first alternative
	// matches them all; with none, the second matches the capitals.
	return contraction(b, m)
}

// splitCl100k cuts with the expression of cl100k_base:
//
//	'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//	|\s++$|\s*[\r\n]|\s+(?!\S)|\s
func splitCl100k(b []byte, i int) int {
	if e := contraction(b, i); e > i {
		return e
	}
	if e := asciiWordCl100k(b, i); e >= 0 {
		return e
	}
	c0, n0 := runeAt(b, i)
	if c0&notP == 0 && i+n0 < len(b) {
		if c, _ := runeAt(b, i+n0); c&cLetter != 0 {
			return letterRun(b, i+n0)
		}
	}
	if c0&cLetter != 0 {
		return letterRun(b, i)
	}
	if c0&cNumber != 0 {
		return numbers(b, i+n0)
	}
	if e := punctuation(b, i, c0, n0); e >= 0 {
		for e < len(b) && (b[e] == '\r' || b[e] == '\n') {
			e++
		}
		return e
	}
	e, last, newline := spaceRun(b, i)
	switch {
	case e == len(b): // \s++$
		return e
	case newline >= 0: // \s*[\r\n]
		return newline + 1
	case last > i: // \s+(?!\S)
		return last
	default: // \s
		return e
	}
}

// asciiWordCl100k is splitCl100k's fast path for an ASCII word with or
// without a lead rune, once no contraction matched: it returns the
// piece's end, or -1 as asciiWordO200k does.
func asciiWordCl100k(b []byte, i int) int {
	j := i
	if c := b[i]; c < utf8.RuneSelf && classTable[c]&notP == 0 && i+1 < len(b) {
		j = i + 1
	}
	m := j
	for m < len(b) && b[m] < utf8.RuneSelf && classTable[b[m]]&cLetter != 0 {
		m++
	}
	if m == j || m < len(b) && b[m] >= utf8.RuneSelf {
		return -1
	}
	return m
}

// upperThenLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at b[j] and returns its end, or -1. The greedy upper run may have to
// give back its last lower-ish rune for the lower run to match.
func upperThenLower(b []byte, j int) int {
	lastLower := -1
	for j < len(b) {
		c, n := classTable[b[j]], 1
		if b[j] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, j)
		}
		if c&cUpper == 0 {
			if c&cLower != 0 {
				return lowerRun(b, j)
			}
			break
		}
		j += n
		if c&cLower != 0 {
			lastLower = j
		}
	}
	// The rune after the upper run is not lower-ish: the lower run is the
	// last lower-ish rune of the upper run, and the rune after that, upper
	// only or outside both, ends it.
	return lastLower
}

// upperRun matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// at b[j] and returns its end, or -1.
func upperRun(b []byte, j int) int {
	start := j
	for j < len(b) {
		c, n := classTable[b[j]], 1
		if b[j] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, j)
		}
		if c&cUpper == 0 {
			break
		}
		j += n
	}
	if j == start {
		return -1
	}
	return lowerRun(b, j)
}

// lowerRun returns the end of the run of [\p{Ll}\p{Lm}\p{Lo}\p{M}] at b[j].
func lowerRun(b []byte, j int) int {
	for j < len(b) {
		c, n := classTable[b[j]], 1
		if b[j] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, j)
		}
		if c&cLower == 0 {
			break
		}
		j += n
	}
	return j
}

// letterRun returns the end of the run of \p{L} at b[j].
func letterRun(b []byte, j int) int {
	for j < len(b) {
		c, n := classTable[b[j]], 1
		if b[j] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, j)
		}
		if c&cLetter == 0 {
			break
		}
		j += n
	}
	return j
}

// numbers returns the end of \p{N}{1,3} whose first rune ends at j.
func numbers(b []byte, j int) int {
	for k := 1; k < 3 && j < len(b); k++ {
		c, n := classTable[b[j]], 1
		if b[j] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, j)
		}
		if c&cNumber == 0 {
			break
		}
		j += n
	}
	return j
}

// punctuation matches " ?[^\s\p{L}\p{N}]+" at b[i], whose first rune has
// classes c0 and length n0, and returns its end, or -1.
func punctuation(b []byte, i int, c0 uint8, n0 int) int {
	j := -1
	switch {
	case b[i] == ' ' && i+1 < len(b):
		if c, n := runeAt(b, i+1); c&notQ == 0 {
			j = i + 1 + n
		}
	case c0&notQ == 0:
		j = i + n0
	}
	if j < 0 {
		return -1
	}
	for j < len(b) {
		c, n := classTable[b[j]], 1
		if b[j] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, j)
		}
		if c&notQ != 0 {
			break
		}
		j += n
	}
	return j
}

// spaceRun scans the run of white space at b[i]. It returns the run's end,
// the start of its last rune and the index of its last \r or \n (-1 if it
// has none).
func spaceRun(b []byte, i int) (end, last, newline int) {
	newline = -1
	last = i
	for end = i; end < len(b); {
		c, n := classTable[b[end]], 1
		if b[end] >= utf8.RuneSelf {
			c, n = runeAtSlow(b, end)
		}
		if c&cSpace == 0 {
			break
		}
		if c&cNewline != 0 {
			newline = end
		}
		last = end
		end += n
	}
	return end, last, newline
}

// contraction returns the end of one of 's 't 're 've 'm 'll 'd, in any
// case, at b[i], or i if none is there. Case is matched by Unicode simple
// case folding, as the encodings' regular expressions do, so the long s
// (U+017F) stands for s.
func contraction(b []byte, i int) int {
	if i+1 >= len(b) || b[i] != '\'' {
		return i
	}
	r1, n1 := foldedAt(b, i+1)
	switch r1 {
	case 's', 't', 'm', 'd':
		return i + 1 + n1
	case 'r', 'v', 'l':
		if i+1+n1 >= len(b) {
			return i
		}
		r2, n2 := foldedAt(b, i+1+n1)
		if r2 == 'e' && r1 != 'l' || r2 == 'l' && r1 == 'l' {
			return i + 1 + n1 + n2
		}
	}
	return i
}

// foldedAt returns the rune at b[j] as a lower-case ASCII letter when its
// case folds to one, and its encoded length. Only two runes outside ASCII
// fold to an ASCII letter: U+017F (s) and U+212A (k).
func foldedAt(b []byte, j int) (rune, int) {
	c := b[j]
	if c < 0x80 {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return rune(c), 1
	}
	switch {
	case c == 0xC5 && j+1 < len(b) && b[j+1] == 0xBF: // U+017F
		return 's', 2
	case c == 0xE2 && j+2 < len(b) && b[j+1] == 0x84 && b[j+2] == 0xAA: // U+212A
		return 'k', 3
	}
	return 0, 1
}

package facts

import "strings"

// A phrase makes the line or sentence holding it a fact: an error line
// or a negative result. Phrases are matched in lower case; word asks
// that the phrase be a whole word (no letter, digit or '_' on either
// side), start that it start one.
type phrase struct {
	text        string
	kind        Kind
	word, start bool
	// check, when set, must also hold at the phrase's place.
	check func(lower string, at int) bool
}

var phrases = []phrase{
	{text: "error", kind: KindError},
	{text: "failed", kind: KindError},
	{text: "failure", kind: KindError},
	{text: "exception", kind: KindError},
	{text: "denied", kind: KindError},
	{text: "not found", kind: KindError},
	{text: "traceback", kind: KindError},
	{text: "fatal", kind: KindError, start: true},
	{text: "panic", kind: KindError, start: true},
	{text: "refused", kind: KindError, start: true},
	{text: "timed out", kind: KindError, start: true},
	{text: "no such file", kind: KindError, start: true},
	{text: "cannot", kind: KindError, word: true},
	{text: "unable to", kind: KindError, word: true},
	{text: "invalid", kind: KindError, start: true},
	{text: "killed", kind: KindError, word: true},
	{text: "out of memory", kind: KindError, word: true},
	{text: "oom", kind: KindError, word: true},

	{text: "not the cause", kind: KindNegative, start: true},
	{text: "not the problem", kind: KindNegative, start: true},
	{text: "not the issue", kind: KindNegative, start: true},
	{text: "not the culprit", kind: KindNegative, start: true},
	{text: "not caused by", kind: KindNegative, start: true},
	{text: "not related to", kind: KindNegative, start: true},
	{text: "is not from", kind: KindNegative, start: true},
	{text: "was not from", kind: KindNegative, start: true},
	{text: "isn't from", kind: KindNegative, start: true},
	{text: "wasn't from", kind: KindNegative, start: true},
	{text: "not found", kind: KindNegative, start: true},
	{text: "does not exist", kind: KindNegative, start: true},
	{text: "doesn't exist", kind: KindNegative, start: true},
	{text: "did not exist", kind: KindNegative, start: true},
	{text: "do not exist", kind: KindNegative, start: true},
	{text: "no such", kind: KindNegative, word: true},
	{text: "0 results", kind: KindNegative, start: true},
	{text: "0 matches", kind: KindNegative, start: true},
	{text: "0 rows", kind: KindNegative, start: true},
	{text: "zero results", kind: KindNegative, start: true},
	{text: "no results", kind: KindNegative, start: true},
	{text: "no matches", kind: KindNegative, start: true},
	{text: "no match", kind: KindNegative, word: true},
	{text: "nothing found", kind: KindNegative, start: true},
	{text: "found nothing", kind: KindNegative, start: true},
	{text: "did not find", kind: KindNegative, start: true},
	{text: "didn't find", kind: KindNegative, start: true},
	{text: "could not find", kind: KindNegative, start: true},
	{text: "couldn't find", kind: KindNegative, start: true},
	{text: "unable to find", kind: KindNegative, start: true},
	{text: "not reproduce", kind: KindNegative, start: true},
	{text: "not reproducible", kind: KindNegative, start: true},
	{text: "ruled out", kind: KindNegative, word: true},
	{text: "rules out", kind: KindNegative, word: true},
	{text: "not present", kind: KindNegative, start: true},
	{text: "not available", kind: KindNegative, start: true},
	{text: "none found", kind: KindNegative, start: true},
	{text: "no longer", kind: KindNegative, word: true},
	{text: "found", kind: KindNegative, word: true, check: afterNo},
}

// noWindow is how far before "found" afterNo looks for "no".
const noWindow = 48

// afterNo reports whether the word "no" or "none" comes before lower[at:]
// in the same sentence, within noWindow bytes: "no reservations found".
func afterNo(lower string, at int) bool {
	from := max(0, at-noWindow)
	for i := at - 1; i >= from; i-- {
		c := lower[i]
		if c == '\n' || ((c == '.' || c == '!' || c == '?') && i+1 < len(lower) && isSpace(lower[i+1])) {
			return false
		}
		if c == 'n' && (i == 0 || !isWordByte(lower[i-1])) {
			w := lower[i:at]
			if strings.HasPrefix(w, "no ") || strings.HasPrefix(w, "none ") {
				return true
			}
		}
	}
	return false
}

// hit is the next place of one phrase in the text, or -1.
type hit struct {
	p  *phrase
	at int
}

// lines adds the error lines and negative sentences of t. lower is t in
// ASCII lower case. The phrases are found with one search each over the
// whole text and taken in the order of their places, so the cost is
// linear in t and in the number of places (each costs at most a few
// times MaxLen).
func (s *scanner) lines(t, lower string, base int, exact bool) {
	hits := s.hits[:0]
	for i := range phrases {
		hits = append(hits, hit{&phrases[i], nextPhrase(lower, &phrases[i], 0)})
	}
	s.hits = hits
	var doneTo [numKinds]int // the end of the last fact of each kind
	for !(s.c.full(KindError) && s.c.full(KindNegative)) {
		k := -1
		for i := range hits {
			if hits[i].at >= 0 && (k < 0 || hits[i].at < hits[k].at) {
				k = i
			}
		}
		if k < 0 {
			return
		}
		h := &hits[k]
		at, kind := h.at, h.p.kind
		h.at = nextPhrase(lower, h.p, at+1)
		if at < doneTo[kind] || s.c.full(kind) {
			continue
		}
		from, to := spanAround(t, at, len(h.p.text), kind == KindNegative)
		if to <= from {
			continue
		}
		s.c.add(kind, t[from:to], s.off(base, from, exact), s.key)
		doneTo[kind] = to
	}
}

// nextPhrase returns the first place of p in lower at or after from that
// passes p's boundaries and check, or -1.
func nextPhrase(lower string, p *phrase, from int) int {
	for from <= len(lower) {
		i := strings.Index(lower[from:], p.text)
		if i < 0 {
			return -1
		}
		at := from + i
		end := at + len(p.text)
		ok := true
		if p.word || p.start {
			ok = at == 0 || !isWordByte(lower[at-1])
		}
		if ok && p.word {
			ok = end == len(lower) || !isWordByte(lower[end])
		}
		if ok && p.check != nil {
			ok = p.check(lower, at)
		}
		if ok {
			return at
		}
		from = at + 1
	}
	return -1
}

// spanAround returns the line (or, with sentence, the sentence) of t
// holding t[at:at+n], without its surrounding white space (and a
// sentence without its closing '.', '!' or '?'), cut to a window of whole
// words of at most MaxLen bytes around the phrase when it is longer. It
// looks at most 2*MaxLen bytes either side.
func spanAround(t string, at, n int, sentence bool) (int, int) {
	lo := max(0, at-2*MaxLen)
	from := at
	for from > lo && !endsUnit(t, from-1, sentence) {
		from--
	}
	hi := min(len(t), at+n+2*MaxLen)
	to := at + n
	for to < hi && !endsUnit(t, to, sentence) {
		to++
	}
	from, to = trimSpace(t, from, to)
	for sentence && to > at+n && (t[to-1] == '.' || t[to-1] == '!' || t[to-1] == '?') {
		to--
	}
	if to-from <= MaxLen {
		return from, to
	}
	return window(t, from, to, at, n)
}

// endsUnit reports whether t[i] ends a line (or a sentence): a line end,
// or with sentence a '.', '!' or '?' followed by white space.
func endsUnit(t string, i int, sentence bool) bool {
	switch t[i] {
	case '\n', '\r':
		return true
	case '.', '!', '?':
		return sentence && i+1 < len(t) && isSpace(t[i+1])
	}
	return false
}

// window cuts t[from:to] to at most MaxLen bytes around t[at:at+n],
// starting and ending at white space, or returns an empty span when the
// words there are too long for that.
func window(t string, from, to, at, n int) (int, int) {
	lo := max(from, at-MaxLen/4)
	hi := min(to, lo+MaxLen) // past the phrase, which is much shorter than MaxLen/4
	if lo > from && !isSpace(t[lo-1]) {
		i := strings.IndexByte(t[lo:at], ' ')
		if i < 0 {
			return 0, 0
		}
		lo += i + 1
	}
	if hi < to && !isSpace(t[hi]) {
		i := strings.LastIndexByte(t[at+n:hi], ' ')
		if i < 0 {
			return 0, 0
		}
		hi = at + n + i
	}
	return trimSpace(t, lo, hi)
}

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

// lines adds the error lines and negative sentences of t. lower is t in
// ASCII lower case. One pass of the phrases' automaton finds every place
// of every phrase; each place costs at most a few times MaxLen more, and
// places inside a fact already found cost nothing.
func (s *scanner) lines(t, lower string, base int, exact bool) {
	var doneTo [numKinds]int // the end of the last fact of each kind
	a := &matcher
	st := int32(0)
	for i := 0; i < len(lower); i++ {
		st = a.next[int(st)*a.classes+int(a.class[lower[i]])]
		for _, k := range a.out[st] {
			p := &phrases[k]
			at := i + 1 - len(p.text)
			if at < doneTo[p.kind] || s.c.full(p.kind) || !p.fits(lower, at) {
				continue
			}
			from, to := spanAround(t, at, len(p.text), p.kind == KindNegative)
			if to <= from {
				continue
			}
			s.c.add(p.kind, t[from:to], s.off(base, from, exact), s.key)
			doneTo[p.kind] = to
			if s.c.full(KindError) && s.c.full(KindNegative) {
				return
			}
		}
	}
}

// fits reports whether the phrase found at lower[at:] passes its
// boundaries and check.
func (p *phrase) fits(lower string, at int) bool {
	end := at + len(p.text)
	if (p.word || p.start) && at > 0 && isWordByte(lower[at-1]) {
		return false
	}
	if p.word && end < len(lower) && isWordByte(lower[end]) {
		return false
	}
	return p.check == nil || p.check(lower, at)
}

// automaton finds every place of every phrase in one pass (Aho-Corasick
// over the bytes the phrases use; every other byte is class 0).
type automaton struct {
	class   [256]uint8
	classes int
	next    []int32   // state*classes+class -> state
	out     [][]int16 // the phrases ending at each state
}

var matcher = build(phrases)

// build makes the automaton of ps.
func build(ps []phrase) automaton {
	var a automaton
	a.classes = 1
	for _, p := range ps {
		for i := 0; i < len(p.text); i++ {
			if c := p.text[i]; a.class[c] == 0 {
				a.class[c] = uint8(a.classes)
				a.classes++
			}
		}
	}
	// The trie, with -1 for no edge.
	trie := [][]int32{make([]int32, a.classes)}
	a.out = [][]int16{nil}
	for k, p := range ps {
		st := 0
		for i := 0; i < len(p.text); i++ {
			c := a.class[p.text[i]]
			if trie[st][c] <= 0 {
				trie = append(trie, make([]int32, a.classes))
				a.out = append(a.out, nil)
				trie[st][c] = int32(len(trie) - 1)
			}
			st = int(trie[st][c])
		}
		a.out[st] = append(a.out[st], int16(k))
	}
	// Breadth first: each state's failure link, and its missing edges
	// taken from its failure state's.
	fail := make([]int32, len(trie))
	a.next = make([]int32, len(trie)*a.classes)
	queue := []int32{0}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		for c := 0; c < a.classes; c++ {
			child := trie[st][c]
			if child > 0 {
				if st > 0 {
					fail[child] = a.next[int(fail[st])*a.classes+c]
				}
				a.out[child] = append(a.out[child], a.out[fail[child]]...)
				a.next[int(st)*a.classes+c] = child
				queue = append(queue, child)
			} else if st > 0 {
				a.next[int(st)*a.classes+c] = a.next[int(fail[st])*a.classes+c]
			}
		}
	}
	return a
}

// spanAround returns the line (or, with sentence, the sentence) of t
// holding t[at:at+n], without its surrounding white space and closing
// '.', '!' or '?', cut to a window of whole
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
	for to > at+n && (t[to-1] == '.' || t[to-1] == '!' || t[to-1] == '?') {
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

package wire

import (
	"math/bits"
	"slices"
)

// The messages of a guarded body as the applied decisions left them: a
// list of the messages kept, linked both ways, with a bitmap of the ones
// removed and a Fenwick tree of its counts by block of 64 messages, so
// that a message's position in the edited body is found in logarithmic
// time. A screen looks at the body through a view:
// the applied edits plus tentative ones, held apart in small sets, so
// that trying a decision costs in proportion to what it edits.

// seqState is the applied edits of a guarded body of n messages.
type seqState struct {
	n          int
	next, prev []int32 // the kept messages, linked; -1 ends
	head, tail int32
	removed    []bool
	stubbed    []bool
	bits       []uint64 // removed, 64 messages a word
	fen        []int32  // Fenwick tree of the removed in each word, 1-based
	kept       int
	version    uint64 // counts the changes

	// The marks of the sets of tentative edits (see edits).
	gen            uint32
	rmMark, stMark []uint32
	// The links the sets of tentative edits follow past their runs of
	// removals, backward and forward (see edits.skip): link[d][i] holds
	// for the set whose generation is linkGen[d][i].
	link    [2][]int32
	linkGen [2][]uint32
}

func newSeqState(n int) *seqState {
	s := &seqState{n: n, next: make([]int32, n), prev: make([]int32, n), removed: make([]bool, n),
		stubbed: make([]bool, n), bits: make([]uint64, words(n)), fen: make([]int32, words(n)+1), head: -1, tail: -1, kept: n,
		rmMark: make([]uint32, n), stMark: make([]uint32, n)}
	for d := range s.link {
		s.link[d] = make([]int32, n)
		s.linkGen[d] = make([]uint32, n)
	}
	for i := range n {
		s.next[i] = int32(i + 1)
		s.prev[i] = int32(i - 1)
	}
	if n > 0 {
		s.next[n-1] = -1
		s.head, s.tail = 0, int32(n-1)
	}
	return s
}

// remove takes message i out of the kept list.
func (s *seqState) remove(i int32) {
	if s.removed[i] {
		return
	}
	s.unlink(i)
	s.mark(i, 1)
}

// unlink takes message i, not removed yet, out of the kept list's links
// and counts, leaving its bit and the tree to the caller.
func (s *seqState) unlink(i int32) {
	s.removed[i] = true
	s.kept--
	s.version++
	p, n := s.prev[i], s.next[i]
	if p >= 0 {
		s.next[p] = n
	} else {
		s.head = n
	}
	if n >= 0 {
		s.prev[n] = p
	} else {
		s.tail = p
	}
}

// words returns the words of a bitmap of n messages.
func words(n int) int { return (n + 63) >> 6 }

// mark sets (n = 1) or clears (n = -1) the bit of message i and counts
// it in the tree.
func (s *seqState) mark(i int32, n int32) {
	s.bits[i>>6] ^= 1 << (i & 63)
	for k := int(i>>6) + 1; k < len(s.fen); k += k & -k {
		s.fen[k] += n
	}
}

// removeAll takes the messages rm out of the kept list, leaving out
// those already removed, and appends those it removes to *out, in order,
// when out is not nil. When *out is nil and every message of rm is
// removed, *out is rm itself (clipped, so that appending to it copies),
// with no copy made. A batch large enough that updating the Fenwick
// tree message by message would cost more than building it again has it
// built again, in time linear in the body's words (a 64th of its
// messages): either way the cost is at most in proportion to the batch
// times the tree's depth.
func (s *seqState) removeAll(rm []int32, out *[]int32) {
	depth := bits.Len(uint(len(s.fen)))
	batch := len(rm)*depth > len(s.fen)
	// whole: *out is rm[:k] so far, to be made only if a message of rm is
	// left out.
	whole := out != nil && *out == nil
	for k, i := range rm {
		if s.removed[i] {
			if whole {
				*out = append(make([]int32, 0, len(rm)-1), rm[:k]...)
				whole = false
			}
			continue
		}
		if out != nil && !whole {
			*out = append(*out, i)
		}
		if !batch {
			s.remove(i)
			continue
		}
		s.unlink(i)
		s.bits[i>>6] |= 1 << (i & 63)
	}
	if whole {
		*out = slices.Clip(rm)
	}
	if batch {
		s.rebuildFenwick()
	}
}

// rebuildFenwick builds the Fenwick tree of the removed messages' words
// again, in time linear in the words.
func (s *seqState) rebuildFenwick() {
	for k := 1; k < len(s.fen); k++ {
		s.fen[k] = int32(bits.OnesCount64(s.bits[k-1]))
	}
	for k := 1; k < len(s.fen); k++ {
		if p := k + k&-k; p < len(s.fen) {
			s.fen[p] += s.fen[k]
		}
	}
}

// restore puts back message i, the last one removed: removals are taken
// back in the reverse order, so its neighbours are as they were.
func (s *seqState) restore(i int32) {
	if !s.removed[i] {
		return
	}
	s.removed[i] = false
	s.kept++
	s.version++
	p, n := s.prev[i], s.next[i]
	if p >= 0 {
		s.next[p] = i
	} else {
		s.head = i
	}
	if n >= 0 {
		s.prev[n] = i
	} else {
		s.tail = i
	}
	s.mark(i, -1)
}

// removedBefore counts the removed messages with an index below i.
func (s *seqState) removedBefore(i int32) int {
	w := int(i >> 6)
	n := 0
	for k := w; k > 0; k -= k & -k {
		n += int(s.fen[k])
	}
	if w < len(s.bits) {
		n += bits.OnesCount64(s.bits[w] & (1<<(i&63) - 1))
	}
	return n
}

// grow appends a message to the kept list, at its end, and returns its
// index: a session's history grows as messages are fed.
func (s *seqState) grow() int32 {
	i := int32(s.n)
	s.n++
	s.next = append(s.next, -1)
	s.prev = append(s.prev, s.tail)
	s.removed = append(s.removed, false)
	s.stubbed = append(s.stubbed, false)
	s.rmMark = append(s.rmMark, 0)
	s.stMark = append(s.stMark, 0)
	for d := range s.link {
		s.link[d] = append(s.link[d], 0)
		s.linkGen[d] = append(s.linkGen[d], 0)
	}
	if s.tail >= 0 {
		s.next[s.tail] = i
	} else {
		s.head = i
	}
	s.tail = i
	s.kept++
	s.version++
	if words(s.n) > len(s.bits) {
		// A new word, empty: its Fenwick node covers the words from
		// k-lowbit(k) to it, all before it but itself.
		s.bits = append(s.bits, 0)
		k := len(s.bits)
		s.fen = append(s.fen, int32(s.removedBefore(i)-s.removedBefore(int32(k-(k&-k))<<6)))
	}
	return i
}

// edits is a set of tentative edits: messages removed and stubbed, in
// the order added, with their membership in marks the seqState shares:
// a message belongs to one set of edits at a time. live holds the
// messages it removes that the applied edits keep, in order, so that a
// view finds a message's rank in logarithmic time: while every removal
// added is one the applied edits keep, each past the one before (as a
// decision names them), live is rm itself (shared set), and it gets its
// own copy at the first that is not; gl sums the globals
// of the first glN of rm (see ruleScreen.removedGlobals). The set's links
// (seqState.link, under its generation) map a message it removes to a
// message before (after) it in the applied list, closer to the end of
// the run of the set's removals that holds it: a view walks past a long
// run at once.
type edits struct {
	gen    uint32
	shared bool // live is rm
	marks  *seqState
	rm, st []int32
	live   []int32
	gl     globals
	glN    int
	// sub, when set, is a message the set writes as another: a summary in
	// the place of the first message of the run it replaces.
	sub *rewrite
}

// rewrite is a message a set of edits writes as f; counted records that
// the set's globals count the change.
type rewrite struct {
	i       int32
	f       *facts
	counted bool
}

// skip returns, for message j that e removes, the nearest message of the
// applied list before it (after it, with fwd set) that e does not remove,
// or -1. The paths it follows are compressed, so that walking past what a
// screen has taken costs amortized constant time.
func (e *edits) skip(s *seqState, j int32, fwd bool) int32 {
	d, step := 0, s.prev
	if fwd {
		d, step = 1, s.next
	}
	link, gen := s.link[d], s.linkGen[d]
	// A link is the set's own while the message is the set's removal: a
	// message belongs to one set at a time, and links are only followed
	// from the set's removals.
	at := func(x int32) int32 {
		if gen[x] == e.gen {
			return link[x]
		}
		return step[x]
	}
	end := at(j)
	for end >= 0 && e.removes(end) {
		end = at(end)
	}
	for x := j; x >= 0 && x != end && e.removes(x); {
		y := at(x)
		link[x], gen[x] = end, e.gen
		x = y
	}
	return end
}

// newEdits returns an empty set of edits.
func (s *seqState) newEdits() *edits {
	s.gen++
	return &edits{gen: s.gen, marks: s, shared: true}
}

// reuse empties e into a new set of edits, of a generation of its own,
// keeping its buffers: for a loop that tries one set after another.
func (s *seqState) reuse(e *edits) {
	s.gen++
	*e = edits{gen: s.gen, marks: s, shared: true, rm: e.rm[:0], st: e.st[:0]}
}

// newEditsFor returns an empty set of edits with room for rm removals
// and st stubs.
func (s *seqState) newEditsFor(rm, st int) *edits {
	e := s.newEdits()
	if rm > 0 {
		e.rm = make([]int32, 0, rm)
		e.live = e.rm
	}
	if st > 0 {
		e.st = make([]int32, 0, st)
	}
	return e
}

// remove and stub add message i to the set.
func (e *edits) remove(i int32) {
	s := e.marks
	if e.shared && (len(e.rm) == 0 || e.rm[len(e.rm)-1] < i) && !s.removed[i] {
		// Past every removal so far, it is not in the set yet.
		s.rmMark[i] = e.gen
		e.rm = append(e.rm, i)
		e.live = e.rm
		return
	}
	if s.rmMark[i] == e.gen {
		return
	}
	s.rmMark[i] = e.gen
	kept := !s.removed[i]
	if e.shared {
		e.live = slices.Clone(e.rm)
		e.shared = false
	}
	e.rm = append(e.rm, i)
	if kept {
		// Edits come mostly in transcript order: the place is found
		// from the end.
		k := len(e.live)
		for k > 0 && e.live[k-1] > i {
			k--
		}
		if k == len(e.live) {
			e.live = append(e.live, i)
		} else {
			e.live = slices.Insert(e.live, k, i)
		}
	}
}

// rewrite makes the set write message i, which the applied edits keep,
// as f: a summary in its place.
func (e *edits) rewrite(i int32, f *facts) { e.sub = &rewrite{i: i, f: f} }

// rewrites reports whether the set writes message i as another.
func (e *edits) rewrites(i int32) bool { return e != nil && e.sub != nil && e.sub.i == i }

func (e *edits) stub(i int32) {
	if e.marks.stMark[i] != e.gen {
		e.marks.stMark[i] = e.gen
		e.st = append(e.st, i)
	}
}

// removes and stubs report whether the set removes or stubs message i.
func (e *edits) removes(i int32) bool { return e != nil && e.marks.rmMark[i] == e.gen }
func (e *edits) stubs(i int32) bool   { return e != nil && e.marks.stMark[i] == e.gen }

func (e *edits) empty() bool { return e == nil || (len(e.rm) == 0 && len(e.st) == 0 && e.sub == nil) }

// changes reports whether the set removes a message, or stubs one the
// applied edits do not stub already.
func (e *edits) changes(s *seqState) bool {
	if e == nil {
		return false
	}
	if len(e.rm) > 0 || e.sub != nil {
		return true
	}
	for _, i := range e.st {
		if !s.stubbed[i] {
			return true
		}
	}
	return false
}

// view is the body as the applied edits and up to two sets of tentative
// ones leave it.
type view struct {
	s    *seqState
	a, b *edits
}

func (v view) isRemoved(i int32) bool {
	return v.s.removed[i] || v.a.removes(i) || v.b.removes(i)
}

func (v view) isStubbed(i int32) bool {
	return v.s.stubbed[i] || v.a.stubs(i) || v.b.stubs(i)
}

// rewritten returns what a set of the view writes message i as, or nil.
func (v view) rewritten(i int32) *facts {
	switch {
	case v.a.rewrites(i):
		return v.a.sub.f
	case v.b.rewrites(i):
		return v.b.sub.f
	}
	return nil
}

// next returns the kept message after i, or -1; i is a message the
// applied edits keep.
func (v view) next(i int32) int32 { return v.walk(v.s.next[i], true) }

// prev returns the kept message before i, or -1; i is a message the
// applied edits keep.
func (v view) prev(i int32) int32 { return v.walk(v.s.prev[i], false) }

// walk returns j, or the first message from j on (back from j, with fwd
// unset) that the view keeps, or -1: runs of v.a's removals are passed
// at once.
func (v view) walk(j int32, fwd bool) int32 {
	for j >= 0 && v.isRemoved(j) {
		switch {
		case v.a.removes(j):
			j = v.a.skip(v.s, j, fwd)
		case fwd:
			j = v.s.next[j]
		default:
			j = v.s.prev[j]
		}
	}
	return j
}

// first and last return the first and last kept messages, or -1.
func (v view) first() int32 { return v.walk(v.s.head, true) }

func (v view) last() int32 { return v.walk(v.s.tail, false) }

// rank returns the position of kept message i in the body the view
// shows. It takes logarithmic time in the messages of the body and of
// v.a, and linear time in those of v.b (the small set a screen tries on
// top of what it has taken).
func (v view) rank(i int32) int {
	r := int(i) - v.s.removedBefore(i)
	if v.a != nil {
		k, _ := slices.BinarySearch(v.a.live, i)
		r -= k
	}
	if v.b != nil {
		for _, j := range v.b.live {
			if j < i && !v.a.removes(j) {
				r--
			}
		}
	}
	return r
}

// kept counts the messages the view keeps.
func (v view) kept() int {
	n := v.s.kept
	if v.a != nil {
		n -= len(v.a.live)
	}
	if v.b != nil {
		for _, j := range v.b.live {
			if !v.a.removes(j) {
				n--
			}
		}
	}
	return n
}

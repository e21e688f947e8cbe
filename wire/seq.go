package wire

// The messages of a guarded body as the applied decisions left them: a
// list of the messages kept, linked both ways, with a Fenwick tree of
// the ones removed so that a message's position in the edited body is
// found in logarithmic time. A screen looks at the body through a view:
// the applied edits plus tentative ones, held apart in small sets, so
// that trying a decision costs in proportion to what it edits.

// seqState is the applied edits of a guarded body of n messages.
type seqState struct {
	n          int
	next, prev []int32 // the kept messages, linked; -1 ends
	head, tail int32
	removed    []bool
	stubbed    []bool
	fen        []int32 // Fenwick tree over removed, 1-based
	kept       int
	version    uint64 // counts the changes

	// The marks of the sets of tentative edits (see edits).
	gen            uint32
	rmMark, stMark []uint32
}

func newSeqState(n int) *seqState {
	s := &seqState{n: n, next: make([]int32, n), prev: make([]int32, n), removed: make([]bool, n),
		stubbed: make([]bool, n), fen: make([]int32, n+1), head: -1, tail: -1, kept: n,
		rmMark: make([]uint32, n), stMark: make([]uint32, n)}
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
	for k := int(i) + 1; k <= s.n; k += k & -k {
		s.fen[k]++
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
	for k := int(i) + 1; k <= s.n; k += k & -k {
		s.fen[k]--
	}
}

// removedBefore counts the removed messages with an index below i.
func (s *seqState) removedBefore(i int32) int {
	n := 0
	for k := int(i); k > 0; k -= k & -k {
		n += int(s.fen[k])
	}
	return n
}

// edits is a set of tentative edits: messages removed and stubbed, in
// the order added, with their membership in marks the seqState shares:
// a message belongs to one set of edits at a time.
type edits struct {
	gen    uint32
	marks  *seqState
	rm, st []int32
}

// newEdits returns an empty set of edits.
func (s *seqState) newEdits() *edits {
	s.gen++
	return &edits{gen: s.gen, marks: s}
}

// remove and stub add message i to the set.
func (e *edits) remove(i int32) {
	if e.marks.rmMark[i] != e.gen {
		e.marks.rmMark[i] = e.gen
		e.rm = append(e.rm, i)
	}
}

func (e *edits) stub(i int32) {
	if e.marks.stMark[i] != e.gen {
		e.marks.stMark[i] = e.gen
		e.st = append(e.st, i)
	}
}

// removes and stubs report whether the set removes or stubs message i.
func (e *edits) removes(i int32) bool { return e != nil && e.marks.rmMark[i] == e.gen }
func (e *edits) stubs(i int32) bool   { return e != nil && e.marks.stMark[i] == e.gen }

func (e *edits) empty() bool { return e == nil || (len(e.rm) == 0 && len(e.st) == 0) }

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

// next returns the kept message after i, or -1; i is a message the
// applied edits keep.
func (v view) next(i int32) int32 {
	j := v.s.next[i]
	for j >= 0 && v.isRemoved(j) {
		j = v.s.next[j]
	}
	return j
}

// prev returns the kept message before i, or -1; i is a message the
// applied edits keep.
func (v view) prev(i int32) int32 {
	j := v.s.prev[i]
	for j >= 0 && v.isRemoved(j) {
		j = v.s.prev[j]
	}
	return j
}

// first and last return the first and last kept messages, or -1.
func (v view) first() int32 {
	j := v.s.head
	for j >= 0 && v.isRemoved(j) {
		j = v.s.next[j]
	}
	return j
}

func (v view) last() int32 {
	j := v.s.tail
	for j >= 0 && v.isRemoved(j) {
		j = v.s.prev[j]
	}
	return j
}

// rank returns the position of kept message i in the body the view
// shows.
func (v view) rank(i int32) int {
	r := int(i) - v.s.removedBefore(i)
	for _, e := range []*edits{v.a, v.b} {
		if e == nil {
			continue
		}
		for _, j := range e.rm {
			if j < i && !v.s.removed[j] && (e == v.a || !v.a.removes(j)) {
				r--
			}
		}
	}
	return r
}

// kept counts the messages the view keeps.
func (v view) kept() int {
	n := v.s.kept
	for _, e := range []*edits{v.a, v.b} {
		if e == nil {
			continue
		}
		for _, j := range e.rm {
			if !v.s.removed[j] && (e == v.a || !v.a.removes(j)) {
				n--
			}
		}
	}
	return n
}

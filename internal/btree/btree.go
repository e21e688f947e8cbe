// Package btree provides an ordered set kept as a B+tree, with rank
// queries and bulk operations that build or thin a tree in linear time.
package btree

import (
	"iter"
	"slices"
)

// Tree is an ordered set kept as a B+tree: the elements sit in the
// leaves, in the order of the tree's comparison, and every internal node
// holds, for each child but the first, the least element that child may
// hold. A walk from an element costs what it yields plus a logarithm, an
// insertion or a deletion a logarithm. Nodes hold between a quarter and
// all of bMax entries, except the root and nodes the rebalancing could
// not fill; a node that empties is removed.
//
// Make a Tree with [New]. It is not safe for concurrent use.
type Tree[T any] struct {
	cmp  func(a, b T) int
	root *bnode[T]
	n    int
}

const (
	bMax = 63       // entries per node at most: with one to spare, a leaf of int32 fills 256 bytes
	bMin = bMax / 4 // entries below which a node is merged or refilled
)

type bnode[T any] struct {
	items []T         // a leaf's elements; an internal node's separators
	kids  []*bnode[T] // nil in a leaf; len(items)+1 children otherwise
	count int         // elements in the subtree
}

// New returns an empty tree ordered by cmp, which returns a negative
// number, zero or a positive number as a is less than, equal to or
// greater than b.
func New[T any](cmp func(a, b T) int) Tree[T] { return Tree[T]{cmp: cmp} }

// recount sets n.count from its entries.
func (n *bnode[T]) recount() {
	if n.leaf() {
		n.count = len(n.items)
		return
	}
	n.count = 0
	for _, k := range n.kids {
		n.count += k.count
	}
}

func (n *bnode[T]) leaf() bool { return n.kids == nil }

// size is the number of entries: elements of a leaf, children otherwise.
func (n *bnode[T]) size() int {
	if n.leaf() {
		return len(n.items)
	}
	return len(n.kids)
}

// Len returns the number of elements.
func (t *Tree[T]) Len() int { return t.n }

// child returns the index of the child of internal node n where x
// belongs: every element of kids[i] is less than items[i], which is not
// greater than any element of kids[i+1].
func (t *Tree[T]) child(n *bnode[T], x T) int {
	lo, hi := 0, len(n.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.cmp(x, n.items[m]) < 0 {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// search returns the index of the first element of leaf n not less than
// x, and whether it equals x.
func (t *Tree[T]) search(n *bnode[T], x T) (int, bool) {
	lo, hi := 0, len(n.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.cmp(n.items[m], x) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(n.items) && t.cmp(n.items[lo], x) == 0
}

// Insert adds x; an element equal to x is replaced.
func (t *Tree[T]) Insert(x T) {
	if t.root == nil {
		t.root = &bnode[T]{items: make([]T, 0, bMax+1)}
	}
	right, sep, split := t.insert(t.root, x, true)
	if split {
		root := newInternal[T]()
		root.items = append(root.items, sep)
		root.kids = append(root.kids, t.root, right)
		root.recount()
		t.root = root
	}
}

// insert adds x under n. When n overflows it splits and returns its new
// right sibling with the separator between them. An element appended to
// the right edge of the tree splits off alone, so that a tree filled in
// ascending order keeps its nodes full.
func (t *Tree[T]) insert(n *bnode[T], x T, rightmost bool) (*bnode[T], T, bool) {
	var zero T
	if n.leaf() {
		i, found := t.search(n, x)
		if found {
			n.items[i] = x
			return nil, zero, false
		}
		n.items = insertAt(n.items, i, x)
		n.count++
		t.n++
		if len(n.items) <= bMax {
			return nil, zero, false
		}
		at := len(n.items) / 2
		if rightmost && i == len(n.items)-1 {
			at = len(n.items) - 1
		}
		right := &bnode[T]{items: make([]T, 0, bMax+1)}
		right.items = append(right.items, n.items[at:]...)
		clear(n.items[at:])
		n.items = n.items[:at]
		n.recount()
		right.recount()
		return right, right.items[0], true
	}
	i := t.child(n, x)
	before := t.n
	kid, sep, split := t.insert(n.kids[i], x, rightmost && i == len(n.kids)-1)
	n.count += t.n - before
	if !split {
		return nil, zero, false
	}
	n.items = insertAt(n.items, i, sep)
	n.kids = insertAt(n.kids, i+1, kid)
	if len(n.kids) <= bMax {
		return nil, zero, false
	}
	at := len(n.kids) / 2
	if rightmost && i+1 == len(n.kids)-1 {
		at = len(n.kids) - 1
	}
	right := newInternal[T]()
	right.kids = append(right.kids, n.kids[at:]...)
	right.items = append(right.items, n.items[at:]...)
	sep = n.items[at-1]
	clear(n.kids[at:])
	clear(n.items[at-1:])
	n.kids, n.items = n.kids[:at], n.items[:at-1]
	n.recount()
	right.recount()
	return right, sep, true
}

// newInternal returns an empty internal node with room for bMax+1
// children, so that it never grows by reallocation.
func newInternal[T any]() *bnode[T] {
	return &bnode[T]{items: make([]T, 0, bMax), kids: make([]*bnode[T], 0, bMax+1)}
}

func insertAt[S ~[]E, E any](s S, i int, x E) S {
	var zero E
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = x
	return s
}

func removeAt[S ~[]E, E any](s S, i int) S {
	copy(s[i:], s[i+1:])
	var zero E
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// Delete removes the element equal to x, if any, and reports whether it
// was there.
func (t *Tree[T]) Delete(x T) bool {
	if t.root == nil || !t.delete(t.root, x) {
		return false
	}
	t.n--
	switch {
	case t.n == 0:
		t.root = nil
	case !t.root.leaf() && len(t.root.kids) == 1:
		t.root = t.root.kids[0]
	}
	return true
}

func (t *Tree[T]) delete(n *bnode[T], x T) bool {
	if n.leaf() {
		i, found := t.search(n, x)
		if found {
			n.items = removeAt(n.items, i)
			n.count--
		}
		return found
	}
	i := t.child(n, x)
	if !t.delete(n.kids[i], x) {
		return false
	}
	n.count--
	if n.kids[i].size() < bMin {
		t.rebalance(n, i)
	}
	return true
}

// rebalance merges the underfull child i of n with a sibling, or moves
// entries from the sibling into it when both do not fit in one node. An
// empty leaf is dropped.
func (t *Tree[T]) rebalance(n *bnode[T], i int) {
	if n.kids[i].size() == 0 {
		n.kids = removeAt(n.kids, i)
		if len(n.items) > 0 {
			n.items = removeAt(n.items, max(i-1, 0))
		}
		return
	}
	l := i - 1 // merge child l+1 into child l
	if l < 0 {
		l = 0
	}
	if l+1 >= len(n.kids) {
		return // an only child: the caller collapses the root
	}
	a, b := n.kids[l], n.kids[l+1]
	if a.size()+b.size() <= bMax {
		if a.leaf() {
			a.items = append(a.items, b.items...)
		} else {
			a.items = append(append(a.items, n.items[l]), b.items...)
			a.kids = append(a.kids, b.kids...)
		}
		a.count += b.count
		n.kids = removeAt(n.kids, l+1)
		n.items = removeAt(n.items, l)
		return
	}
	// Even the two out.
	if a.leaf() {
		all := append(append(make([]T, 0, len(a.items)+len(b.items)), a.items...), b.items...)
		h := len(all) / 2
		a.items = append(a.items[:0], all[:h]...)
		b.items = append(b.items[:0], all[h:]...)
		n.items[l] = b.items[0]
		a.recount()
		b.recount()
		return
	}
	items := append(append(append(make([]T, 0, len(a.items)+len(b.items)+1), a.items...), n.items[l]), b.items...)
	kids := append(append(make([]*bnode[T], 0, len(a.kids)+len(b.kids)), a.kids...), b.kids...)
	h := len(kids) / 2
	a.kids = append(a.kids[:0], kids[:h]...)
	b.kids = append(b.kids[:0], kids[h:]...)
	a.items = append(a.items[:0], items[:h-1]...)
	n.items[l] = items[h-1]
	b.items = append(b.items[:0], items[h:]...)
	a.recount()
	b.recount()
}

// Select returns the element of rank k: the k-th least, from 0.
func (t *Tree[T]) Select(k int) (T, bool) {
	var zero T
	if k < 0 || k >= t.n {
		return zero, false
	}
	n := t.root
	for !n.leaf() {
		for _, kid := range n.kids {
			if k < kid.count {
				n = kid
				break
			}
			k -= kid.count
		}
	}
	return n.items[k], true
}

// Min returns the least element.
func (t *Tree[T]) Min() (T, bool) {
	var zero T
	if t.root == nil {
		return zero, false
	}
	n := t.root
	for !n.leaf() {
		n = n.kids[0]
	}
	return n.items[0], true
}

// Max returns the greatest element.
func (t *Tree[T]) Max() (T, bool) {
	var zero T
	if t.root == nil {
		return zero, false
	}
	n := t.root
	for !n.leaf() {
		n = n.kids[len(n.kids)-1]
	}
	return n.items[len(n.items)-1], true
}

// After returns the least element greater than x.
func (t *Tree[T]) After(x T) (T, bool) {
	var zero T
	if t.root == nil {
		return zero, false
	}
	return t.after(t.root, x)
}

func (t *Tree[T]) after(n *bnode[T], x T) (T, bool) {
	if n.leaf() {
		i, found := t.search(n, x)
		if found {
			i++
		}
		if i < len(n.items) {
			return n.items[i], true
		}
		var zero T
		return zero, false
	}
	i := t.child(n, x)
	if y, ok := t.after(n.kids[i], x); ok {
		return y, true
	}
	if i+1 < len(n.kids) {
		m := n.kids[i+1]
		for !m.leaf() {
			m = m.kids[0]
		}
		return m.items[0], true
	}
	var zero T
	return zero, false
}

// Before returns the greatest element less than x.
func (t *Tree[T]) Before(x T) (T, bool) {
	var zero T
	if t.root == nil {
		return zero, false
	}
	return t.before(t.root, x)
}

func (t *Tree[T]) before(n *bnode[T], x T) (T, bool) {
	if n.leaf() {
		i, _ := t.search(n, x)
		if i > 0 {
			return n.items[i-1], true
		}
		var zero T
		return zero, false
	}
	i := t.child(n, x)
	if y, ok := t.before(n.kids[i], x); ok {
		return y, true
	}
	if i > 0 {
		m := n.kids[i-1]
		for !m.leaf() {
			m = m.kids[len(m.kids)-1]
		}
		return m.items[len(m.items)-1], true
	}
	var zero T
	return zero, false
}

// Fill replaces the elements with xs, which must be in order and
// distinct and must not be the tree's own storage, building the tree
// bottom-up in time linear in len(xs): full nodes as ascending insertions
// leave them, the entries of each level spread evenly over its nodes so
// that none holds fewer than half.
func (t *Tree[T]) Fill(xs []T) { t.FillSeq(len(xs), slices.Values(xs)) }

// FillSeq is Fill for the n elements xs yields, which must not read the
// tree. It builds the new tree in the nodes of the one it replaces, as
// far as they go, so that an index built again leaves no garbage behind
// but its surplus nodes.
func (t *Tree[T]) FillSeq(n int, xs iter.Seq[T]) {
	var spare nodes[T]
	spare.collect(t.root)
	t.root, t.n = nil, n
	if n == 0 {
		return
	}
	k := (n + bMax - 1) / bMax
	level := make([]*bnode[T], 0, k)
	lows := make([]T, 0, k) // the least element under each node
	// The leaves spare nodes do not provide, and their room, in two
	// allocations: a leaf never holds more than bMax+1 elements, so none
	// writes past its own.
	var fresh []bnode[T]
	var room []T
	if short := k - len(spare.leaves); short > 0 {
		fresh = make([]bnode[T], short)
		room = make([]T, short*(bMax+1))
	}
	for lo, hi := range spread(n) {
		var leaf *bnode[T]
		if i := len(level); i < len(spare.leaves) {
			leaf = spare.leaves[i]
			leaf.items = leaf.items[:hi-lo]
		} else {
			leaf = &fresh[i-len(spare.leaves)]
			at := (i - len(spare.leaves)) * (bMax + 1)
			leaf.items = room[at : at+hi-lo : at+bMax+1]
		}
		leaf.count = hi - lo
		level = append(level, leaf)
	}
	// Copy the elements in, leaf by leaf.
	i, j := 0, 0
	for x := range xs {
		leaf := level[i]
		if j == 0 {
			lows = append(lows, x)
		}
		leaf.items[j] = x
		if j++; j == len(leaf.items) {
			i, j = i+1, 0
		}
	}
	t.root = spare.build(level, lows)
}

// build returns the root of a tree over the nodes of one level, in order,
// whose least elements are lows: it builds the levels above bottom-up, in
// the spare internal nodes first.
func (s *nodes[T]) build(level []*bnode[T], lows []T) *bnode[T] {
	for len(level) > 1 {
		up, upLows := level[:0:0], lows[:0:0]
		for lo, hi := range spread(len(level)) {
			m := s.internal()
			m.kids = append(m.kids, level[lo:hi]...)
			m.items = append(m.items, lows[lo+1:hi]...)
			m.recount()
			up = append(up, m)
			upLows = append(upLows, lows[lo])
		}
		level, lows = up, upLows
	}
	return level[0]
}

// nodes holds the nodes of a tree being replaced, for its successor.
type nodes[T any] struct {
	leaves, inner []*bnode[T]
}

// collect takes the nodes of the tree under n: the leaves in order, with
// their elements cleared and room for bMax+1, and the internal nodes
// emptied.
func (s *nodes[T]) collect(n *bnode[T]) {
	if n == nil {
		return
	}
	if n.leaf() {
		if cap(n.items) >= bMax+1 {
			n.items = n.items[:cap(n.items)]
			clear(n.items)
			n.items = n.items[:0]
			s.leaves = append(s.leaves, n)
		}
		return
	}
	for _, k := range n.kids {
		s.collect(k)
	}
	if cap(n.items) >= bMax && cap(n.kids) >= bMax+1 {
		clear(n.items[:cap(n.items)])
		clear(n.kids[:cap(n.kids)])
		n.items, n.kids = n.items[:0], n.kids[:0]
		s.inner = append(s.inner, n)
	}
}

// internal returns a spare internal node, or a new one when none is
// left.
func (s *nodes[T]) internal() *bnode[T] {
	if k := len(s.inner); k > 0 {
		n := s.inner[k-1]
		s.inner = s.inner[:k-1]
		return n
	}
	return newInternal[T]()
}

// spread yields the bounds of the fewest runs of at most bMax entries
// that n entries divide into, as even as can be.
func spread(n int) func(yield func(lo, hi int) bool) {
	return func(yield func(lo, hi int) bool) {
		k := (n + bMax - 1) / bMax
		for i := range k {
			if !yield(i*n/k, (i+1)*n/k) {
				return
			}
		}
	}
}

// Each calls f on the elements in order.
func (t *Tree[T]) Each(f func(x T)) {
	var walk func(n *bnode[T])
	walk = func(n *bnode[T]) {
		if n.leaf() {
			for _, x := range n.items {
				f(x)
			}
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	if t.root != nil {
		walk(t.root)
	}
}

// leaves returns the leaves in order.
func (t *Tree[T]) leaves() []*bnode[T] {
	var out []*bnode[T]
	var walk func(n *bnode[T])
	walk = func(n *bnode[T]) {
		if n.leaf() {
			out = append(out, n)
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	if t.root != nil {
		walk(t.root)
	}
	return out
}

// DeleteWhere removes the elements gone reports, in one walk over the
// leaves that keeps each leaf's elements in place: a leaf left less than
// half full merges with the next or takes from it, one left empty goes,
// and the levels above are built again from the leaves, in the internal
// nodes they had, so that the tree is shaped as Fill shapes one. It takes
// time in proportion to the elements, not to those removed, and
// allocates only lists of nodes.
func (t *Tree[T]) DeleteWhere(gone func(x T) bool) {
	if t.root == nil {
		return
	}
	leaves := t.leaves()
	removed := 0
	for _, l := range leaves {
		k := 0
		for _, x := range l.items {
			if !gone(x) {
				l.items[k] = x
				k++
			}
		}
		removed += len(l.items) - k
		clear(l.items[k:])
		l.items = l.items[:k]
	}
	if removed == 0 {
		return
	}
	t.n -= removed
	// The internal nodes, for the levels built again.
	var spare nodes[T]
	var inner func(n *bnode[T])
	inner = func(n *bnode[T]) {
		if n.leaf() {
			return
		}
		for _, k := range n.kids {
			inner(k)
		}
		if cap(n.items) >= bMax && cap(n.kids) >= bMax+1 {
			clear(n.items[:cap(n.items)])
			clear(n.kids[:cap(n.kids)])
			n.items, n.kids = n.items[:0], n.kids[:0]
			spare.inner = append(spare.inner, n)
		}
	}
	inner(t.root)
	t.root = nil
	if t.n == 0 {
		return
	}
	// Every leaf but the last is at least half full: a leaf short of it
	// merges with the next when both fit in one, or takes from it, which
	// then keeps more than half.
	w := 0
	for _, l := range leaves {
		if len(l.items) == 0 {
			continue
		}
		if w > 0 {
			prev := leaves[w-1]
			if len(prev.items)+len(l.items) <= bMax {
				prev.items = append(prev.items, l.items...)
				prev.count = len(prev.items)
				continue
			}
			if short := bMax/2 - len(prev.items); short > 0 {
				prev.items = append(prev.items, l.items[:short]...)
				prev.count = len(prev.items)
				rest := copy(l.items, l.items[short:])
				clear(l.items[rest:])
				l.items = l.items[:rest]
			}
		}
		l.count = len(l.items)
		leaves[w] = l
		w++
	}
	leaves = leaves[:w]
	if last := leaves[w-1]; w > 1 && len(last.items) < bMax/2 {
		// The last takes from the one before: the two did not fit in
		// one, so each keeps more than half.
		prev := leaves[w-2]
		move := (len(prev.items)+len(last.items))/2 - len(last.items)
		last.items = append(last.items, prev.items[len(prev.items)-move:]...)
		copy(last.items[move:], last.items[:len(last.items)-move])
		copy(last.items, prev.items[len(prev.items)-move:])
		clear(prev.items[len(prev.items)-move:])
		prev.items = prev.items[:len(prev.items)-move]
		prev.count, last.count = len(prev.items), len(last.items)
	}
	lows := make([]T, w)
	for i, l := range leaves {
		lows[i] = l.items[0]
	}
	t.root = spare.build(leaves, lows)
}

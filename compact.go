package pruneguard

import (
	"iter"
	"slices"

	"github.com/pruneguard/pruneguard/internal/arena"
)

// reclaim compacts the records once the messages gone outnumber those
// held, and the slab once its garbage outweighs its live bytes, so that a
// long session's memory follows what it holds, not what it ever held.
// Both take time in proportion to what is held, paid for by what left
// since the last time. Only Apply calls it: every other outstanding
// decision is stale by then.
func (c *Context) reclaim() {
	if compacts(c.dead, c.live) {
		c.compact()
	}
	if c.text.Garbage() {
		c.ledger.rehome()
		c.compactText()
	}
}

// compacts reports whether records of dead messages beside live ones
// call for a compaction: once the dead outnumber the live, and are not
// too few to be worth it (compactMin).
func compacts(dead, live int) bool { return dead > live && dead >= compactMin }

// compactMin is the fewest dead records worth a compaction (a variable so
// that tests can compact small Contexts).
var compactMin = arena.Chunk / 4

// callLive reports whether call k is still named: its caller or its
// result is held.
func (c *Context) callLive(k int32) bool {
	r := c.call(k)
	return r.caller != none && c.msg(r.caller).flags&mDead == 0 || r.result != none && c.msg(r.result).flags&mDead == 0
}

// compact rewrites the arenas without the records of messages, calls and
// units gone, renumbers every link, and rebuilds the indexes. Messages
// and calls keep their order, so their records move down in place and
// the indexes are renumbered or filled from the orders they had, with
// neither an id hashed nor a key sorted; units move down in place too
// when the list of units is in the order of their records, as it is
// unless a merge or a unit that lost its first message reordered it.
// Each step takes time in proportion to the records, live and dead, or
// to an index of them.
func (c *Context) compact() {
	pm, held := c.messagePlaces()
	cm, orphans := c.compactCalls(pm)
	// Messages, moved down in place.
	for p := int32(0); p < c.msgs.Len(); p++ {
		if q := pm[p]; q != none && q != p {
			*c.msg(q) = *c.msg(p)
		}
	}
	c.msgs.Truncate(held)
	um := c.compactUnits(pm)
	nres, nwhole := c.relink(pm, cm, um)
	c.dead = 0
	c.compactions++
	c.renumberRefs(pm, cm)

	// The indexes, renumbered rather than built again where they can be:
	// the renumbering keeps the transcript order.
	if c.byID.Renumber(pm, c.live) != c.live {
		c.byID.Reset(c.live) // not every message was filed: file them
		for p := int32(0); p < c.msgs.Len(); p++ {
			c.byID.Put(p)
		}
	}
	for _, k := range orphans {
		cm[k] = none // cm serves no other index from here on
	}
	c.byCall.Renumber(cm, int(c.calls.Len()))
	c.refile(pm, nres, nwhole)
	c.mem.compacted(c, pm, um)
}

// remapped returns m[i], or none for none.
func remapped(m []int32, i int32) int32 {
	if i == none {
		return none
	}
	return m[i]
}

// messagePlaces returns where each message held goes in a compaction,
// in transcript order (none for those gone), and how many are held.
func (c *Context) messagePlaces() (pm []int32, held int32) {
	pm = make([]int32, c.msgs.Len())
	readEnd := int32(0)
	for p := int32(0); p < c.msgs.Len(); p++ {
		pm[p] = none
		if c.msg(p).flags&mDead == 0 {
			pm[p] = held
			held++
		}
		if p+1 == c.readEnd {
			readEnd = held
		}
	}
	c.readEnd = readEnd // what the model read: the messages held before it
	return pm, held
}

// compactCalls moves the calls down in place, in the order they were
// made, keeping those a message still names (see callLive) by pm, the
// new places of the messages. It returns where each call went (none for
// those gone), and the calls kept whose caller is gone: they leave the
// index by call id, as remove takes them out when it unindexes.
func (c *Context) compactCalls(pm []int32) (cm, orphans []int32) {
	// Until the marks have moved, cm maps a call gone k to -2-rank, where
	// rank is the number of calls kept before it; its last entry stands
	// for the end, after every call.
	cm = make([]int32, c.calls.Len()+1)
	var kept int32
	for k := int32(0); k < c.calls.Len(); k++ {
		cm[k] = -2 - kept
		r := c.call(k)
		callerGone := r.caller != none && pm[r.caller] == none
		if r.caller != none && !callerGone || r.result != none && pm[r.result] != none {
			if callerGone {
				orphans = append(orphans, k)
			}
			cm[k] = kept
			if kept != k {
				*c.call(kept) = *r
			}
			kept++
		}
	}
	cm[c.calls.Len()] = -2 - kept
	c.remapScopes(cm)
	cm = cm[:c.calls.Len()]
	for k, v := range cm {
		if v < 0 {
			cm[k] = none
		}
	}
	c.calls.Truncate(kept)
	return cm, orphans
}

// compactUnits renumbers the units in the order of the list, their
// members by pm, and returns where each went (none for those gone).
// They move down in place when the list runs in the order of their
// records, each to a place no later than its own and past those of the
// units before it; they are copied into a new arena otherwise.
func (c *Context) compactUnits(pm []int32) []int32 {
	um := make([]int32, c.units.Len())
	for i := range um {
		um[i] = none
	}
	count := 0
	ordered := true
	for u, last := c.firstUnit(), none; u != none; u = c.unit(u).next {
		ordered = ordered && u > last
		last = u
		count++
	}
	units := &c.units
	if !ordered {
		units = new(arena.Arena[urec])
		units.Reserve(count)
	}
	prev := none
	for u, v := c.firstUnit(), int32(0); u != none; v++ {
		next := c.unit(u).next
		if ordered {
			if v != u {
				*units.At(v) = *c.unit(u)
			}
		} else {
			*units.At(units.Push()) = *c.unit(u)
		}
		um[u] = v
		n := units.At(v)
		n.prev, n.next = prev, none
		if prev != none {
			units.At(prev).next = v
		}
		prev = v
		u = next
	}
	if ordered {
		c.units.Truncate(int32(count))
	} else {
		c.units = *units
	}
	c.uhead, c.utail = none, prev
	if c.units.Len() > 0 {
		c.uhead = 0
	}
	for i := int32(0); i < c.units.Len(); i++ {
		n := c.units.At(i)
		n.head, n.tail = pm[n.head], pm[n.tail]
	}
	return um
}

// relink renumbers the links between messages, calls, units and tools
// after a compaction, and returns how many results the messages held
// include, and how many of them are not stubbed.
func (c *Context) relink(pm, cm, um []int32) (nres, nwhole int) {
	for p := int32(0); p < c.msgs.Len(); p++ {
		x := c.msgs.At(p)
		x.unit = um[x.unit]
		x.nextM = remapped(pm, x.nextM)
		x.call = remapped(cm, x.call)
		x.ans = remapped(cm, x.ans)
		if x.ans != none {
			nres++
			if x.flags&mStubbed == 0 {
				nwhole++
			}
		}
	}
	for i := range c.tools {
		t := &c.tools[i]
		t.head, t.tail = none, none
		for j, p := range t.reqBy {
			t.reqBy[j] = pm[p]
		}
		for j, e := range t.window {
			if e != 0 {
				t.window[j] = cm[e-1] + 1 // zero when the call is gone
			}
		}
	}
	for k := int32(0); k < c.calls.Len(); k++ {
		r := c.calls.At(k)
		r.caller = remapped(pm, r.caller)
		r.result = remapped(pm, r.result)
		r.sib = remapped(cm, r.sib)
		r.nextAns = remapped(cm, r.nextAns)
		r.nextTool = none
		if r.caller == none {
			continue // named by its result only: out of its tool's calls
		}
		t := &c.tools[r.tool]
		if t.tail == none {
			t.head = k
		} else {
			c.calls.At(t.tail).nextTool = k
		}
		t.tail = k
	}
	return nres, nwhole
}

// renumberRefs renumbers what refers to messages and calls beside the
// records: the messages streaming, the calls pending, the steps'
// references and the large messages; merges are forgotten.
func (c *Context) renumberRefs(pm, cm []int32) {
	for i, p := range c.open {
		c.open[i] = pm[p]
	}
	for i, p := range c.pins {
		c.pins[i] = pm[p]
	}
	for i, k := range c.pend {
		c.pend[i] = cm[k]
	}
	for _, s := range c.steps {
		refs := s.refs[:0]
		for _, p := range s.refs {
			if q := pm[p]; q != none {
				refs = append(refs, q)
			}
		}
		s.refs = refs
	}
	if len(c.large) > 0 {
		large := make(map[int32]struct{}, len(c.large))
		for p := range c.large {
			large[pm[p]] = struct{}{}
		}
		c.large = large
	}
	c.into = nil
}

// compactText copies the live bytes into fresh chunks and drops the old.
func (c *Context) compactText() {
	var s arena.Slab
	for p := int32(0); p < c.msgs.Len(); p++ {
		if x := c.msg(p); x.flags&mDead == 0 {
			x.text = s.Add(c.text.Bytes(x.text))
		}
	}
	for k := int32(0); k < c.calls.Len(); k++ {
		if c.callLive(k) {
			r := c.call(k)
			r.text = s.Add(c.text.Bytes(r.text))
		}
	}
	c.text = s
}

// refile builds the indexes of results anew after a compaction that
// renumbered the messages by pm, in time linear in the results: those
// by position from the transcript order, and those by size from the
// order of the old index, which the renumbering keeps. A result the old
// index did not hold under its count now (one refused a stub) is sorted
// in apart and merged. The messages held include nres results, nwhole
// of them not stubbed; each index is built in the nodes of the one it
// replaces.
func (c *Context) refile(pm []int32, nres, nwhole int) {
	c.results.FillSeq(nres, c.resultsHeld(0))
	c.whole.FillSeq(nwhole, c.resultsHeld(mStubbed))

	filed := arena.NewSet(c.msgs.Len())
	sized := make([]sizeKey, 0, nwhole)
	c.bySize.Each(func(k sizeKey) {
		q := pm[k.pos]
		if q == none || filed.Has(q) {
			return
		}
		if x := c.msg(q); x.ans != none && x.flags&mStubbed == 0 && x.tokens == k.tokens {
			filed.Add(q)
			sized = append(sized, sizeKey{k.tokens, q})
		}
	})
	if len(sized) < nwhole {
		var rest []sizeKey
		for p := range c.resultsHeld(mStubbed) {
			if !filed.Has(p) {
				rest = append(rest, c.sizeKey(p))
			}
		}
		slices.SortFunc(rest, bySizeOrder)
		sized = mergeSorted(sized, rest, bySizeOrder)
	}
	c.bySize.Fill(sized)
}

// resultsHeld yields the results in transcript order, less those with
// any of the flags skip, after a compaction: every message is held.
func (c *Context) resultsHeld(skip uint8) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for p := int32(0); p < c.msgs.Len(); p++ {
			if x := c.msg(p); x.ans != none && x.flags&skip == 0 && !yield(p) {
				return
			}
		}
	}
}

// mergeSorted merges the sorted slices a and b.
func mergeSorted[T any](a, b []T, cmp func(x, y T) int) []T {
	out := make([]T, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if cmp(a[0], b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

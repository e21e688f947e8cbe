package pruneguard

import (
	"slices"

	"github.com/pruneguard/pruneguard/internal/arena"
)

// Apply carries out a decision of [Context.Prune] atomically: it removes
// the evicted messages, stubs the results, records withdrawn, compressed
// and tombstoned schemas, and, with Config.PointerTokens set, counts the
// pointer lines the evictions add. It refuses with a [*StaleError],
// changing nothing, when events since Prune invalidated the decision: a
// unit it names changed (a chunk, a result, a coupling, a pin, a spill, a
// new step reference), the tool registry or the task plan changed, calls
// to a tool whose schema it changes arrived, arguments or a requiring
// message came to stand behind a missing schema (see [Context.Unsound]),
// or, in the strict mode, the Context left the commit boundary. It asks
// the [Resolver] again about every pointer the decision relies on (a
// message that may go only because it was spilled) and refuses, naming
// those messages in [StaleError.Messages], when one no longer resolves. A
// decision whose stubs, pointer lines, schemas or tombstones no longer
// fit beside what arrived since Prune (the total would pass the largest
// int) is refused with [ErrTokenOverflow], changing nothing. A
// decision can be applied once, to the Context that made it.
//
// Apply also reclaims the memory of messages gone, at the latest at the
// Apply after the one that removed them. An Apply that does so takes time
// in proportion to what the Context holds; amortized, that is a constant
// per message removed, and a Context pruned once and dropped never pays
// it.
func (c *Context) Apply(d *Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if d == nil || d.c != c || d.applied {
		return inputErr("apply", "", ErrForeignDecision)
	}
	if err := c.staleness(d); err != nil {
		return err
	}
	if !d.fits(c) {
		// What arrived since Prune leaves no room for what it adds.
		return inputErr("apply", "", ErrTokenOverflow)
	}
	rebuild, waits := c.prunes(d)
	c.applySchemas(d)
	c.applyTools(d)
	d.applied = true
	c.epoch++
	c.mem.applies++ // an Apply changes nothing a remembered refusal rests on
	c.shape++
	if waits {
		return nil // the compaction waits for the next Apply
	}
	if rebuild {
		c.compact()
	}
	c.reclaim()
	return nil
}

// staleness returns the [*StaleError] that refuses decision d, or nil when
// nothing since Prune invalidated it.
func (c *Context) staleness(d *Decision) error {
	if d.strict && (c.nPending > 0 || len(c.open) > 0) && !d.Empty() {
		return &StaleError{Reason: "the context is no longer at a commit boundary"}
	}
	const changedContext = "tools, steps or earlier decisions changed the context"
	if d.compactions != c.compactions {
		return &StaleError{Reason: changedContext}
	}
	if changed, stale := c.changedUnits(d); stale {
		return &StaleError{Units: changed, Reason: "units changed since the decision"}
	}
	if d.epoch != c.epoch {
		return &StaleError{Reason: changedContext}
	}
	if d.argsChanged() {
		return &StaleError{Reason: "calls to a tool whose schema the decision withdraws arrived since the decision"}
	}
	if d.soundGen != c.unsoundGen {
		return &StaleError{Reason: "arguments or messages came to stand behind a missing schema since the decision"}
	}
	return c.lostPointers(d)
}

// changedUnits reports whether a unit d names changed since Prune, with
// the ids of those still held: a unit merged into another is named by
// the one that holds its messages now.
func (c *Context) changedUnits(d *Decision) (changed []UnitID, stale bool) {
	for _, s := range d.stamps {
		if u := c.unit(s.unit); u.head == none || u.version != s.ver {
			stale = true
			v := s.unit
			for {
				next, ok := c.into[v]
				if !ok {
					break
				}
				v = next
			}
			if c.unit(v).head != none {
				if id := c.unitID(v); !slices.Contains(changed, id) {
					changed = append(changed, id)
				}
			}
		}
	}
	return changed, stale
}

// prunes removes the messages d evicts and stubs the results it stubs,
// queueing what they answered for the ledger. It reports whether a
// compaction follows, and whether it waits for the next Apply.
//
// A decision that leaves more records dead than live is followed by a
// compaction, which rebuilds the indexes by id and of results from the
// messages held: its messages need not leave them one by one. When the
// records dead before it did not call for one, the compaction waits for
// the next Apply: its messages leave the indexes of results together, in
// a walk over each, and stay in the hash indexes, which read a message or
// call gone as no id (see heldID), until the compaction. A Context pruned
// once and dropped, such as the view of one request body, never compacts.
// One that evicts a large share of the messages takes them out of the
// indexes together, in a pass over each.
func (c *Context) prunes(d *Decision) (rebuild, waits bool) {
	rebuild = compacts(c.dead+len(d.evict), c.live-len(d.evict))
	waits = rebuild && !compacts(c.dead, c.live)
	batch := waits || !rebuild && len(d.evict)*batchShare >= c.live
	// The hash indexes find an id by its bytes, which a message or call
	// removed may release: they leave one by one within remove, or in a
	// pass that reads no id.
	hashPass := !rebuild && batch && len(d.evict)*hashShare >= c.live
	c.reserveLedger(d.evict, d.stubs)
	before := none // the unit before a summary's run
	if d.Summary != nil {
		before = c.unit(c.msg(d.evict[0]).unit).prev
	}
	for i, p := range d.evict {
		for k := range c.answersOf(p) {
			c.queueForgot(k, d, i)
		}
		c.forgetServer(p, d, i)
		if ptr, ok := c.lineAdds(p); ok && d.Summary == nil {
			c.addLine(ptr)
		}
		// A summary takes the record of its run's first message, which
		// must leave the index by id now: it holds another id after.
		c.remove(p, i == 0 && d.Summary != nil || !rebuild && !hashPass, !rebuild && !batch)
	}
	if batch {
		c.unindex(d.evict, hashPass)
	}
	if d.Summary != nil {
		c.placeSummary(d, before)
	}
	for i, p := range d.stubs {
		for k := range c.answersOf(p) {
			c.queueForgot(k, d, len(d.evict)+i)
		}
		c.forgetServer(p, d, len(d.evict)+i)
		c.stub(p)
	}
	return rebuild, waits
}

// applySchemas records the schemas d withdraws, compresses or brings
// back from a tombstone.
func (c *Context) applySchemas(d *Decision) {
	tomb := make(map[string]bool, len(d.Tombstones))
	for _, t := range d.Tombstones {
		tomb[t.Tool] = true
	}
	for _, name := range d.DropSchemas {
		r := c.toolRec(name)
		r.resident, r.compressed = false, nil
		r.tombstoned = tomb[name]
	}
	for _, cs := range d.Compress {
		r := c.toolRec(cs.Tool)
		r.compressed = slices.Clone(cs.Schema)
		r.tombstoned = tomb[cs.Tool]
	}
	for _, name := range d.Retire {
		c.toolRec(name).tombstoned = false
	}
}

// stub replaces the content of result p with the stub.
func (c *Context) stub(p int32) {
	c.unrequire(p)
	c.whole.Delete(p)
	c.bySize.Delete(c.sizeKey(p))
	x := c.msg(p)
	text, _ := c.cfg.stub()
	n := c.stubTokens(p)
	if x.flags&mOpen != 0 {
		// A stream stubbed mid-flight (only without the boundary gate)
		// goes on writing after the stub.
		c.side(p).buf = slices.Clone(text)
	} else {
		x.text = c.text.Truncate(x.text, x.idLen)
	}
	delta := n - c.tokensOf(p)
	c.setTokens(p, n)
	x = c.msg(p)
	x.flags = x.flags&^mEmpty | mStubbed
	c.touch(x.unit)
	c.tokens += delta
	c.trackLarge(p)
}

// batchShare is the share of the messages held, one in batchShare, from
// which a decision's evictions leave the indexes of results together: a
// walk that builds such an index again costs about what deleting one in
// batchShare of its entries one by one does. Passing over the slots of
// the hash indexes costs more, about removing one in hashShare of the
// ids one by one.
// Variables so that tests can choose the paths.
var batchShare, hashShare = 16, 6

// unindex takes the messages at positions gone, removed without being
// taken out of the indexes of results, out of them, in a walk over each;
// with ids, it takes them and the calls they emitted out of the indexes
// by id and by call id too, in a pass over each.
func (c *Context) unindex(gone []int32, ids bool) {
	msgs := arena.NewSet(c.msgs.Len())
	for _, p := range gone {
		msgs.Add(p)
	}
	if ids {
		calls := arena.NewSet(c.calls.Len())
		for _, p := range gone {
			for k := range c.callsOf(p) {
				calls.Add(k)
			}
		}
		c.byID.RemoveSet(msgs)
		c.byCall.RemoveSet(calls)
	}
	dead := func(p int32) bool { return msgs.Has(p) }
	c.results.DeleteWhere(dead)
	c.whole.DeleteWhere(dead)
	c.bySize.DeleteWhere(func(k sizeKey) bool { return msgs.Has(k.pos) })
}

// remove takes message p out of the transcript and its unit, with ids
// out of the indexes by id and by call id, and with results out of the
// indexes of results; without, a compaction or unindex must follow before
// they are read again.
func (c *Context) remove(p int32, ids, results bool) {
	c.unrequire(p)
	c.mem.left(c, p)
	x := c.msg(p)
	if ids {
		c.byID.Remove(p)
	}
	if results {
		if x.ans != none {
			c.results.Delete(p)
			if x.flags&mStubbed == 0 {
				c.whole.Delete(p)
				c.bySize.Delete(c.sizeKey(p))
			}
		}
	}
	if x.flags&mLarge != 0 {
		delete(c.large, p)
	}
	c.tokens -= c.tokensOf(p)

	u := x.unit
	un := c.unit(u)
	if x.flags&mPinned != 0 {
		un.pinned--
		c.unpin(p)
	}
	if x.flags&mOpen != 0 {
		un.open--
		c.open = slices.DeleteFunc(c.open, func(q int32) bool { return q == p })
	}
	for k := range c.callsOf(p) {
		c.unpend(k)
		r := c.call(k)
		if ids {
			// Only if the id is still k's: a later call may reuse it. A
			// compaction drops the calls of messages gone itself.
			c.byCall.Remove(k)
		}
		c.queueGone(k, r.flags&cAbandon != 0)
		if r.flags&cArgsMade != 0 {
			r.flags &^= cArgsMade
			c.tools[r.tool].args--
			c.recheck(r.tool)
		}
		if r.result == none || c.msg(r.result).flags&mDead != 0 {
			c.text.Release(r.text)
		}
	}
	for k := range c.answersOf(p) {
		r := c.call(k)
		if r.result == p {
			r.result = none
		}
		if r.caller == none || c.msg(r.caller).flags&mDead != 0 {
			c.text.Release(r.text)
		}
	}

	// Out of its unit's members.
	prev := none
	for q := un.head; q != p; q = c.msg(q).nextM {
		prev = q
	}
	if prev == none {
		un.head = x.nextM
	} else {
		c.msg(prev).nextM = x.nextM
	}
	if un.tail == p {
		un.tail = prev
	}
	c.touch(u)
	switch {
	case un.head == none:
		c.unlinkUnit(u)
	case prev == none:
		// Its first message left the unit (only without the boundary
		// gate): the unit moves to its place among the others.
		c.resortUnit(u)
	}

	c.text.Release(x.text)
	c.freeSideOf(p)
	x = c.msg(p)
	x.flags |= mDead
	x.nextM = none
	c.live--
	c.dead++
}

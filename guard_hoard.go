package pruneguard

import "slices"

// HoardMode says what a [Guard] does with hoarded messages: large
// reconstructible messages (at least Config.HoardTokens) that stay in
// the prompt. Pruning a message that is both reconstructible and large is
// mandatory: keeping it crowds out the working set as surely as evicting
// irreducible content corrupts the task. The zero HoardMode is
// HoardReport.
//
// The Context keeps the messages that may be hoarded in an index: closed
// messages of at least Config.HoardTokens, neither stubbed nor pinned,
// that were [Reconstructible] when last judged. It judges a message when
// it is appended, closed, grows, is pinned, marked or stubbed, and judges
// every message again when [Context.RegisterTool] changes how results
// already in it are classed (a tool's output class, read-only hint or
// scope). The report and the hoarding rule cost time in proportion to
// that index, not to the Context: text a person or the model wrote
// (irreducible by default, see Config.TextClass) and the results of
// mutating or open-world tools never enter it. Both classify each indexed
// message again and pass over what is no longer reconstructible (a read
// a later mutating call made stale). A message whose class turns
// reconstructible with none of those events (an [Oracle] that changes
// its answer) is not reported until one of them happens.
type HoardMode uint8

const (
	// HoardReport only reports hoarding, in [Decision.Hoarded].
	HoardReport HoardMode = iota
	// HoardStub stubs hoarded tool results at every check, under budget
	// too; hoarded messages that are not tool results stay.
	HoardStub
	// HoardEvict evicts the units of hoarded messages at every check,
	// under budget too, when the gates let the whole unit go.
	HoardEvict
)

// String returns the name of the mode.
func (m HoardMode) String() string {
	switch m {
	case HoardReport:
		return "report"
	case HoardStub:
		return "stub"
	case HoardEvict:
		return "evict"
	}
	return "hoard(?)"
}

// hoardKeep is the number of the newest units the hoarding rule spares.
func (g *Guard) hoardKeep() int {
	if g.HoardKeep <= 0 {
		return 1
	}
	return g.HoardKeep
}

// hoardIDs lists the hoarded messages the hoarding rule would act on now,
// leaving alone the newest HoardKeep units and what the policy keeps. It
// costs time in proportion to the messages the Context tracks as possibly
// hoarded (see trackLarge), not to the Context.
func (r *guardRun) hoardIDs() []MessageID {
	r.v.arm()
	bound, _ := r.kept()
	return r.c.hoardedNow(r.g.Hoard == HoardStub, r.g.hoardKeep(), bound)
}

// hoard acts on the hoarded messages ids: a plan that stubs them or
// evicts their units, through the gates like any other.
func (r *guardRun) hoard(ids []MessageID) error {
	var p Plan
	if r.g.Hoard == HoardStub {
		p.Stub = ids
	} else {
		p.Evict = ids
	}
	p, h := r.filter(p, planHint{})
	_, err := r.try(p, h, fromHoard)
	return err
}

// spareHead returns the first message of the oldest of the newest keep
// units: the hoarding rule spares every unit whose first message comes
// at or after it (units are linked in the order of their first message).
func (c *Context) spareHead(keep int) int32 {
	u := c.utail
	for i := 1; i < keep && u != none; i++ {
		u = c.unit(u).prev
	}
	if u == none {
		return 0 // no more than keep units: all are spared
	}
	return c.unit(u).head
}

// mayHoard reports whether the hoarding rule may act on tracked message
// p: reconstructible, closed, not stubbed, in a unit neither pinned, in
// flight nor unread, named by no planned step, not remembered as refused,
// in a unit whose first message comes before spare and that ends before
// bound (none for no bound). With stub set, only a tool result not
// refused a stub.
func (c *Context) mayHoard(p int32, stub bool, spare, bound int32) bool {
	x := c.msg(p)
	un := c.unit(x.unit)
	switch {
	case x.flags&(mOpen|mPinned|mStubbed|mDead) != 0, un.pending > 0, un.open > 0, un.pinned > 0, c.refs(p) > 0:
		return false
	case un.head >= spare, bound != none && un.tail >= bound, c.unread(x.unit):
		return false
	case stub && (x.ans == none || c.mem.stubRefused(p)):
		return false
	case !stub && c.mem.refused(c, x.unit) != nil:
		return false
	}
	return c.classify(p) == Reconstructible
}

// hoarding reports whether the hoarding rule may find anything to act on
// (before the policy says what it keeps), without allocating: the quick
// path of an under-budget check.
func (c *Context) hoarding(stub bool, keep int) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.large) == 0 {
		return false
	}
	spare := c.spareHead(keep)
	for p := range c.large {
		if c.mayHoard(p, stub, spare, none) {
			return true
		}
	}
	return false
}

// hoardedNow lists, in transcript order, the hoarded messages the
// hoarding rule may act on (see mayHoard), outside the newest keep units
// and before bound.
func (c *Context) hoardedNow(stub bool, keep int, bound MessageID) []MessageID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.large) == 0 {
		return nil
	}
	spare := c.spareHead(keep)
	b := none
	if bound != "" {
		if q, ok := c.find(bound); ok {
			b = q
		}
	}
	var ps []int32
	for p := range c.large {
		if c.mayHoard(p, stub, spare, b) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	slices.Sort(ps)
	ids := make([]MessageID, len(ps))
	for i, p := range ps {
		ids[i] = c.id(p)
	}
	return ids
}

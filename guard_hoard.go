package pruneguard

import "slices"

// HoardMode says what a [Guard] does with hoarded messages: large
// reconstructible messages (at least Config.HoardTokens) that stay in
// the prompt. Pruning a message that is both reconstructible and large is
// mandatory: keeping it crowds out the working set as surely as evicting
// irreducible content corrupts the task. The zero HoardMode is
// HoardReport.
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

// hoard acts on the hoarded messages: a plan that stubs them or evicts
// their units, through the gates like any other. It leaves alone the
// newest HoardKeep units and what the policy keeps. It costs time in
// proportion to the messages the Context tracks as possibly hoarded
// (those of at least Config.HoardTokens), not to the Context.
func (r *guardRun) hoard() error {
	keep := r.g.HoardKeep
	if keep <= 0 {
		keep = 1
	}
	r.v.arm()
	bound, _ := r.kept()
	ids := r.c.hoardedNow(r.g.Hoard == HoardStub, keep, bound)
	if len(ids) == 0 {
		return nil
	}
	var p Plan
	if r.g.Hoard == HoardStub {
		p.Stub = ids
	} else {
		p.Evict = ids
	}
	_, err := r.try(r.filter(p), fromHoard)
	return err
}

// hoardedNow lists, in transcript order, the hoarded messages the
// hoarding rule may act on: reconstructible, closed, in a unit neither
// pinned nor in flight, named by no planned step, not remembered as
// refused, outside the newest keep units and before bound. With stub
// set, only tool results not yet stubbed.
func (c *Context) hoardedNow(stub bool, keep int, bound MessageID) []MessageID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.large) == 0 {
		return nil
	}
	spare := make([]int32, 0, min(keep, 8))
	for u := c.utail; u != none && len(spare) < keep; u = c.unit(u).prev {
		spare = append(spare, u)
	}
	b := none
	if bound != "" {
		if q, ok := c.find(bound); ok {
			b = q
		}
	}
	var ps []int32
	for p := range c.large {
		x := c.msg(p)
		un := c.unit(x.unit)
		switch {
		case x.flags&(mOpen|mPinned|mStubbed|mDead) != 0, un.pending > 0, un.open > 0, un.pinned > 0, c.refs(p) > 0:
			continue
		case stub && (x.ans == none || c.mem.stubRefused(p)):
			continue
		case !stub && c.mem.refused(c, x.unit) != nil:
			continue
		case slices.Contains(spare, x.unit), b != none && un.tail >= b:
			continue
		}
		if c.classify(p) == Reconstructible {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	ids := make([]MessageID, len(ps))
	for i, p := range ps {
		ids[i] = c.id(p)
	}
	return ids
}

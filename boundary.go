package pruneguard

// BoundaryMode chooses how the commit-boundary gate reads "no in-flight
// operation references the prune set".
type BoundaryMode uint8

const (
	// BoundaryStrict, the default, defers every prune while any call is
	// pending or any message is streaming anywhere in the Context.
	BoundaryStrict BoundaryMode = iota
	// BoundaryRelaxed prunes closed units while other units are in flight:
	// only units holding a pending call or a streaming message are held
	// back. A call's pending result can only land in its own unit, so no
	// in-flight operation references a closed unit.
	BoundaryRelaxed
)

// SplitMode says what to do with a plan that names part of a unit, or a
// unit the boundary gate holds back.
type SplitMode uint8

const (
	// SplitGrow, the default, prunes the whole unit of any message the plan
	// names. Units that may not go (pinned; in flight, in relaxed mode) are
	// left out and reported in [Decision.Refused].
	SplitGrow SplitMode = iota
	// SplitShrink leaves out every unit the plan does not name entirely,
	// and reports it in [Decision.Refused].
	SplitShrink
	// SplitStrict refuses the plan with an [ErrBoundary] violation when it
	// names part of a unit or a unit that may not go.
	SplitStrict
)

type gateMask uint8

const (
	disableBoundary gateMask = 1 << iota
	disableSchema
	disableRegen
)

// boundaryGate closes the plan's eviction set under unit membership and
// holds back what the commit boundary forbids. It fills d.evict with the
// units that may go and d.stubs with the stub targets, and returns the
// violations (in SplitStrict) or a deferral.
func (c *Context) boundaryGate(p Plan, d *Decision) ([]*Violation, *DeferredError) {
	if c.disabled&disableBoundary != 0 {
		// Unguarded: evict exactly what the plan names.
		for _, id := range p.Evict {
			x := c.byID[id]
			if !d.inEvict(x) {
				d.markEvict(x)
				d.evict = append(d.evict, x)
			}
		}
		for _, id := range p.Stub {
			x := c.byID[id]
			if !d.inEvict(x) && !d.stubbed(x) {
				d.markStub(x)
			}
		}
		return nil, nil
	}
	if c.cfg.Boundary == BoundaryStrict && (c.nPending > 0 || len(c.open) > 0) {
		return nil, &DeferredError{Pending: c.pendingIDs(), Open: c.openIDs()}
	}

	var vs []*Violation
	inFlight := 0
	refuse := func(v *Violation) {
		if p.Split == SplitStrict {
			vs = append(vs, v)
			return
		}
		if v.Code == CodeOpen || v.Code == CodePending {
			inFlight++
		}
		d.Refused = append(d.Refused, v)
	}

	// Count how many members of each unit the plan names; then take the
	// units in the order they are first named.
	for _, id := range p.Evict {
		x := c.byID[id]
		if x.planMark == d.gen {
			continue
		}
		x.planMark = d.gen
		u := x.unit
		if u.namedMark != d.gen {
			u.namedMark, u.named = d.gen, 0
		}
		u.named++
	}
	done := d.gen | 1<<62
	for _, id := range p.Evict {
		u := c.byID[id].unit
		if u.namedMark == done {
			continue
		}
		u.namedMark = done
		if v := c.heldBack(u); v != nil {
			for _, x := range u.members {
				if x.planMark == d.gen {
					v.Messages = append(v.Messages, x.m.ID) // the members named
				}
			}
			refuse(v)
			continue
		}
		if u.named < len(u.members) && p.Split != SplitGrow {
			v := &Violation{Gate: GateBoundary, Code: CodeSplit, Units: []UnitID{u.id()}, pos: u.members[0].seq}
			for _, x := range u.members {
				if x.planMark != d.gen {
					v.Messages = append(v.Messages, x.m.ID) // the members left out
				}
			}
			refuse(v)
			continue
		}
		for _, x := range u.members {
			d.markEvict(x)
			d.evict = append(d.evict, x)
		}
	}

	for _, id := range p.Stub {
		x := c.byID[id]
		if d.inEvict(x) || d.stubbed(x) {
			continue
		}
		if v := c.heldBack(x.unit); v != nil {
			v.Messages = []MessageID{x.m.ID}
			v.pos = x.seq
			refuse(v)
			continue
		}
		d.markStub(x)
	}

	if len(vs) == 0 && inFlight > 0 && inFlight == len(d.Refused) && len(d.evict) == 0 && len(d.stubs) == 0 {
		// Everything the plan named is in flight: the relaxed reading
		// defers as the strict one would.
		de := &DeferredError{}
		for _, v := range d.Refused {
			de.Units = append(de.Units, v.Units...)
		}
		return nil, de
	}
	return vs, nil
}

// heldBack reports why unit u may not be pruned or stubbed now, or nil.
func (c *Context) heldBack(u *unit) *Violation {
	if u.open == 0 && u.pending == 0 && u.pinned == 0 {
		return nil
	}
	v := &Violation{Gate: GateBoundary, Units: []UnitID{u.id()}, pos: u.members[0].seq}
	switch {
	case u.open > 0:
		v.Code = CodeOpen
	case u.pending > 0:
		v.Code = CodePending
		for _, x := range u.members {
			for _, r := range x.calls {
				if !r.done {
					v.Calls = append(v.Calls, r.id)
				}
			}
		}
	case u.pinned > 0:
		v.Code = CodePinned
	default:
		return nil
	}
	return v
}

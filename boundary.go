package pruneguard

// BoundaryMode chooses how the commit-boundary gate reads "no in-flight
// operation references the prune set". In both modes a unit holding a
// message the model has not read yet (one after the model's last message;
// see [Context.Unread]) is held back like a unit in flight
// ([CodeUnread]), without deferring the rest: a result goes only once a
// request has shown it to the model.
//
// The zero BoundaryMode is BoundaryStrict.
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
//
// The zero SplitMode is SplitGrow.
type SplitMode uint8

const (
	// SplitGrow, the default, prunes the whole unit of any message the plan
	// names. Units that may not go (pinned; unread; in flight, in relaxed
	// mode) are left out and reported in [Decision.Refused].
	SplitGrow SplitMode = iota
	// SplitShrink leaves out every unit the plan does not name entirely,
	// and reports it in [Decision.Refused].
	SplitShrink
	// SplitStrict refuses the plan with an [ErrBoundary] violation when it
	// names part of a unit or a unit that may not go.
	SplitStrict
)

// boundaryGate closes the closing set under unit membership and holds
// back what the commit boundary forbids. In the strict mode it defers the
// prune while anything is in flight. Each unit the plan names goes whole,
// is left out, or refuses the plan, as the split mode and the unit's state
// say; a named stub in a unit held back is left out too.
func (r *pruneRun) boundaryGate() {
	c := r.c
	r.whole = true
	r.d.strict = c.cfg.Boundary == BoundaryStrict
	if r.d.strict && (c.nPending > 0 || len(c.open) > 0) {
		r.deferred = &DeferredError{Pending: c.pendingIDs(), Open: c.openIDs()}
		return
	}
	var t boundaryTally
	r.closeUnits(&t)
	stubsStay := r.boundaryStubs(&t)
	if len(r.violations) == 0 && t.inFlight > 0 && t.inFlight == t.held && len(r.evict) == 0 && !stubsStay {
		// Everything the plan named is in flight: the relaxed reading
		// defers as the strict one would.
		de := &DeferredError{}
		for _, v := range r.refused {
			de.Units = append(de.Units, v.Units...)
		}
		r.deferred = de
	}
}

// boundaryTally counts what the boundary gate left out of a plan, and
// of that what is in flight.
type boundaryTally struct{ held, inFlight int }

// refuse objects to v under SplitStrict, or leaves its messages out of
// the plan and counts them.
func (r *pruneRun) refuse(t *boundaryTally, v *Violation) {
	if r.p.Split == SplitStrict {
		r.object(v)
		return
	}
	if v.Code == CodeOpen || v.Code == CodePending {
		t.inFlight++
	}
	t.held++
	r.leaveOut(v)
}

// closeUnits makes the closing set of the units the plan names, in the
// order they are first named: a unit held back or named in part (unless
// the split mode grows it) is refused.
func (r *pruneRun) closeUnits(t *boundaryTally) {
	c, p := r.c, r.p
	named := r.evict
	if p.Split != SplitGrow {
		// Count the named members of each unit, to ask whether a unit is
		// named whole.
		count := r.pass()
		for _, q := range named {
			u := c.unit(c.msg(q).unit)
			if u.mark != count {
				u.mark, u.aux = count, 0
			}
			u.aux++
		}
	}
	r.evict = make([]int32, 0, len(named))
	done := r.pass()
	for _, q := range named {
		u := c.msg(q).unit
		un := c.unit(u)
		if un.mark == done {
			continue
		}
		un.mark = done
		if v := c.heldBack(u); v != nil {
			for m := range c.members(u) {
				if r.has(m, kEvict) {
					v.Messages = append(v.Messages, c.id(m)) // the members named
					r.unset(m, kEvict)
				}
			}
			r.refuse(t, v)
			continue
		}
		if p.Split != SplitGrow && int(un.aux) < c.unitSize(u) {
			r.refuse(t, r.splitViolation(u))
			continue
		}
		for m := range c.members(u) {
			r.set(m, kEvict)
			r.evict = append(r.evict, m)
		}
	}
}

// splitViolation is the violation of a plan naming unit u in part: it
// names the members left out, and takes the named ones out of the plan.
func (r *pruneRun) splitViolation(u int32) *Violation {
	c := r.c
	v := &Violation{Gate: GateBoundary, Code: CodeSplit, Units: []UnitID{c.unitID(u)}, pos: uint64(c.unit(u).head)}
	for m := range c.members(u) {
		if r.has(m, kEvict) {
			r.unset(m, kEvict)
		} else {
			v.Messages = append(v.Messages, c.id(m)) // the members left out
		}
	}
	return v
}

// boundaryStubs refuses the stubs of results whose unit is held back,
// and reports whether any stub stays.
func (r *pruneRun) boundaryStubs(t *boundaryTally) bool {
	c := r.c
	stays := false
	for i, q := range r.stubAt {
		if r.has(q, kEvict|kHeld) {
			continue
		}
		if v := c.heldBack(c.msg(q).unit); v != nil {
			v.Messages = []MessageID{r.p.Stub[i]}
			v.pos = uint64(q)
			r.set(q, kHeld)
			r.refuse(t, v)
			continue
		}
		stays = true
	}
	return stays
}

// heldBack reports why unit u may not be pruned or stubbed now, or nil.
func (c *Context) heldBack(u int32) *Violation {
	un := c.unit(u)
	if un.open == 0 && un.pending == 0 && un.pinned == 0 && !c.unread(u) {
		return nil
	}
	v := &Violation{Gate: GateBoundary, Units: []UnitID{c.unitID(u)}, pos: uint64(un.head)}
	switch {
	case un.open > 0:
		v.Code = CodeOpen
	case un.pending > 0:
		v.Code = CodePending
		for m := range c.members(u) {
			for k := range c.callsOf(m) {
				if c.call(k).flags&cDone == 0 {
					v.Calls = append(v.Calls, CallID(c.callID(k)))
				}
			}
		}
	case un.pinned > 0:
		v.Code = CodePinned
	case c.unread(u):
		v.Code = CodeUnread
	default:
		return nil
	}
	return v
}

// modelRole reports whether a message of role r is the model's own: an
// assistant message or a reasoning item.
func modelRole(r Role) bool { return r == RoleAssistant || r == RoleReasoning }

// isModels reports whether message p is the model's own: of a model role,
// or emitting calls and answering none (only the model calls tools). The
// model read everything before it.
func (c *Context) isModels(p int32) bool {
	x := c.msg(p)
	return modelRole(c.role(p)) || x.call != none && x.ans == none
}

// unreadHeld describes the units held back only because they hold a
// message the model has not read, less those in met, in the order of
// their first unread message, each naming its unread messages. It costs
// time in proportion to the messages since the model's last one.
func (c *Context) unreadHeld(met map[UnitID]bool) []*Violation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Violation
	var at map[int32]*Violation
	for p := c.readEnd; p < c.msgs.Len(); p++ {
		x := c.msg(p)
		if x.flags&mDead != 0 {
			continue
		}
		v, ok := at[x.unit]
		if !ok {
			if v = c.heldBack(x.unit); v == nil || v.Code != CodeUnread || met[v.Units[0]] {
				v = nil
			} else {
				out = append(out, v)
			}
			if at == nil {
				at = make(map[int32]*Violation)
			}
			at[x.unit] = v
		}
		if v != nil {
			v.Messages = append(v.Messages, c.id(p))
		}
	}
	return out
}

// readTo records that the model read everything before message p, if it
// is the model's.
func (c *Context) readTo(p int32) {
	if p >= c.readEnd && c.isModels(p) {
		c.readEnd = p + 1
	}
}

// unread reports whether unit u holds a message the model has not read
// yet: one at or after Context.readEnd, the place after the model's last
// message. Such a unit is as much in flight as one waiting for a result:
// nothing of it may be evicted, stubbed, spilled or hoarded until the
// model's next message follows it. It takes constant time.
func (c *Context) unread(u int32) bool { return c.unit(u).tail >= c.readEnd }

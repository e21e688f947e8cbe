package pruneguard

// The furthest safe prune: when the policy can make no more room, the
// guard evicts whole units, oldest first, that may safely go.

// Keeper is implemented by a [Policy] that keeps the newest messages out
// of its proposals, as [OldestFirst] with Keep and [KeepLastToolUses] do.
// Kept returns the oldest message it keeps, and false when it keeps none.
// The guard's own prunes (the furthest safe prune and the hoarding rule;
// see [Guard.Check]) never take a unit holding that message or a later
// one. A policy may instead hide what it keeps through its [View], which
// the guard respects for the rest of the check.
//
// A Policy that does not implement Keeper keeps nothing back from the
// guard's own prunes beyond what it hides through its View.
type Keeper interface {
	Kept(v *View) (MessageID, bool)
}

// Kept implements [Keeper]: the oldest of the last Keep messages the View
// shows, or none when Keep is not positive.
func (o OldestFirst) Kept(v *View) (MessageID, bool) {
	if o.Keep <= 0 {
		return "", false
	}
	var id MessageID
	n := 0
	for e := range v.Newest() {
		id = e.ID
		if n++; n == o.Keep {
			break
		}
	}
	return id, n > 0
}

// Kept implements [Keeper]: the oldest of the tool uses kept (the
// oldest tool result when there are no more than Keep).
func (k KeepLastToolUses) Kept(v *View) (MessageID, bool) {
	keep := k.Keep
	if keep <= 0 {
		keep = 3
	}
	if v.c == nil {
		return "", false
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.results.Select(c.results.Len() - keep)
	if !ok {
		p, ok = c.results.Min()
	}
	if !ok {
		return "", false
	}
	return c.id(p), true
}

// reach goes on where the policy stopped: whole units, oldest first,
// that may safely go, until the Context is at the target or no unit is
// left to try.
func (r *guardRun) reach() error {
	for r.rounds > 0 {
		now := r.c.Tokens()
		if now <= r.target {
			return nil
		}
		r.v.arm()
		p := r.safePlan(now - r.target)
		if p.Empty() {
			return nil
		}
		r.rounds--
		learned := r.progress()
		out, err := r.try(p, fromReach)
		if out == tryNothing && r.progress() > learned {
			r.rounds++
		}
		if err != nil {
			return err
		}
		if out == tryDeferred {
			return nil
		}
	}
	return nil
}

// kept returns the oldest message the policy keeps, if it says.
func (r *guardRun) kept() (MessageID, bool) {
	if k, ok := r.pol.(Keeper); ok {
		return k.Kept(r.v)
	}
	return "", false
}

// safePlan proposes whole units, oldest first, until need tokens would
// be freed: units that are neither pinned nor in flight, not hidden
// (refused in this check or an earlier one, or kept by the policy), and
// holding no message the policy keeps.
func (r *guardRun) safePlan(need int) Plan {
	bound, bounded := r.kept()
	var p Plan
	freed := 0
	for u := range r.v.Units() {
		if freed >= need {
			break
		}
		if !prunable(u) || r.noEvict[u.ID] {
			continue
		}
		if bounded {
			keep, after := r.c.keeps(u.ID, bound)
			if after {
				break // this unit and every later one start at or after the bound
			}
			if keep {
				continue
			}
		}
		p.Evict = append(p.Evict, u.Messages...)
		freed += u.Tokens
	}
	return p
}

// keeps reports whether unit id holds message bound or a later one, and
// whether it starts at or after it. A bound the Context no longer holds
// keeps everything.
func (c *Context) keeps(id UnitID, bound MessageID) (keep, after bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, ok := c.find(bound)
	p, ok2 := c.find(MessageID(id))
	if !ok || !ok2 {
		return true, !ok
	}
	un := c.unit(c.msg(p).unit)
	return un.tail >= b, un.head >= b
}

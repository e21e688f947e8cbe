package pruneguard

// The furthest safe prune: when the policy can make no more room, the
// guard evicts whole units, oldest first, that may safely go.

// Keeper is implemented by a [Policy] that keeps the newest messages out
// of its proposals, as [OldestFirst] with Keep and [KeepLastToolUses] do.
// Kept returns the oldest message it keeps, and false when it keeps none.
// The hoarding rule never takes a unit holding that message or a later
// one. The furthest safe prune (see [Guard.Check]) goes oldest first and
// stops at the target, so it reaches those units last, and only when
// nothing older that may safely go brings the Context to the target: what
// a policy prefers to keep never leaves a Context over budget when a safe
// prune would bring it there. A policy that must keep a message whatever
// the budget pins it ([Context.Pin]) or hides its unit through its
// [View], which the guard respects for the rest of the check.
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
// oldest tool result when there are no more than Keep). With Exclude,
// the results of excluded tools are not counted.
func (k KeepLastToolUses) Kept(v *View) (MessageID, bool) {
	keep := k.Keep
	if keep <= 0 {
		keep = 3
	}
	if v.c == nil {
		return "", false
	}
	if len(k.Exclude) > 0 {
		n := 0
		for e := range v.Results() {
			if !k.excluded(e) {
				if n++; n == keep {
					return e.ID, true
				}
			}
		}
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := none, false
	if len(k.Exclude) == 0 {
		p, ok = c.results.Select(c.results.Len() - keep)
	}
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
	for r.rounds > 0 && !r.stop {
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
		out, err := r.try(p, planHint{}, fromReach)
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
// be freed: units neither pinned, in flight nor unread, and not hidden
// (refused in this check or an earlier one, or hidden by the policy).
func (r *guardRun) safePlan(need int) Plan {
	var p Plan
	freed := 0
	for u := range r.v.Units() {
		if freed >= need {
			break
		}
		if !prunable(u) || r.noEvict[u.ID] {
			continue
		}
		p.Evict = append(p.Evict, u.Messages...)
		freed += u.Tokens
	}
	return p
}

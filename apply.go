package pruneguard

import "slices"

// Apply carries out a decision of [Context.Prune] atomically: it removes
// the evicted messages, stubs the results, and records withdrawn,
// compressed and tombstoned schemas. It refuses with a [*StaleError],
// changing nothing, when events since Prune invalidated the decision: a
// unit it names changed (a chunk, a result, a coupling, a pin, a spill, a
// new step reference), the tool registry or the task plan changed, or, in
// the strict mode, the Context left the commit boundary. A decision can
// be applied once, to the Context that made it.
func (c *Context) Apply(d *Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if d == nil || d.c != c || d.applied {
		return inputErr("apply", "", ErrForeignDecision)
	}
	if d.strict && (c.nPending > 0 || len(c.open) > 0) && !d.Empty() {
		return &StaleError{Reason: "the context is no longer at a commit boundary"}
	}
	var changed []UnitID
	stale := false
	for _, s := range d.stamps {
		if s.u.dead || s.u.version != s.ver {
			stale = true
			// A unit merged into another is named by the one that holds
			// its messages now.
			u := s.u
			for u.into != nil {
				u = u.into
			}
			if len(u.members) > 0 && !slices.Contains(changed, u.id()) {
				changed = append(changed, u.id())
			}
		}
	}
	if stale {
		return &StaleError{Units: changed, Reason: "units changed since the decision"}
	}
	if d.epoch != c.epoch {
		return &StaleError{Reason: "tools, steps or earlier decisions changed the context"}
	}
	if d.argsChanged() {
		return &StaleError{Reason: "calls to a tool whose schema the decision withdraws arrived since the decision"}
	}

	for i, x := range d.evict {
		for _, r := range x.results {
			c.forget(r, d.recs[i].class)
		}
		c.remove(x)
	}
	text, n := c.cfg.stub()
	for i, x := range d.stubs {
		for _, r := range x.results {
			c.forget(r, d.recs[len(d.evict)+i].class)
		}
		c.whole.Delete(x)
		c.bySize.Delete(x)
		delta := n - x.m.Tokens
		x.m.Content = slices.Clone(text)
		x.m.Tokens = n
		x.stubbed = true
		x.unit.tokens += delta
		x.unit.version++
		c.tokens += delta
		c.trackLarge(x)
	}
	tomb := make(map[string]bool, len(d.Tombstones))
	for _, t := range d.Tombstones {
		tomb[t.Tool] = true
	}
	for _, name := range d.DropSchemas {
		r := c.tools[name]
		r.resident, r.compressed = false, nil
		r.tombstoned = tomb[name]
	}
	for _, cs := range d.Compress {
		r := c.tools[cs.Tool]
		r.compressed = slices.Clone(cs.Schema)
		r.tombstoned = tomb[cs.Tool]
	}
	for _, name := range d.Retire {
		c.tools[name].tombstoned = false
	}
	d.applied = true
	c.epoch++
	c.shape++
	return nil
}

// remove takes x out of the transcript and its unit.
func (c *Context) remove(x *msg) {
	if x.prev != nil {
		x.prev.next = x.next
	} else {
		c.head = x.next
	}
	if x.next != nil {
		x.next.prev = x.prev
	} else {
		c.tail = x.prev
	}
	x.prev, x.next = nil, nil
	delete(c.byID, x.m.ID)
	if len(x.results) > 0 {
		c.results.Delete(x)
		if !x.stubbed {
			c.whole.Delete(x)
			c.bySize.Delete(x)
		}
	}
	delete(c.large, x)
	c.tokens -= x.m.Tokens

	u := x.unit
	u.members = slices.DeleteFunc(u.members, func(m *msg) bool { return m == x })
	u.tokens -= x.m.Tokens
	if x.m.Pinned {
		u.pinned--
	}
	if x.open {
		u.open--
		delete(c.open, x)
	}
	for _, r := range x.calls {
		if r.pendingN {
			r.pendingN = false
			u.pending--
			c.nPending--
		}
		if c.pending[r.id] == r {
			delete(c.pending, r.id)
		}
		if c.answered[r.id] == r {
			delete(c.answered, r.id)
		}
		c.gone[r.id] = struct{}{}
		if t := c.tools[r.tool]; t != nil {
			t.args--
			delete(t.live, r)
		}
	}
	for _, r := range x.results {
		if r.result == x {
			r.result = nil
		}
	}
	u.version++
	if len(u.members) == 0 {
		u.dead = true
	}
}

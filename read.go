package pruneguard

import "slices"

// Message returns a copy of the message with the given id.
func (c *Context) Message(id MessageID) (Message, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x, ok := c.byID[id]
	if !ok {
		return Message{}, false
	}
	return x.copy(), true
}

func (x *msg) copy() Message {
	m := x.m
	m.Content = slices.Clone(m.Content)
	m.Calls = slices.Clone(m.Calls)
	m.Answers = slices.Clone(m.Answers)
	m.NeededBy = slices.Clone(m.NeededBy)
	return m
}

// Messages returns a copy of the transcript in order.
func (c *Context) Messages() []Message {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Message, 0, len(c.byID))
	for x := c.head; x != nil; x = x.next {
		out = append(out, x.copy())
	}
	return out
}

// Snapshot describes every message in transcript order, for a [Policy].
func (c *Context) Snapshot() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Entry, 0, len(c.byID))
	for x := c.head; x != nil; x = x.next {
		out = append(out, x.entry())
	}
	return out
}

func (x *msg) entry() Entry {
	e := Entry{
		ID:      x.m.ID,
		Role:    x.m.Role,
		Tokens:  x.m.Tokens,
		Unit:    x.unit.id(),
		Calls:   len(x.m.Calls),
		Result:  len(x.results) > 0,
		Pinned:  x.m.Pinned,
		Open:    x.open,
		Pending: x.unit.pending > 0,
		Stubbed: x.stubbed,
	}
	for _, r := range x.calls {
		e.Tools = append(e.Tools, r.tool)
	}
	for _, r := range x.results {
		if !slices.Contains(e.Tools, r.tool) {
			e.Tools = append(e.Tools, r.tool)
		}
	}
	return e
}

// UnitOf describes the unit that holds message id.
func (c *Context) UnitOf(id MessageID) (Unit, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x, ok := c.byID[id]
	if !ok {
		return Unit{}, false
	}
	return x.unit.describe(), true
}

// Units describes every unit in the order of its first message.
func (c *Context) Units() []Unit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Unit
	for x := c.head; x != nil; x = x.next {
		if x.unit.members[0] == x {
			out = append(out, x.unit.describe())
		}
	}
	return out
}

func (u *unit) describe() Unit {
	d := Unit{ID: u.id(), Open: u.open > 0, Pinned: u.pinned > 0, Tokens: u.tokens}
	for _, x := range u.members {
		d.Messages = append(d.Messages, x.m.ID)
		for _, r := range x.calls {
			if !r.done {
				d.Pending = append(d.Pending, r.id)
			}
		}
	}
	return d
}

// Pending returns the ids of calls still waiting for a complete result, in
// the order the calls were made.
func (c *Context) Pending() []CallID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pendingIDs()
}

func (c *Context) pendingIDs() []CallID {
	if c.nPending == 0 {
		return nil
	}
	rs := make([]*callRec, 0, len(c.pending))
	for _, r := range c.pending {
		if !r.done {
			rs = append(rs, r)
		}
	}
	return sortedCallIDs(rs)
}

// sortedCallIDs sorts calls in the order they were made and returns their
// ids.
func sortedCallIDs(rs []*callRec) []CallID {
	slices.SortFunc(rs, func(a, b *callRec) int {
		if d := cmpSeq(a.caller.seq, b.caller.seq); d != 0 {
			return d
		}
		return slices.Index(a.caller.calls, a) - slices.Index(b.caller.calls, b)
	})
	ids := make([]CallID, len(rs))
	for i, r := range rs {
		ids[i] = r.id
	}
	return ids
}

// OpenMessages returns the ids of messages still streaming, in order.
func (c *Context) OpenMessages() []MessageID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.openIDs()
}

func (c *Context) openIDs() []MessageID {
	if len(c.open) == 0 {
		return nil
	}
	xs := make([]*msg, 0, len(c.open))
	for x := range c.open {
		xs = append(xs, x)
	}
	slices.SortFunc(xs, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	ids := make([]MessageID, len(xs))
	for i, x := range xs {
		ids[i] = x.m.ID
	}
	return ids
}

package pruneguard

import (
	"cmp"
	"slices"
	"strings"
)

// Message returns a copy of the message with the given id.
func (c *Context) Message(id MessageID) (Message, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.find(id)
	if !ok {
		return Message{}, false
	}
	return c.copy(p), true
}

// copy rebuilds message p as the caller gave it, with what events since
// changed, in memory of its own.
func (c *Context) copy(p int32) Message {
	x := c.msg(p)
	m := Message{
		ID: c.id(p), Role: c.role(p), Tokens: c.tokensOf(p), Content: slices.Clone(c.content(p)),
		Pinned: x.flags&mPinned != 0, Class: x.class, Facts: x.facts, Pointer: c.pointer(p),
	}
	if len(m.Content) == 0 {
		m.Content = nil
		if x.flags&mEmpty != 0 {
			m.Content = []byte{}
		}
	}
	for k := range c.callsOf(p) {
		m.Calls = append(m.Calls, Call{ID: CallID(c.callID(k)), Tool: c.tools[c.call(k).tool].t.Name, Args: slices.Clone(c.args(k)), Server: c.call(k).flags&cServer != 0})
	}
	for k := range c.answersOf(p) {
		m.Answers = append(m.Answers, CallID(c.callID(k)))
	}
	if s := c.sideOf(p); s != nil {
		m.NeededBy = slices.Clone(s.neededBy)
		for _, t := range s.requires {
			m.Requires = append(m.Requires, c.tools[t].t.Name)
		}
		m.IsError = s.isError
	}
	return m
}

// Messages returns a copy of the transcript in order.
func (c *Context) Messages() []Message {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Message, 0, c.live)
	for p := range c.positions() {
		out = append(out, c.copy(p))
	}
	return out
}

// positions walks the messages the Context holds, in transcript order.
func (c *Context) positions() func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for p := int32(0); p < c.msgs.Len(); p++ {
			if c.msg(p).flags&mDead == 0 && !yield(p) {
				return
			}
		}
	}
}

// Snapshot describes every message in transcript order, for a [Policy].
func (c *Context) Snapshot() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.snapshot(nil, false)
}

// snapshot describes every message whose unit hidden does not hold and,
// for a View, that is not remembered as refused eviction.
func (c *Context) snapshot(hidden map[string]struct{}, view bool) []Entry {
	ps := make([]int32, 0, c.live)
	for p := range c.positions() {
		if (len(hidden) == 0 || !c.hides(hidden, p)) && (!view || c.mem.refused(c, c.msg(p).unit) == nil) {
			ps = append(ps, p)
		}
	}
	ids := c.names(ps)
	out := make([]Entry, len(ps))
	unitIDs := make(map[int32]UnitID)
	for i, p := range ps {
		out[i] = c.entry(p, MessageID(ids[i]))
		u := c.msg(p).unit
		if c.unit(u).head == p {
			unitIDs[u] = UnitID(ids[i])
		}
		uid, ok := unitIDs[u]
		if !ok {
			uid = c.unitID(u)
			unitIDs[u] = uid
		}
		out[i].Unit = uid
	}
	return out
}

// names returns the ids of the messages at ps, in one allocation.
func (c *Context) names(ps []int32) []string {
	all, at := c.joinIDs(ps), 0
	out := make([]string, len(ps))
	for i, p := range ps {
		l := int(c.msg(p).idLen)
		out[i] = all[at : at+l]
		at += l
	}
	return out
}

// joinIDs returns the ids of the messages at each list of positions, end
// to end, in one string.
func (c *Context) joinIDs(lists ...[]int32) string {
	n := 0
	for _, ps := range lists {
		for _, p := range ps {
			n += int(c.msg(p).idLen)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, ps := range lists {
		for _, p := range ps {
			b.Write(c.msgID(p))
		}
	}
	return b.String()
}

// entry describes message p, whose id is id; the caller sets the Unit.
func (c *Context) entry(p int32, id MessageID) Entry {
	x := c.msg(p)
	e := Entry{
		ID:      id,
		Role:    c.role(p),
		Tokens:  c.tokensOf(p),
		Result:  x.ans != none,
		Pinned:  x.flags&mPinned != 0,
		Open:    x.flags&mOpen != 0,
		Pending: c.unit(x.unit).pending > 0,
		Stubbed: x.flags&mStubbed != 0,
		Unread:  c.unread(x.unit),
	}
	for k := range c.callsOf(p) {
		e.Calls++
		e.Tools = append(e.Tools, c.tools[c.call(k).tool].t.Name)
	}
	for k := range c.answersOf(p) {
		if t := c.tools[c.call(k).tool].t.Name; !slices.Contains(e.Tools, t) {
			e.Tools = append(e.Tools, t)
		}
	}
	return e
}

// entryOf describes message p, with its id and its unit's.
func (c *Context) entryOf(p int32) Entry {
	id := c.id(p)
	e := c.entry(p, id)
	if u := c.msg(p).unit; c.unit(u).head == p {
		e.Unit = UnitID(id)
	} else {
		e.Unit = c.unitID(u)
	}
	return e
}

// UnitOf describes the unit that holds message id.
func (c *Context) UnitOf(id MessageID) (Unit, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.find(id)
	if !ok {
		return Unit{}, false
	}
	return c.describe(c.msg(p).unit), true
}

// Units describes every unit in the order of its first message.
func (c *Context) Units() []Unit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Unit
	for u := c.firstUnit(); u != none; u = c.unit(u).next {
		out = append(out, c.describe(u))
	}
	return out
}

func (c *Context) describe(u int32) Unit {
	un := c.unit(u)
	var ps []int32
	for p := range c.members(u) {
		ps = append(ps, p)
	}
	ids := c.names(ps)
	d := Unit{ID: UnitID(ids[0]), Open: un.open > 0, Pinned: un.pinned > 0, Unread: c.unread(u), Messages: make([]MessageID, len(ps))}
	for i, p := range ps {
		d.Messages[i] = MessageID(ids[i])
		d.Tokens += c.tokensOf(p)
		if un.pending > 0 {
			for k := range c.callsOf(p) {
				if c.call(k).flags&cDone == 0 {
					d.Pending = append(d.Pending, CallID(c.callID(k)))
				}
			}
		}
	}
	return d
}

// Unread returns the ids of the messages the model has not read yet, in
// transcript order: those that came after its last message (one of role
// [RoleAssistant] or [RoleReasoning], or one that makes calls; streaming
// or closed), or every message while it has written none. Until a
// message of the model follows them, the gates hold back their units as
// they hold back units in flight ([CodeUnread]): nothing of them is
// evicted, stubbed, spilled by a [Guard] or hoarded. It costs time in
// proportion to the messages since the model's last one.
func (c *Context) Unread() []MessageID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ids []MessageID
	for p := c.readEnd; p < c.msgs.Len(); p++ {
		if c.msg(p).flags&mDead == 0 {
			ids = append(ids, c.id(p))
		}
	}
	return ids
}

// Pending returns the ids of calls still waiting for a complete result, in
// the order the calls were made.
func (c *Context) Pending() []CallID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pendingIDs()
}

// pendingIDs lists the calls waiting for a complete result. It costs time
// in proportion to the units in flight.
func (c *Context) pendingIDs() []CallID {
	if c.nPending == 0 {
		return nil
	}
	var ks []int32
	for k := range c.pendingCalls() {
		ks = append(ks, k)
	}
	return c.sortedCallIDs(ks)
}

// sortedCallIDs sorts calls in the order they were made (by caller, then
// in the caller's order) and returns their ids.
func (c *Context) sortedCallIDs(ks []int32) []CallID {
	slices.SortFunc(ks, func(a, b int32) int {
		if d := cmp.Compare(c.call(a).caller, c.call(b).caller); d != 0 {
			return d
		}
		return cmp.Compare(a, b)
	})
	ids := make([]CallID, len(ks))
	for i, k := range ks {
		ids[i] = CallID(c.callID(k))
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
	ps := slices.Clone(c.open)
	slices.Sort(ps)
	ids := make([]MessageID, len(ps))
	for i, p := range ps {
		ids[i] = c.id(p)
	}
	return ids
}

package pruneguard

import "slices"

// Append adds a complete (closed) message at the end of the transcript.
//
// Calls in m become pending until a closed result names them. Answers in m
// bind m to the unit of each answered call; a message answering calls of
// several units joins those units into one. Append fails, changing
// nothing, on an empty or duplicate ID, a negative token count, an answer
// for a call the Context never saw ([ErrUnknownCall]), a call that was
// pruned ([ErrPrunedCall]) or that already has a result
// ([ErrDuplicateResult]), or a call id that is still pending
// ([ErrDuplicateCall]).
func (c *Context) Append(m Message) error {
	return c.add("append", m, false)
}

// Open adds a message that is still streaming. It stays open, and is
// never pruned, until [Context.Close]. A streaming result keeps its call
// pending until it closes.
func (c *Context) Open(m Message) error {
	return c.add("open", m, true)
}

func (c *Context) add(op string, m Message, open bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err := c.checkNew(op, m); err != nil {
		return err
	}
	// Copy what the caller may reuse.
	m.Content = slices.Clone(m.Content)
	m.Calls = slices.Clone(m.Calls)
	m.Answers = slices.Clone(m.Answers)
	m.NeededBy = slices.Clone(m.NeededBy)

	c.seq++
	x := &msg{m: m, seq: c.seq, open: open}

	// Results first: find the units this message joins.
	var join []*unit
	for _, id := range m.Answers {
		r := c.pending[id]
		r.result = x
		x.results = append(x.results, r)
		if !slices.Contains(join, r.caller.unit) {
			join = append(join, r.caller.unit)
		}
	}
	var u *unit
	if len(join) == 0 {
		u = &unit{}
	} else {
		u = join[0]
		for _, o := range join[1:] {
			u = c.merge(u, o)
		}
	}
	c.link(x, u)

	for _, call := range m.Calls {
		c.addCall(x, call)
	}
	for _, r := range x.results {
		if !open {
			c.complete(r)
		}
	}
	if open {
		u.open++
		c.open[x] = struct{}{}
	}
	for _, sid := range m.NeededBy {
		c.reference(sid, x)
	}
	if len(m.NeededBy) > 0 {
		c.epoch++
	}
	if len(x.results) > 0 {
		c.results.Insert(x)
		c.whole.Insert(x)
		c.bySize.Insert(x)
	}
	c.trackLarge(x)
	return nil
}

// checkNew validates a message before anything changes.
func (c *Context) checkNew(op string, m Message) error {
	if m.ID == "" {
		return inputErr(op, "", ErrEmptyID)
	}
	if _, dup := c.byID[m.ID]; dup {
		return inputErr(op, string(m.ID), ErrDuplicateMessage)
	}
	if m.Tokens < 0 {
		return inputErr(op, string(m.ID), ErrNegativeTokens)
	}
	if slices.Contains(m.NeededBy, "") {
		return inputErr(op, string(m.ID), ErrEmptyID)
	}
	seen := make(map[CallID]bool, len(m.Calls)+len(m.Answers))
	for _, call := range m.Calls {
		if call.ID == "" {
			return inputErr(op, string(m.ID), ErrEmptyID)
		}
		if _, busy := c.pending[call.ID]; busy || seen[call.ID] {
			return inputErr(op, string(call.ID), ErrDuplicateCall)
		}
		seen[call.ID] = true
	}
	ans := make(map[CallID]bool, len(m.Answers))
	for _, id := range m.Answers {
		if ans[id] {
			return inputErr(op, string(id), ErrDuplicateResult)
		}
		ans[id] = true
		if r, ok := c.pending[id]; ok {
			if r.result != nil {
				return inputErr(op, string(id), ErrDuplicateResult)
			}
			continue
		}
		if seen[id] {
			// A message may not answer its own call.
			return inputErr(op, string(id), ErrUnknownCall)
		}
		if _, ok := c.answered[id]; ok {
			return inputErr(op, string(id), ErrDuplicateResult)
		}
		if _, ok := c.gone[id]; ok {
			return inputErr(op, string(id), ErrPrunedCall)
		}
		return inputErr(op, string(id), ErrUnknownCall)
	}
	return nil
}

func (c *Context) addCall(x *msg, call Call) {
	t := c.tool(call.Tool)
	r := &callRec{id: call.ID, tool: call.Tool, caller: x, ver: t.ver, pendingN: true}
	x.calls = append(x.calls, r)
	c.pending[call.ID] = r
	x.unit.pending++
	c.nPending++
	t.args++
	if t.live == nil {
		t.live = make(map[*callRec]struct{})
	}
	t.live[r] = struct{}{}
	if !t.resident || t.tombstoned {
		t.ghostCalls++
	}
	if len(c.cleared) > 0 {
		if k, ok := c.cleared[callSig(call.Tool, call.Args)]; ok {
			t.refetches++
			if k == Irreducible {
				t.irreducibleRefetches++
			}
		}
	}
}

// complete marks a call's result closed.
func (c *Context) complete(r *callRec) {
	r.done = true
	delete(c.pending, r.id)
	c.answered[r.id] = r
	if r.pendingN {
		r.pendingN = false
		r.caller.unit.pending--
		c.nPending--
	}
}

// link appends x to the transcript and to unit u.
func (c *Context) link(x *msg, u *unit) {
	x.prev = c.tail
	if c.tail != nil {
		c.tail.next = x
	} else {
		c.head = x
	}
	c.tail = x
	c.byID[x.m.ID] = x
	x.unit = u
	u.members = append(u.members, x) // x has the highest seq
	u.tokens += x.m.Tokens
	if x.m.Pinned {
		u.pinned++
	}
	u.version++
	c.tokens += x.m.Tokens
}

// merge joins units a and b and returns the survivor. The absorbed unit
// is marked dead so that decisions naming it go stale.
func (c *Context) merge(a, b *unit) *unit {
	if a == b {
		return a
	}
	if len(a.members) < len(b.members) {
		a, b = b, a
	}
	for _, x := range b.members {
		x.unit = a
	}
	a.members = append(a.members, b.members...)
	slices.SortFunc(a.members, func(p, q *msg) int { return cmpSeq(p.seq, q.seq) })
	a.pending += b.pending
	a.open += b.open
	a.pinned += b.pinned
	a.tokens += b.tokens
	a.version++
	c.shape++
	b.dead = true
	b.into = a
	b.members = nil
	return a
}

// Write appends a chunk to an open message and adds tokens to its count.
// It fails with [ErrClosedMessage] if the message is not open and with
// [ErrUnknownMessage] if the Context does not hold it (for example because
// an unguarded prune removed it mid-stream).
func (c *Context) Write(id MessageID, chunk []byte, tokens int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("write", id)
	switch {
	case err != nil:
		return err
	case !x.open:
		return inputErr("write", string(id), ErrClosedMessage)
	case tokens < 0:
		return inputErr("write", string(id), ErrNegativeTokens)
	}
	x.m.Content = append(x.m.Content, chunk...)
	resized := tokens != 0 && len(x.results) > 0 && !x.stubbed
	if resized {
		c.bySize.Delete(x)
	}
	x.m.Tokens += tokens
	if resized {
		c.bySize.Insert(x)
	}
	x.unit.tokens += tokens
	x.unit.version++
	c.tokens += tokens
	c.trackLarge(x)
	return nil
}

// Close ends the stream of an open message. Calls whose ids arrived only
// at the end of the stream may be given here; they become pending like
// the calls of an appended message. Closing a streamed result completes
// the calls it answers.
func (c *Context) Close(id MessageID, calls ...Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("close", id)
	switch {
	case err != nil:
		return err
	case !x.open:
		return inputErr("close", string(id), ErrClosedMessage)
	}
	seen := make(map[CallID]bool, len(calls))
	for _, call := range calls {
		if call.ID == "" {
			return inputErr("close", string(id), ErrEmptyID)
		}
		if _, busy := c.pending[call.ID]; busy || seen[call.ID] || slices.ContainsFunc(x.m.Calls, func(k Call) bool { return k.ID == call.ID }) {
			return inputErr("close", string(call.ID), ErrDuplicateCall)
		}
		seen[call.ID] = true
	}
	for _, call := range calls {
		x.m.Calls = append(x.m.Calls, call)
		c.addCall(x, call)
	}
	x.open = false
	x.unit.open--
	delete(c.open, x)
	for _, r := range x.results {
		c.complete(r)
	}
	x.unit.version++
	return nil
}

// Couple ties messages into one unit, so that they are kept or pruned
// together: a reasoning item with the calls that follow it, a user
// message with the tool results it carries alongside. Units already
// holding any of the messages are merged.
func (c *Context) Couple(ids ...MessageID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	xs := make([]*msg, 0, len(ids))
	for _, id := range ids {
		x, err := c.lookup("couple", id)
		if err != nil {
			return err
		}
		xs = append(xs, x)
	}
	if len(xs) < 2 {
		return nil
	}
	// Read each message's unit when merging it, not before: an id given
	// twice, or two ids of one unit, would otherwise merge a unit already
	// absorbed and count its tokens, pins and pending calls twice.
	u := xs[0].unit
	for _, x := range xs[1:] {
		u = c.merge(u, x.unit)
	}
	return nil
}

// Pin marks a message as never to be pruned (a system prompt, a user's
// one-time instruction). A unit holding a pinned message is never pruned.
func (c *Context) Pin(id MessageID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("pin", id)
	if err != nil {
		return err
	}
	if !x.m.Pinned {
		x.m.Pinned = true
		x.unit.pinned++
		x.unit.version++
	}
	return nil
}

// Spill records that message id's content was written to a durable store
// at p. The message may then be evicted, whatever its class, while the
// configured [Resolver] resolves p (planned-step references still hold
// it). A zero p removes the pointer.
func (c *Context) Spill(id MessageID, p Pointer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("spill", id)
	if err != nil {
		return err
	}
	x.m.Pointer = p
	x.unit.version++
	return nil
}

// Mark adds facts to a message, for example when a later step learns that
// an earlier observation was a negative result.
func (c *Context) Mark(id MessageID, f Facts) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("mark", id)
	if err != nil {
		return err
	}
	x.m.Facts |= f
	x.unit.version++
	return nil
}

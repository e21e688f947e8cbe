package pruneguard

import (
	"slices"
)

// Append adds a complete (closed) message at the end of the transcript.
// With Config.Counter set and m.Tokens 0, the Context counts m's content
// and its calls' arguments.
//
// A message of role [RoleAssistant] or [RoleReasoning], or one that emits
// calls and answers none, is the model's own: the model has read every
// message before it, and the messages after it are unread until its next
// one ([Context.Unread]).
//
// Calls in m become pending until a closed result names them, or until
// [Context.Abandon] gives them up; a [Call.Server] call is answered in m
// itself and never pending. Answers in m bind m to the unit of each
// answered call; a message answering calls of several units joins those
// units into one. Append fails, changing nothing, on an empty or
// duplicate ID (or an empty name in Requires), a negative token count, a
// count that would take [Context.Tokens] past the largest int
// ([ErrTokenOverflow]), an
// answer for a call the Context never saw ([ErrUnknownCall]), a call that
// was pruned ([ErrPrunedCall]; the Context remembers the 4,096 calls
// pruned last, and a result for a call pruned before them is
// [ErrUnknownCall]), that was abandoned ([ErrAbandonedCall], pruned or
// not) or that already has a result ([ErrDuplicateResult]), or a call id
// that is still pending ([ErrDuplicateCall]).
func (c *Context) Append(m Message) error {
	return c.add("append", m, false)
}

// Open adds a message that is still streaming. It stays open, and is
// never pruned, until [Context.Close]. A streaming result keeps its call
// pending until it closes. It fails as Append does, and with
// [ErrOpenMessage] for a message that carries a [Pointer]: what streams
// in later would not be in the store.
func (c *Context) Open(m Message) error {
	return c.add("open", m, true)
}

func (c *Context) add(op string, m Message, open bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.settleLedger() // what decisions queued is written before the session moves on
	if err := c.checkNew(op, m); err != nil {
		return err
	}
	if open && !m.Pointer.IsZero() {
		// Content still streaming is not what a store could hold.
		return inputErr(op, string(m.ID), ErrOpenMessage)
	}
	tokens, ok := c.tokensFor(m)
	if !ok || !c.fits(tokens) {
		return inputErr(op, string(m.ID), ErrTokenOverflow)
	}
	p := c.record(m, open, tokens)
	u := c.joinUnits(p, m.Answers)
	c.link(p, u)
	c.addCalls(p, m.Calls)
	c.readTo(p)
	c.require(p, m.Requires)
	if !open {
		for k := range c.answersOf(p) {
			c.complete(k)
		}
		c.answered(p)
	} else {
		c.unit(u).open++
		c.open = append(c.open, p)
	}
	for _, sid := range m.NeededBy {
		c.reference(sid, p)
	}
	if len(m.NeededBy) > 0 {
		c.epoch++
	}
	if c.isResult(p) {
		c.results.Insert(p)
		c.whole.Insert(p)
		c.bySize.Insert(c.sizeKey(p))
	}
	c.trackLarge(p)
	return nil
}

// record adds the record of message m, checked, with its content, pin,
// role and fields, and returns its position: the message is held and
// found by its id, in no unit yet.
func (c *Context) record(m Message, open bool, tokens int) int32 {
	p := c.msgs.Push()
	x := c.msg(p)
	*x = mrec{idLen: uint32(len(m.ID)), unit: none, nextM: none, call: none, ans: none, class: m.Class, facts: m.Facts}
	if open {
		x.text = c.text.Add([]byte(m.ID))
		x.flags |= mOpen
		c.side(p).buf = slices.Clone(m.Content)
	} else {
		x.text = c.text.Add([]byte(m.ID), m.Content)
	}
	if m.Content != nil && len(m.Content) == 0 {
		c.msg(p).flags |= mEmpty
	}
	if m.Pinned {
		c.pin(p)
	}
	if r := c.internRole(m.Role); r == roleSide {
		c.side(p).role = m.Role
		c.msg(p).role = roleSide
	} else {
		c.msg(p).role = r
	}
	c.setTokens(p, tokens)
	if open && m.Tokens == 0 && c.cfg.Counter != nil {
		c.side(p).counted = true
	}
	if m.IsError {
		c.side(p).isError = true
	}
	if !m.Pointer.IsZero() {
		c.side(p).pointer = m.Pointer
	}
	if m.NeededBy != nil {
		c.side(p).neededBy = slices.Clone(m.NeededBy)
	}
	c.live++
	c.byID.Put(p)
	return p
}

// joinUnits binds the calls message p answers to it and returns the unit
// it joins: the units of those calls, merged into one, or a new one.
func (c *Context) joinUnits(p int32, answers []CallID) int32 {
	var join []int32
	last := none
	for _, id := range answers {
		k, _ := c.byCall.Find(string(id))
		r := c.call(k)
		r.result = p
		if last == none {
			c.msg(p).ans = k
		} else {
			c.call(last).nextAns = k
		}
		last = k
		if u := c.msg(r.caller).unit; !slices.Contains(join, u) {
			join = append(join, u)
		}
	}
	if len(join) == 0 {
		return c.newUnit()
	}
	u := join[0]
	for _, o := range join[1:] {
		u = c.merge(u, o)
	}
	return u
}

// checkNew validates a message before anything changes.
func (c *Context) checkNew(op string, m Message) error {
	if m.ID == "" {
		return inputErr(op, "", ErrEmptyID)
	}
	if _, dup := c.find(m.ID); dup {
		return inputErr(op, string(m.ID), ErrDuplicateMessage)
	}
	if m.Tokens < 0 {
		return inputErr(op, string(m.ID), ErrNegativeTokens)
	}
	if slices.Contains(m.NeededBy, "") || slices.Contains(m.Requires, "") {
		return inputErr(op, string(m.ID), ErrEmptyID)
	}
	// Duplicates are searched for in short lists, kept in maps for long.
	var calls, answers map[CallID]bool
	if len(m.Calls) > 16 {
		calls = make(map[CallID]bool, len(m.Calls))
	}
	if len(m.Answers) > 16 {
		answers = make(map[CallID]bool, len(m.Answers))
	}
	calledBefore := func(i int, id CallID) bool {
		if calls != nil {
			return calls[id]
		}
		return slices.ContainsFunc(m.Calls[:i], func(k Call) bool { return k.ID == id })
	}
	for i, call := range m.Calls {
		if call.ID == "" {
			return inputErr(op, string(m.ID), ErrEmptyID)
		}
		if c.busy(call.ID) || calledBefore(i, call.ID) {
			return inputErr(op, string(call.ID), ErrDuplicateCall)
		}
		if calls != nil {
			calls[call.ID] = true
		}
	}
	for i, id := range m.Answers {
		if answers != nil && answers[id] || answers == nil && slices.Contains(m.Answers[:i], id) {
			return inputErr(op, string(id), ErrDuplicateResult)
		}
		if answers != nil {
			answers[id] = true
		}
		k, ok := c.byCall.Find(string(id))
		if ok && c.call(k).flags&cDone == 0 {
			if c.call(k).result != none {
				return inputErr(op, string(id), ErrDuplicateResult)
			}
			continue
		}
		if calledBefore(len(m.Calls), id) {
			// A message may not answer its own call.
			return inputErr(op, string(id), ErrUnknownCall)
		}
		if ok && c.call(k).flags&cAbandon != 0 {
			return inputErr(op, string(id), ErrAbandonedCall)
		}
		if ok {
			return inputErr(op, string(id), ErrDuplicateResult)
		}
		if abandoned, ok := c.goneGet(id); ok {
			if abandoned {
				return inputErr(op, string(id), ErrAbandonedCall)
			}
			return inputErr(op, string(id), ErrPrunedCall)
		}
		return inputErr(op, string(id), ErrUnknownCall)
	}
	return nil
}

// busy reports whether a call with id waits for its result.
func (c *Context) busy(id CallID) bool {
	k, ok := c.byCall.Find(string(id))
	return ok && c.call(k).flags&cDone == 0
}

// addCalls records the calls message p emits, after those it has.
func (c *Context) addCalls(p int32, calls []Call) {
	last := none
	for k := range c.callsOf(p) {
		last = k
	}
	for _, call := range calls {
		k := c.addCall(p, call)
		if last == none {
			c.msg(p).call = k
		} else {
			c.call(last).sib = k
		}
		last = k
	}
}

func (c *Context) addCall(p int32, call Call) int32 {
	t := c.tool(call.Tool)
	k := c.calls.Push()
	r := c.call(k)
	*r = crec{
		text: c.text.Add([]byte(call.ID), call.Args), idLen: uint32(len(call.ID)),
		tool: t, caller: p, result: none, sib: none, nextAns: none, nextTool: none,
		ver: c.tools[t].ver, flags: cPending | cArgsMade,
	}
	if call.Server {
		// Answered in its own message: never pending, no argument
		// residency.
		r.flags = cDone | cServer
	}
	if call.Args == nil {
		r.flags |= cArgsNil
	}
	if old, ok := c.byCall.Find(string(call.ID)); ok {
		c.byCall.Remove(old)
	}
	c.byCall.Put(k)
	tr := &c.tools[t]
	if !call.Server {
		c.unit(c.msg(p).unit).pending++
		c.nPending++
		c.pend = append(c.pend, k)
		tr.args++
	}
	c.called(t, k)
	if tr.tail == none {
		tr.head = k
	} else {
		c.call(tr.tail).nextTool = k
	}
	tr.tail = k
	ghost := tr.notShown() || tr.tombstoned
	if ghost {
		tr.ghostCalls++
		r.flags |= cGhost
	}
	c.recheck(t)
	c.observeCall(k, ghost)
	return k
}

// complete marks call k's result closed.
func (c *Context) complete(k int32) {
	c.call(k).flags |= cDone
	c.unpend(k)
}

// Write appends a chunk to an open message and adds tokens to its count;
// with Config.Counter set, a chunk written with 0 tokens is counted.
// It fails with [ErrClosedMessage] if the message is not open, with
// [ErrUnknownMessage] if the Context does not hold it (for example because
// an unguarded prune removed it mid-stream), and with [ErrTokenOverflow]
// if the tokens would take [Context.Tokens] past the largest int; it
// then writes nothing.
func (c *Context) Write(id MessageID, chunk []byte, tokens int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p, err := c.lookup("write", id)
	switch {
	case err != nil:
		return err
	case c.msg(p).flags&mOpen == 0:
		return inputErr("write", string(id), ErrClosedMessage)
	case tokens < 0:
		return inputErr("write", string(id), ErrNegativeTokens)
	}
	if tokens == 0 {
		tokens = c.count(chunk)
	}
	if !c.fits(tokens) {
		return inputErr("write", string(id), ErrTokenOverflow)
	}
	s := c.side(p)
	s.buf = append(s.buf, chunk...)
	if tokens != 0 {
		sized := c.isResult(p) && c.msg(p).flags&mStubbed == 0
		if sized {
			c.bySize.Delete(c.sizeKey(p))
		}
		c.setTokens(p, c.tokensOf(p)+tokens)
		if sized {
			c.bySize.Insert(c.sizeKey(p))
		}
	}
	c.touch(c.msg(p).unit)
	c.tokens += tokens
	c.trackLarge(p)
	return nil
}

// Close ends the stream of an open message. Calls whose ids arrived only
// at the end of the stream may be given here; they become pending like
// the calls of an appended message. Closing a streamed result completes
// the calls it answers. It fails, changing nothing, as Write does, and
// on a call id that is empty or pending; calls counted by
// Config.Counter (the message was opened with Tokens 0) that would take
// [Context.Tokens] past the largest int are [ErrTokenOverflow].
func (c *Context) Close(id MessageID, calls ...Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p, err := c.lookup("close", id)
	switch {
	case err != nil:
		return err
	case c.msg(p).flags&mOpen == 0:
		return inputErr("close", string(id), ErrClosedMessage)
	}
	for i, call := range calls {
		if call.ID == "" {
			return inputErr("close", string(id), ErrEmptyID)
		}
		own := false
		for k := range c.callsOf(p) {
			own = own || string(c.callID(k)) == string(call.ID)
		}
		if own || c.busy(call.ID) || slices.ContainsFunc(calls[:i], func(k Call) bool { return k.ID == call.ID }) {
			return inputErr("close", string(call.ID), ErrDuplicateCall)
		}
	}
	var n tally
	if s := c.sideOf(p); s != nil && s.counted {
		for _, k := range calls {
			n.add(c.count(k.Args))
		}
		if n.over || !c.fits(n.n) {
			return inputErr("close", string(id), ErrTokenOverflow)
		}
	}
	c.addCalls(p, calls)
	c.readTo(p) // calls make it the model's
	c.addTokens(p, n.n)
	x := c.msg(p)
	x.flags &^= mOpen
	old := x.text
	x.text = c.text.Add(c.msgID(p), c.side(p).buf)
	c.text.Release(old)
	s := c.side(p)
	s.buf = nil
	if s.pointer.IsZero() && s.neededBy == nil && s.refs == 0 && x.flags&mBig == 0 && x.role != roleSide && s.requires == nil && !s.isError {
		c.freeSideOf(p)
	}
	c.unit(x.unit).open--
	c.open = slices.DeleteFunc(c.open, func(q int32) bool { return q == p })
	for k := range c.answersOf(p) {
		c.complete(k)
	}
	c.answered(p)
	c.touch(c.msg(p).unit)
	c.trackLarge(p)
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
	ps := make([]int32, 0, len(ids))
	for _, id := range ids {
		p, err := c.lookup("couple", id)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if len(ps) < 2 {
		return nil
	}
	// Read each message's unit when merging it, not before: an id given
	// twice, or two ids of one unit, would otherwise merge a unit already
	// absorbed and count its tokens, pins and pending calls twice.
	u := c.msg(ps[0]).unit
	for _, p := range ps[1:] {
		u = c.merge(u, c.msg(p).unit)
	}
	return nil
}

// Pin marks a message as never to be pruned (a system prompt, a user's
// one-time instruction). A unit holding a pinned message is never pruned.
func (c *Context) Pin(id MessageID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p, err := c.lookup("pin", id)
	if err != nil {
		return err
	}
	if x := c.msg(p); x.flags&mPinned == 0 {
		c.pin(p)
		u := c.unit(x.unit)
		u.pinned++
		c.touch(x.unit)
		c.trackLarge(p)
	}
	return nil
}

// Spill records that message id's content was written to a durable store
// at p. The message may then be evicted, whatever its class, while the
// configured [Resolver] resolves p (planned-step references still hold
// it), and [Context.Apply] refuses a decision whose evictions relied on p
// once p stops resolving. A zero p removes the pointer. With
// Config.PointerTokens set, a stubbed message given a pointer (or
// losing it) counts PointerTokens (or the stub's) from then on. It drops the
// refusals a guard remembered for the message and its unit (see
// [Context.Refusals]). A message still streaming cannot be spilled: its
// content is not final, so Spill fails with [ErrOpenMessage] until
// [Context.Close] (and [Context.Open] refuses a message that carries a
// pointer). A message the model has not read yet may be spilled: a pointer
// removes nothing, and the boundary gate keeps the message's unit until
// the model has read it ([Context.Unread]); a [Guard] spills only what
// may go. A stubbed message whose pointer text would take
// [Context.Tokens] past the largest int is refused with
// [ErrTokenOverflow].
func (c *Context) Spill(id MessageID, ptr Pointer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p, err := c.lookup("spill", id)
	if err != nil {
		return err
	}
	if c.msg(p).flags&mOpen != 0 {
		return inputErr("spill", string(id), ErrOpenMessage)
	}
	if c.msg(p).flags&mStubbed != 0 && !c.fits(c.stubTokensWith(ptr)-c.stubTokens(p)) {
		return inputErr("spill", string(id), ErrTokenOverflow)
	}
	was := c.stubTokens(p)
	if !ptr.IsZero() || c.sideOf(p) != nil {
		c.side(p).pointer = ptr
	}
	if c.msg(p).flags&mStubbed != 0 {
		c.addTokens(p, c.stubTokens(p)-was) // its stub shows the pointer now, or no longer
	}
	c.touch(c.msg(p).unit)
	c.mem.spilled(c, p)
	return nil
}

// Mark adds facts to a message, for example when a later step learns that
// an earlier observation was a negative result.
func (c *Context) Mark(id MessageID, f Facts) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p, err := c.lookup("mark", id)
	if err != nil {
		return err
	}
	x := c.msg(p)
	x.facts |= f
	c.touch(x.unit)
	c.trackLarge(p)
	return nil
}

// Recount sets the token count of an open message to tokens, in place of
// what its Open and Writes gave it: a runtime that knows the exact count
// of a streamed message only at its end (the whole message counted at
// once, where the counts of its chunks do not add up to it, or a
// provider's usage report) settles it before [Context.Close], so that
// the message streamed counts what the same message appended whole
// would. Close then adds nothing for the calls it is given, whatever
// Config.Counter. It fails with [ErrClosedMessage] if the message is not
// open, with [ErrUnknownMessage] if the Context does not hold it, and
// with [ErrNegativeTokens] for a negative count, changing nothing.
func (c *Context) Recount(id MessageID, tokens int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p, err := c.lookup("recount", id)
	switch {
	case err != nil:
		return err
	case c.msg(p).flags&mOpen == 0:
		return inputErr("recount", string(id), ErrClosedMessage)
	case tokens < 0:
		return inputErr("recount", string(id), ErrNegativeTokens)
	}
	c.addTokens(p, tokens-c.tokensOf(p))
	if s := c.sideOf(p); s != nil {
		s.counted = false
	}
	c.touch(c.msg(p).unit)
	return nil
}

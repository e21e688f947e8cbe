package pruneguard

// The units of a Context: each a list of its members in transcript order,
// linked through the messages, and all of them linked oldest first (by
// their first message), so that a policy walks them from the head.

// members walks the members of unit u in transcript order.
func (c *Context) members(u int32) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for p := c.unit(u).head; p != none; p = c.msg(p).nextM {
			if !yield(p) {
				return
			}
		}
	}
}

// unitSize returns how many messages unit u holds.
func (c *Context) unitSize(u int32) int {
	n := 0
	for range c.members(u) {
		n++
	}
	return n
}

// unitTokens returns the tokens of unit u's messages.
func (c *Context) unitTokens(u int32) int {
	n := 0
	for p := range c.members(u) {
		n += c.tokensOf(p)
	}
	return n
}

// heads reports whether message p is held and the first of its unit.
func (c *Context) heads(p int32) bool {
	x := c.msg(p)
	return x.flags&mDead == 0 && c.unit(x.unit).head == p
}

// firstUnit returns the oldest unit, or none.
func (c *Context) firstUnit() int32 {
	if c.units.Len() == 0 {
		return none
	}
	return c.uhead
}

// newUnit makes an empty unit at the end of the units.
func (c *Context) newUnit() int32 {
	u := c.units.Push()
	*c.unit(u) = urec{head: none, tail: none, prev: c.utail, next: none}
	if c.utail != none {
		c.unit(c.utail).next = u
	} else {
		c.uhead = u
	}
	c.utail = u
	return u
}

// link appends message p, the newest, to unit u.
func (c *Context) link(p int32, u int32) {
	x := c.msg(p)
	x.unit = u
	un := c.unit(u)
	if un.tail == none {
		un.head = p
	} else {
		c.msg(un.tail).nextM = p
	}
	un.tail = p
	if x.flags&mPinned != 0 {
		un.pinned++
	}
	c.touch(u)
	c.tokens += c.tokensOf(p)
}

// merge joins units a and b and returns the survivor. The absorbed unit
// dies, so that decisions naming it go stale; it is recorded in
// Context.into until the next compaction.
func (c *Context) merge(a, b int32) int32 {
	if a == b {
		return a
	}
	c.mem.merged(c, a, b)
	ua, ub := c.unit(a), c.unit(b)
	if ub.head < ua.head {
		// The survivor takes the place of the earlier unit in the list.
		c.unlinkUnit(a)
		c.relinkUnit(a, ub.prev, ub.next)
		ub.prev, ub.next = none, none
	} else {
		c.unlinkUnit(b)
	}
	// Merge the member lists, both in transcript order.
	head, tail := none, none
	add := func(p int32) {
		c.msg(p).unit = a
		if tail == none {
			head = p
		} else {
			c.msg(tail).nextM = p
		}
		tail = p
	}
	pa, pb := ua.head, ub.head
	for pa != none || pb != none {
		if pb == none || pa != none && pa < pb {
			next := c.msg(pa).nextM
			add(pa)
			pa = next
		} else {
			next := c.msg(pb).nextM
			add(pb)
			pb = next
		}
	}
	c.msg(tail).nextM = none
	ua.head, ua.tail = head, tail
	ua.pending += ub.pending
	ua.open += ub.open
	ua.pinned += ub.pinned
	c.touch(a)
	*ub = urec{head: none, tail: none, prev: none, next: none, version: ub.version + 1}
	if c.into == nil {
		c.into = make(map[int32]int32)
	}
	c.into[b] = a
	c.shape++
	return a
}

// unlinkUnit takes unit u out of the list of units.
func (c *Context) unlinkUnit(u int32) {
	un := c.unit(u)
	if un.prev != none {
		c.unit(un.prev).next = un.next
	} else if c.uhead == u {
		c.uhead = un.next
	}
	if un.next != none {
		c.unit(un.next).prev = un.prev
	} else if c.utail == u {
		c.utail = un.prev
	}
	un.prev, un.next = none, none
}

// relinkUnit puts unit u in the list of units between prev and next.
func (c *Context) relinkUnit(u, prev, next int32) {
	un := c.unit(u)
	un.prev, un.next = prev, next
	if prev != none {
		c.unit(prev).next = u
	} else {
		c.uhead = u
	}
	if next != none {
		c.unit(next).prev = u
	} else {
		c.utail = u
	}
}

// resortUnit moves unit u, whose first message is now later, forward in
// the list of units.
func (c *Context) resortUnit(u int32) {
	head := c.unit(u).head
	next := c.unit(u).next
	if next == none || c.unit(next).head > head {
		return
	}
	c.mem.moved()
	c.unlinkUnit(u)
	for c.unit(next).next != none && c.unit(c.unit(next).next).head < head {
		next = c.unit(next).next
	}
	c.relinkUnit(u, next, c.unit(next).next)
}

package pruneguard

// Pointer lines: with Config.PointerTokens set, the runtime shows one
// line per distinct pointer of the messages evicted, and the Context
// counts them as it counts the tombstones that stand.

// lineAdds reports whether evicting message p adds a pointer line: it
// carries a pointer the Context counts no line for yet.
func (c *Context) lineAdds(p int32) (Pointer, bool) {
	if c.cfg.PointerTokens <= 0 {
		return Pointer{}, false
	}
	ptr := c.pointer(p)
	if ptr.IsZero() {
		return ptr, false
	}
	_, ok := c.lines[ptr]
	return ptr, !ok
}

// addLine counts the line of ptr, once.
func (c *Context) addLine(ptr Pointer) {
	if _, ok := c.lines[ptr]; ok {
		return
	}
	if c.lines == nil {
		c.lines = make(map[Pointer]struct{})
	}
	c.lines[ptr] = struct{}{}
	c.lineTokens += c.cfg.PointerTokens
}

// pointerLarger reports whether message id is larger than the pointer
// text its stub would show once spilled (always, with no PointerTokens
// set): a guard spills a result to stub it only then.
func (c *Context) pointerLarger(id MessageID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.cfg.PointerTokens <= 0 {
		return true
	}
	p, ok := c.find(id)
	return !ok || c.tokensOf(p) > c.cfg.PointerTokens
}

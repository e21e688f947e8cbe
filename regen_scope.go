package pruneguard

// Staleness of read results. A read-only tool's result is reconstructible
// only while reading again would give the same bytes: once a mutating call
// that may change what it read is made after it, it is the record of a
// state that no longer exists. Each tool has a scope ([Tool.Scope], empty
// for everything); the Context keeps the position of the latest mutating
// call of each scope, of the empty scope and of any scope, so that
// judging a result costs a few comparisons, not a walk of the history.
//
// Positions are those of the calls arena, in the order calls were made,
// stored as one more than the position so that zero means "none".
// Compaction renumbers the calls; remapScopes renumbers these with them.

// scopeRec is the record of one named scope.
type scopeRec struct {
	name string
	mut  int32 // one more than the position of its latest mutating call, or 0
}

// setScope files tool record r under the scope its tool names, and
// recomputes the latest mutations when the tool has calls: its scope or
// whether it mutates may have changed.
func (c *Context) setScope(r *toolRec) {
	r.scope = 0
	if name := r.t.Scope; name != "" {
		i, ok := c.scopeIdx[name]
		if !ok {
			if c.scopeIdx == nil {
				c.scopeIdx = make(map[string]int32)
			}
			c.scopes = append(c.scopes, scopeRec{name: name})
			i = int32(len(c.scopes))
			c.scopeIdx[name] = i
		}
		r.scope = i
	}
	if r.last != 0 {
		c.rescope()
	}
}

// rescope recomputes the latest mutating call of every scope from the
// latest call of each mutating tool. It costs time in proportion to the
// tools and scopes, not to the calls.
func (c *Context) rescope() {
	c.mutAny, c.mutAll = 0, 0
	for i := range c.scopes {
		c.scopes[i].mut = 0
	}
	for i := range c.tools {
		if r := &c.tools[i]; r.last != 0 && r.t.Mutating() {
			c.mutated(r, r.last)
		}
	}
}

// mutated records a mutating call of tool r at pos (one more than its
// position), if it is the latest of its scope.
func (c *Context) mutated(r *toolRec, pos int32) {
	c.mutAny = max(c.mutAny, pos)
	if r.scope == 0 {
		c.mutAll = max(c.mutAll, pos)
		return
	}
	s := &c.scopes[r.scope-1]
	s.mut = max(s.mut, pos)
}

// called records that call k, just made, calls tool t.
func (c *Context) called(t, k int32) {
	r := &c.tools[t]
	r.last = k + 1
	if r.t.Mutating() {
		c.mutated(r, k+1)
	}
}

// callClass returns the class of the result of call k: its tool's output
// class, raised to Irreducible for a read-only tool's result that a later
// or parallel mutating call of an overlapping scope made stale. A value
// beyond Irreducible counts as Irreducible.
func (c *Context) callClass(k int32) Class {
	r := &c.tools[c.call(k).tool]
	cls := norm(r.t.OutputClass())
	if cls == Reconstructible && r.t.Annotations.ReadOnly() && c.stale(k, r.scope) {
		return Irreducible
	}
	return cls
}

// stale reports whether a mutating call whose scope overlaps scope was
// made after call k, or beside it in the same batch (parallel calls run in
// no known order). It takes constant time plus the size of k's batch.
func (c *Context) stale(k, scope int32) bool {
	latest := c.mutAny
	if scope != 0 {
		latest = max(c.mutAll, c.scopes[scope-1].mut)
	}
	if latest > k+1 {
		return true
	}
	caller := c.call(k).caller
	if caller == none {
		return false
	}
	for j := range c.callsOf(caller) {
		if j == k {
			continue
		}
		r := &c.tools[c.call(j).tool]
		if r.t.Mutating() && (scope == 0 || r.scope == 0 || r.scope == scope) {
			return true
		}
	}
	return false
}

// remapScopes renumbers the latest calls after a compaction: rank[k] is
// the number of calls kept before old position k (rank has one entry
// more than there were calls, for a position past the last). A call that
// left is replaced by the place it held among those kept, so that every
// kept call stays before or after it as it was.
func (c *Context) remapScopes(rank []int32) {
	at := func(pos int32) int32 {
		if pos == 0 {
			return 0
		}
		return rank[pos-1] + 1
	}
	c.mutAny, c.mutAll = at(c.mutAny), at(c.mutAll)
	for i := range c.scopes {
		c.scopes[i].mut = at(c.scopes[i].mut)
	}
	for i := range c.tools {
		c.tools[i].last = at(c.tools[i].last)
	}
}

// forgetServer records that the results of the server calls message p
// carries leave the prompt with it, for refetch detection.
func (c *Context) forgetServer(p int32, cls Class) {
	for k := range c.callsOf(p) {
		if c.call(k).flags&cServer != 0 {
			c.forget(k, cls)
		}
	}
}

// norm returns k, or Irreducible for a value beyond the classes.
func norm(k Class) Class {
	if k > Irreducible {
		return Irreducible
	}
	return k
}

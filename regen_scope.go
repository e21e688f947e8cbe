package pruneguard

// Staleness of read results. A read-only tool's result is reconstructible
// only while reading again would give the same bytes: once a mutating call
// that may change what it read is made after it, or beside it in its
// parallel batch (which runs in no known order), it is the record of a
// state that no longer exists. Each tool has a scope ([Tool.Scope], empty
// for everything); the Context keeps the place of the latest mutating
// call of each scope, of the empty scope and of any scope, so that
// judging a result takes a few comparisons, not a walk of the history or
// of the batch: a result is stale when the latest mutating call of an
// overlapping scope comes at or after the first call of its batch.
//
// Places are those of the calls arena, in the order calls were made, as
// marks: 2p+2 for the call at position p, 2p+1 for the place just before
// it, 0 for none. Compaction renumbers the calls; remapScopes moves each
// mark with them, and the mark of a call that left to the place it held
// among those kept.

// A tool may also name, by [Tool.ScopeArgs], the arguments that say which
// resource a call touches (a path): a mutating call that names its
// resources stales only the reads of an overlapping resource (the same
// path, or one inside the other at a '/'), where one that names none
// stales every read of an overlapping scope. So besides the marks of the
// latest mutating calls that touch a whole scope, the Context keeps the
// marks of the latest that name resources, of each scope, of the empty
// scope and of any scope, and in Context.paths, per scope and per path,
// the mark of the latest mutating call naming the path and of the latest
// naming it or a path inside it. Judging a read that names its resources
// takes a few comparisons and, when a mutation that named resources came
// after it, a look-up per '/' of each path it read.

// scopeRec is the record of one named scope.
type scopeRec struct {
	name string
	mut  int64 // the mark of its latest mutating call that touches all of it, or 0
	res  int64 // the mark of its latest mutating call that names its resources, or 0
}

// callMark is the mark of the call at position k.
func callMark(k int32) int64 { return 2*int64(k) + 2 }

// setScope files tool record r under the scope its tool names, and, when
// the tool has calls and how it classes results changed (reclass), sets
// the latest mutations again: its scope or whether it mutates may have
// changed.
func (c *Context) setScope(r *toolRec, reclass bool) {
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
	if r.last != 0 && reclass {
		c.rescope()
	}
}

// rescope sets the latest mutating call of every scope again from the
// latest call of each mutating tool, taken as touching all of its scope:
// the resources of earlier calls are not kept. It costs time in
// proportion to the tools and scopes, not to the calls.
func (c *Context) rescope() {
	c.mutAny, c.mutAll, c.resAny, c.resAll = 0, 0, 0, 0
	c.paths = nil
	for i := range c.scopes {
		c.scopes[i].mut, c.scopes[i].res = 0, 0
	}
	for i := range c.tools {
		if r := &c.tools[i]; r.last != 0 && r.t.Mutating() {
			c.mutated(r, r.last, nil)
		}
	}
}

// mutated records a mutating call of tool r at mark m, if it is the
// latest of its scope: one naming the resources paths, or, with none,
// one that touches all of its scope.
func (c *Context) mutated(r *toolRec, m int64, paths []string) {
	if len(paths) == 0 {
		c.mutAny = max(c.mutAny, m)
		if r.scope == 0 {
			c.mutAll = max(c.mutAll, m)
			return
		}
		s := &c.scopes[r.scope-1]
		s.mut = max(s.mut, m)
		return
	}
	c.resAny = max(c.resAny, m)
	if r.scope == 0 {
		c.resAll = max(c.resAll, m)
	} else {
		s := &c.scopes[r.scope-1]
		s.res = max(s.res, m)
	}
	for _, p := range paths {
		c.wrote(r.scope, p, m)
		c.wrote(anyScope, p, m)
	}
}

// called records that call k, just made, calls tool t.
func (c *Context) called(t, k int32) {
	r := &c.tools[t]
	r.last = callMark(k)
	if r.t.Mutating() {
		paths, _ := c.resources(r, k)
		c.mutated(r, r.last, paths)
	}
}

// callClass returns the class of the result of call k: its tool's output
// class, raised to Irreducible for a read-only tool's result that a later
// or parallel mutating call of an overlapping scope made stale. A value
// beyond Irreducible counts as Irreducible.
func (c *Context) callClass(k int32) Class {
	r := &c.tools[c.call(k).tool]
	cls := norm(r.t.OutputClass())
	if cls == Reconstructible && r.t.Annotations.ReadOnly() && c.stale(k, r) {
		return Irreducible
	}
	return cls
}

// stale reports whether a mutating call that may touch what call k of
// tool r read was made at or after the first call of k's batch: after
// k, or beside it. k itself, a read, is no mutating call. Without a
// mutation naming resources since, it takes constant time.
func (c *Context) stale(k int32, r *toolRec) bool {
	first := k
	if caller := c.call(k).caller; caller != none {
		first = c.msg(caller).call
	}
	since := callMark(first) - 1
	whole, res := c.mutAny, c.resAny
	if r.scope != 0 {
		s := &c.scopes[r.scope-1]
		whole, res = max(c.mutAll, s.mut), max(c.resAll, s.res)
	}
	if whole > since {
		return true
	}
	if res <= since {
		return false
	}
	paths, ok := c.resources(r, k)
	if !ok {
		return true // it read all of its scope
	}
	for _, p := range paths {
		if r.scope == 0 {
			if c.touched(anyScope, p) > since {
				return true
			}
		} else if c.touched(0, p) > since || c.touched(r.scope, p) > since {
			return true
		}
	}
	return false
}

// remapScopes moves the marks after a compaction: cm maps each old
// position of a call kept to its new one, and that of a call that left
// to -2-rank, where rank is the number of calls kept before it; cm has
// one entry more than there were calls, for the end. A call that left is
// replaced by the place just before the first call kept after it, so
// that every kept call stays before or after the mark as it was.
func (c *Context) remapScopes(cm []int32) {
	rank := func(p int64) int64 {
		if k := cm[p]; k >= 0 {
			return int64(k)
		}
		return int64(-2 - cm[p])
	}
	at := func(m int64) int64 {
		switch {
		case m == 0:
			return 0
		case m%2 == 1: // just before old position (m-1)/2
			return 2*rank((m-1)/2) + 1
		}
		if k := cm[m/2-1]; k >= 0 {
			return callMark(k)
		}
		return 2*rank(m/2-1) + 1
	}
	c.mutAny, c.mutAll = at(c.mutAny), at(c.mutAll)
	c.resAny, c.resAll = at(c.resAny), at(c.resAll)
	for i := range c.scopes {
		c.scopes[i].mut = at(c.scopes[i].mut)
		c.scopes[i].res = at(c.scopes[i].res)
	}
	for i := range c.tools {
		c.tools[i].last = at(c.tools[i].last)
	}
	c.remapPaths(at)
}

// forgetServer records that the results of the server calls message p
// carries leave the prompt with it, for refetch detection: d evicts p,
// recorded at d.recs[i].
func (c *Context) forgetServer(p int32, d *Decision, i int) {
	for k := range c.callsOf(p) {
		if c.call(k).flags&cServer != 0 {
			c.queueForgot(k, d, i)
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

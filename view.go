package pruneguard

import (
	"iter"

	"github.com/pruneguard/pruneguard/internal/btree"
)

// A View is what a [Policy] sees of a [Context]: walks over its units and
// its tool results in the orders policies want, each kept up to date as
// messages arrive, are stubbed or leave, so that a walk costs in
// proportion to what it yields, not to the length of the Context. For a
// policy that wants the simple way, [View.Snapshot] copies the whole.
//
// [Guard.Check] hands its policy a View that hides the units the gates
// refused earlier in the same check: the walks and the snapshot skip
// them. Every View also passes over what a guard remembers the gates
// refused at earlier checks, or its sweep refused before asking (see
// [Guard.Check] and [Context.Refusals]): [View.Units] and
// the snapshot skip units refused eviction, crossing a run of them in
// constant time, and [View.WholeResults] and [View.Largest] skip results
// refused a stub; [View.Hidden] reports both kinds of unit. A View reads the Context live, taking its read lock for each step
// of a walk and never across the loop body, so a policy may call the
// Context's methods while it walks. If the Context changes shape during a
// walk (a decision is applied or units merge, here or in another
// goroutine), the walk ends early; the guard asks again.
//
// A View is meant for one goroutine at a time. The zero View is empty.
type View struct {
	c      *Context
	shape  uint64
	hidden map[string]struct{}
	// noStub: results the walks of whole and largest results skip, by
	// id, for stubs refused in this check.
	noStub map[string]struct{}
	// hint: where the messages of the plan a built-in policy made last
	// are, for the guard to check it without hashing each id.
	hint  planHint
	hints bool // the guard reads hint
}

// View returns a View of the whole Context, for calling a [Policy]
// directly.
func (c *Context) View() *View {
	v := &View{c: c}
	v.arm()
	return v
}

// arm starts the View's walks on the Context as it is now.
func (v *View) arm() {
	v.c.syncRefusals()
	v.c.mu.RLock()
	v.shape = v.c.shape
	v.c.mu.RUnlock()
}

// changed reports whether the Context changed shape since the View was
// armed.
func (v *View) changed() bool {
	v.c.mu.RLock()
	defer v.c.mu.RUnlock()
	return v.c.shape != v.shape
}

// Hide hides units from the View's walks and snapshot, as the guard hides
// the units the gates refused. A policy that wraps another may use it to
// keep units from the inner one; under [Guard.Check] they stay hidden, and
// out of the guard's plans, for the rest of the check.
func (v *View) Hide(units ...UnitID) {
	if len(units) == 0 {
		return
	}
	if v.hidden == nil {
		v.hidden = make(map[string]struct{}, len(units))
	}
	for _, u := range units {
		v.hidden[string(u)] = struct{}{}
	}
}

// Hidden reports whether unit u is hidden from the View: hidden with
// [View.Hide], or remembered as refused eviction at an earlier check. A
// policy that evicts whole units skips hidden ones.
func (v *View) Hidden(u UnitID) bool {
	if _, ok := v.hidden[string(u)]; ok {
		return true
	}
	return v.c != nil && v.c.refusedUnit(u)
}

// hideStub hides results from the walks of whole and largest results for
// the rest of the check: their stubs were refused.
func (v *View) hideStub(ids ...MessageID) {
	if v.noStub == nil {
		v.noStub = make(map[string]struct{}, len(ids))
	}
	for _, id := range ids {
		v.noStub[string(id)] = struct{}{}
	}
}

// wholeEntry reports whether the walk of whole results yields result e.
func (v *View) wholeEntry(e Entry) bool {
	if e.Stubbed || v.c == nil {
		return false
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.find(e.ID)
	return ok && !c.mem.stubRefused(p) && !v.stubHidden(p)
}

// stubHidden reports whether result p is hidden from the walks of whole
// and largest results. Under the read lock.
func (v *View) stubHidden(p int32) bool {
	if len(v.noStub) == 0 {
		return false
	}
	_, ok := v.noStub[string(v.c.msgID(p))]
	return ok
}

// hides reports whether hidden holds the unit of message p.
func (c *Context) hides(hidden map[string]struct{}, p int32) bool {
	if len(hidden) == 0 {
		return false
	}
	_, ok := hidden[string(c.msgID(c.unit(c.msg(p).unit).head))]
	return ok
}

// Tokens reports the Context's token count.
func (v *View) Tokens() int {
	if v.c == nil {
		return 0
	}
	return v.c.Tokens()
}

// Len reports how many messages the Context holds, hidden or not.
func (v *View) Len() int {
	if v.c == nil {
		return 0
	}
	return v.c.Len()
}

// Snapshot describes every message the View does not hide, in transcript
// order. It costs time and memory in proportion to the Context.
func (v *View) Snapshot() []Entry {
	if v.c == nil {
		return nil
	}
	v.c.mu.RLock()
	defer v.c.mu.RUnlock()
	return v.c.snapshot(v.hidden, true)
}

// Unit describes unit id, hidden or not.
func (v *View) Unit(id UnitID) (Unit, bool) {
	if v.c == nil {
		return Unit{}, false
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.find(MessageID(id))
	if !ok || c.unit(c.msg(p).unit).head != p {
		return Unit{}, false
	}
	return c.describe(c.msg(p).unit), true
}

// walk yields what next finds, one step under the read lock at a time,
// until next finds nothing, yield declines, or the Context changes shape.
// next gets what it found at the previous step (start at the first) and
// returns what it finds next, or none, with what to yield.
func walk[T any](v *View, start int32, next func(prev int32) (int32, T)) iter.Seq[T] {
	return func(yield func(T) bool) {
		if v.c == nil {
			return
		}
		c := v.c
		prev := start
		for {
			c.mu.RLock()
			if c.shape != v.shape {
				c.mu.RUnlock()
				return
			}
			at, t := next(prev)
			c.mu.RUnlock()
			if at == none || !yield(t) {
				return
			}
			prev = at
		}
	}
}

// Units walks the units oldest first: in the order of their first
// message.
func (v *View) Units() iter.Seq[Unit] {
	return walk(v, none, func(prev int32) (int32, Unit) {
		c := v.c
		u := c.firstUnit()
		if prev != none {
			u = c.unit(prev).next
		}
		for ; u != none; u = c.unit(u).next {
			if u = c.candidate(u); u == none {
				break
			}
			if !c.hides(v.hidden, c.unit(u).head) {
				return u, c.describe(u)
			}
		}
		return none, Unit{}
	})
}

// Newest walks the messages newest first.
func (v *View) Newest() iter.Seq[Entry] {
	return walk(v, none, func(prev int32) (int32, Entry) {
		c := v.c
		p := c.msgs.Len() - 1
		if prev != none {
			p = prev - 1
		}
		for ; p >= 0; p-- {
			if c.msg(p).flags&mDead == 0 && !c.hides(v.hidden, p) {
				return p, c.entryOf(p)
			}
		}
		return none, Entry{}
	})
}

// The indexes a View walks.
func results(c *Context) *btree.Tree[int32]  { return &c.results }
func whole(c *Context) *btree.Tree[int32]    { return &c.whole }
func bySize(c *Context) *btree.Tree[sizeKey] { return &c.bySize }

// descend yields the elements of an index from the greatest down, or
// from just below start.
func (v *View) descend(index func(*Context) *btree.Tree[int32], start int32) iter.Seq[Entry] {
	return walk(v, start, func(prev int32) (int32, Entry) {
		c := v.c
		t := index(c)
		p, ok := t.Max()
		if prev != none {
			p, ok = t.Before(prev)
		}
		for ; ok; p, ok = t.Before(p) {
			if !c.hides(v.hidden, p) && (t == &c.results || !v.stubHidden(p)) {
				return p, c.entryOf(p)
			}
		}
		return none, Entry{}
	})
}

// ascend yields the results of an index by size from the least key up:
// after a step, from the key its message has now.
func (v *View) ascend(index func(*Context) *btree.Tree[sizeKey]) iter.Seq[Entry] {
	return walk(v, none, func(prev int32) (int32, Entry) {
		c := v.c
		t := index(c)
		k, ok := t.Min()
		if prev != none {
			k, ok = t.After(c.sizeKey(prev))
		}
		for ; ok; k, ok = t.After(k) {
			if !c.hides(v.hidden, k.pos) && !v.stubHidden(k.pos) {
				return k.pos, c.entryOf(k.pos)
			}
		}
		return none, Entry{}
	})
}

// Results walks the tool results (messages that answer a call) newest
// first, stubbed or not.
func (v *View) Results() iter.Seq[Entry] { return v.descend(results, none) }

// WholeResults walks the tool results that are not stubbed, newest first,
// less those remembered as refused a stub. It costs nothing per stubbed
// or refused result it passes over.
func (v *View) WholeResults() iter.Seq[Entry] { return v.descend(whole, none) }

// Largest walks the tool results that are not stubbed, largest first,
// less those remembered as refused a stub; results of equal size come
// oldest first.
func (v *View) Largest() iter.Seq[Entry] { return v.ascend(bySize) }

// newestResult returns the k-th newest tool result, counting from 1 and
// counting hidden units' results too, or none when there are fewer or the
// Context changed shape. It takes logarithmic time.
func (v *View) newestResult(k int) int32 {
	if v.c == nil || k <= 0 {
		return none
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shape != v.shape {
		return none
	}
	if p, ok := c.results.Select(c.results.Len() - k); ok {
		return p
	}
	return none
}

// reaches reports whether unit id holds a message no older than message
// b; never when b is none.
func (v *View) reaches(id UnitID, b int32) bool {
	if b == none {
		return false
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.find(MessageID(id))
	if !ok || c.shape != v.shape {
		return false
	}
	for m := range c.members(c.msg(p).unit) {
		if m >= b {
			return true
		}
	}
	return false
}

// position returns where message id is, or none.
func (v *View) position(id MessageID) int32 {
	if v.c == nil || id == "" {
		return none
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	if p, ok := c.find(id); ok {
		return p
	}
	return none
}

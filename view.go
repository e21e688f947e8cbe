package pruneguard

import "iter"

// A View is what a [Policy] sees of a [Context]: walks over its units and
// its tool results in the orders policies want, each kept up to date as
// messages arrive, are stubbed or leave, so that a walk costs in
// proportion to what it yields, not to the length of the Context. For a
// policy that wants the simple way, [View.Snapshot] copies the whole.
//
// [Guard.Check] hands its policy a View that hides the units the gates
// refused earlier in the same check: the walks and the snapshot skip
// them. A View reads the Context live, taking its read lock for each step
// of a walk and never across the loop body, so a policy may call the
// Context's methods while it walks. If the Context changes shape during a
// walk (another goroutine applies a decision or units merge), the walk
// ends early; the guard asks again.
//
// A View is meant for one goroutine at a time. The zero View is empty.
type View struct {
	c      *Context
	shape  uint64
	hidden map[UnitID]struct{}
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
		v.hidden = make(map[UnitID]struct{}, len(units))
	}
	for _, u := range units {
		v.hidden[u] = struct{}{}
	}
}

// Hidden reports whether unit u is hidden from the View.
func (v *View) Hidden(u UnitID) bool {
	_, ok := v.hidden[u]
	return ok
}

// hides reports whether the unit of x is hidden; the caller holds the
// read lock.
func (v *View) hides(x *msg) bool {
	if len(v.hidden) == 0 {
		return false
	}
	_, ok := v.hidden[x.unit.id()]
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
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Entry, 0, len(c.byID))
	for x := c.head; x != nil; x = x.next {
		if !v.hides(x) {
			out = append(out, x.entry())
		}
	}
	return out
}

// Unit describes unit id, hidden or not.
func (v *View) Unit(id UnitID) (Unit, bool) {
	if v.c == nil {
		return Unit{}, false
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	x, ok := c.byID[MessageID(id)]
	if !ok || x.unit.members[0] != x {
		return Unit{}, false
	}
	return x.unit.describe(), true
}

// walk yields what next finds, one step under the read lock at a time,
// until next finds nothing, yield declines, or the Context changes shape.
// next gets the message found at the previous step (start at the first)
// and returns the next one with what to yield.
func walk[T any](v *View, start *msg, next func(prev *msg) (*msg, T)) iter.Seq[T] {
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
			x, t := next(prev)
			c.mu.RUnlock()
			if x == nil || !yield(t) {
				return
			}
			prev = x
		}
	}
}

// Units walks the units oldest first: in the order of their first
// message.
func (v *View) Units() iter.Seq[Unit] {
	return walk(v, nil, func(prev *msg) (*msg, Unit) {
		x := v.c.head
		if prev != nil {
			x = prev.next
		}
		for ; x != nil; x = x.next {
			if x.unit.members[0] == x && !v.hides(x) {
				return x, x.unit.describe()
			}
		}
		return nil, Unit{}
	})
}

// Newest walks the messages newest first.
func (v *View) Newest() iter.Seq[Entry] {
	return walk(v, nil, func(prev *msg) (*msg, Entry) {
		x := v.c.tail
		if prev != nil {
			x = prev.prev
		}
		for ; x != nil; x = x.prev {
			if !v.hides(x) {
				return x, x.entry()
			}
		}
		return nil, Entry{}
	})
}

// descend yields the elements of an index from the greatest down, or
// from just below start.
func (v *View) descend(index func(*Context) *btree[*msg], start *msg) iter.Seq[Entry] {
	return walk(v, start, func(prev *msg) (*msg, Entry) {
		t := index(v.c)
		x, ok := t.Max()
		if prev != nil {
			x, ok = t.Before(prev)
		}
		for ; ok; x, ok = t.Before(x) {
			if !v.hides(x) {
				return x, x.entry()
			}
		}
		return nil, Entry{}
	})
}

// Results walks the tool results (messages that answer a call) newest
// first, stubbed or not.
func (v *View) Results() iter.Seq[Entry] {
	return v.descend(results, nil)
}

func results(c *Context) *btree[*msg] { return &c.results }
func whole(c *Context) *btree[*msg]   { return &c.whole }

// WholeResults walks the tool results that are not stubbed, newest first.
// It costs nothing per stubbed result it passes over.
func (v *View) WholeResults() iter.Seq[Entry] {
	return v.descend(whole, nil)
}

// Largest walks the tool results that are not stubbed, largest first;
// results of equal size come oldest first.
func (v *View) Largest() iter.Seq[Entry] {
	return walk(v, nil, func(prev *msg) (*msg, Entry) {
		t := &v.c.bySize
		x, ok := t.Min()
		if prev != nil {
			x, ok = t.After(prev)
		}
		for ; ok; x, ok = t.After(x) {
			if !v.hides(x) {
				return x, x.entry()
			}
		}
		return nil, Entry{}
	})
}

// newestResult returns the k-th newest tool result, counting from 1 and
// counting hidden units' results too, or nil when there are fewer or the
// Context changed shape. It takes logarithmic time.
func (v *View) newestResult(k int) *msg {
	if v.c == nil || k <= 0 {
		return nil
	}
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.shape != v.shape {
		return nil
	}
	x, _ := c.results.Select(c.results.Len() - k)
	return x
}

// reaches reports whether unit id holds a tool result no older than b.
func (v *View) reaches(id UnitID, b *msg) bool {
	c := v.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	x, ok := c.byID[MessageID(id)]
	if !ok || c.shape != v.shape {
		return false
	}
	for _, y := range x.unit.members {
		if len(y.results) > 0 && y.seq >= b.seq {
			return true
		}
	}
	return false
}

package pruneguard

import (
	"slices"
	"strings"
)

// Policy proposes what to prune. It gets a [View] of the Context and the
// number of tokens to free, and returns a [Plan]; the guard then decides
// what of it is safe. A policy that walks the View in the order it wants
// and stops once it has proposed enough costs in proportion to what it
// proposes; [PolicyFunc] takes the simple way, a snapshot of every
// message. Implementations must be safe for the concurrency their
// callers use; the built-in ones are stateless values. Package
// [github.com/pruneguard/pruneguard/policytest] checks that a policy's
// plans keep this contract.
//
// A nil Policy in a [Guard] means OldestFirst{}.
type Policy interface {
	Propose(v *View, need int) Plan
}

// PolicyFunc adapts a function of a snapshot to a [Policy]: it is called
// with [View.Snapshot], every message the View does not hide, in
// transcript order. The snapshot costs in proportion to the Context.
//
// A nil PolicyFunc must not be used: calling it panics.
type PolicyFunc func(entries []Entry, need int) Plan

// Propose calls f with a snapshot of v.
func (f PolicyFunc) Propose(v *View, need int) Plan { return f(v.Snapshot(), need) }

// ViewFunc adapts a function of a [View] to a [Policy], for policies that
// walk the View or combine other policies.
//
// A nil ViewFunc must not be used: calling it panics.
type ViewFunc func(v *View, need int) Plan

// Propose calls f.
func (f ViewFunc) Propose(v *View, need int) Plan { return f(v, need) }

// prunable reports whether a policy may propose unit u: nothing in it is
// pinned, streaming, waiting for a result or unread by the model.
func prunable(u Unit) bool { return !u.Pinned && !u.Open && !u.Unread && len(u.Pending) == 0 }

// proposable is prunable for the unit at u, without describing it. Under
// the read lock.
func (c *Context) proposable(u int32) bool {
	un := c.unit(u)
	if un.pinned > 0 || un.open > 0 || c.unread(u) {
		return false
	}
	if un.pending > 0 {
		for p := range c.members(u) {
			for k := range c.callsOf(p) {
				if c.call(k).flags&cDone == 0 {
					return false
				}
			}
		}
	}
	return true
}

// OldestFirst proposes whole units, oldest first, until enough tokens
// would be freed. It skips units that are pinned, in flight or not yet
// read by the model ([Unit.Unread]), and keeps the last Keep messages of
// the transcript, with the units they belong to, out of its proposals.
// It walks the units from the oldest and stops there.
//
// The zero OldestFirst keeps nothing back: it proposes from the oldest unit
// on.
type OldestFirst struct {
	Keep int
}

// Propose implements [Policy].
func (o OldestFirst) Propose(v *View, need int) Plan {
	var kept map[string]bool
	if o.Keep > 0 {
		// A unit with a message among the last Keep stays whole.
		kept = make(map[string]bool, o.Keep)
		n := 0
		for e := range v.Newest() {
			if n == o.Keep {
				break
			}
			kept[string(e.Unit)] = true
			n++
		}
	}
	// The walk of View.Units, taking each unit it would yield that may go,
	// under one read lock. Nothing runs between its steps, so it is the
	// walk as View.Units takes it; like it, it takes nothing when the
	// Context changed shape since the View was armed. The ids are then
	// written end to end in one string and cut from it.
	var (
		p     Plan
		at    []int32
		size  int
		freed int
	)
	if c := v.c; c != nil {
		c.mu.RLock()
		u := none
		if c.shape == v.shape {
			u = c.firstUnit()
			// Room for what need takes at the average message's size,
			// and an eighth more, so that a walk of ordinary messages
			// fills it without growing it.
			if avg := c.tokens / max(c.live, 1); avg > 0 {
				room := c.live
				if n := need / avg; n < room {
					room = min(room, n+n/8+16)
				}
				at = make([]int32, 0, room)
			}
		}
		for ; u != none && freed < need; u = c.unit(u).next {
			if u = c.candidate(u); u == none {
				break
			}
			head := c.unit(u).head
			if c.hides(v.hidden, head) || kept[string(c.msgID(head))] || !c.proposable(u) {
				continue
			}
			for m := range c.members(u) {
				at = append(at, m)
				size += int(c.msg(m).idLen)
				freed += c.tokensOf(m)
			}
		}
		if len(at) > 0 {
			var b strings.Builder
			b.Grow(size)
			for _, q := range at {
				b.Write(c.msgID(q))
			}
			all, from := b.String(), 0
			p.Evict = make([]MessageID, len(at))
			for i, q := range at {
				l := int(c.msg(q).idLen)
				p.Evict[i] = MessageID(all[from : from+l])
				from += l
			}
		}
		c.mu.RUnlock()
	}
	if len(at) == 0 {
		return Plan{}
	}
	if v.hints {
		v.hint = planHint{evict: at}
	}
	return p
}

// LargestResultsFirst proposes the largest tool results first until
// enough tokens would be freed: their whole units, or with Stub set, the
// results alone replaced by stubs. When stubbing it skips results of
// MinTokens or fewer (zero means 8, the default stub's size), which a
// stub would not make smaller. It walks the results from the largest and
// stops there.
type LargestResultsFirst struct {
	Stub      bool
	MinTokens int
}

func stubFloor(n int) int {
	if n <= 0 {
		return DefaultStubTokens
	}
	return n
}

// Propose implements [Policy].
func (l LargestResultsFirst) Propose(v *View, need int) Plan {
	var p Plan
	freed := 0
	var taken map[UnitID]bool
	floor := stubFloor(l.MinTokens)
	for e := range v.Largest() {
		if freed >= need || l.Stub && e.Tokens <= floor {
			break // the rest are no larger
		}
		if taken[e.Unit] {
			continue
		}
		u, ok := v.Unit(e.Unit)
		if !ok || !prunable(u) || !l.Stub && v.Hidden(u.ID) {
			continue
		}
		if l.Stub {
			p.Stub = append(p.Stub, e.ID)
			freed += max(0, e.Tokens-DefaultStubTokens)
			continue
		}
		if taken == nil {
			taken = make(map[UnitID]bool)
		}
		taken[e.Unit] = true
		p.Evict = append(p.Evict, u.Messages...)
		freed += u.Tokens
	}
	return p
}

// KeepLastToolUses clears every tool use but the last Keep (default 3),
// oldest first, as Anthropic's clear_tool_uses context edit does. A tool
// use is a tool result; stubbed results count. Tools named in Exclude are
// never cleared. With Stub set the results are replaced by placeholders
// and the calls stay, as that edit does; otherwise the whole units go,
// except units that also hold a kept use or a result of an excluded
// tool. When stubbing it skips results of MinTokens or fewer (zero means
// 8, the default stub's size). It ignores need: once the guard asks, it
// clears everything older than the kept tool uses.
//
// It finds the oldest kept use in logarithmic time (with Exclude, by
// walking the kept uses), then walks the older uses still to clear (with
// Stub, only those not yet stubbed): its cost follows what it clears,
// plus the results it never clears (excluded tools, pinned or in-flight
// units, results too small to stub).
type KeepLastToolUses struct {
	Keep      int
	Exclude   []string
	Stub      bool
	MinTokens int
}

// Propose implements [Policy].
func (k KeepLastToolUses) Propose(v *View, need int) Plan {
	keep := k.Keep
	if keep <= 0 {
		keep = 3
	}
	var older []Entry // the uses older than the kept ones, newest first
	var protected func(e Entry) bool
	if len(k.Exclude) == 0 {
		older, protected = k.olderUses(v, keep)
	} else {
		older, protected = k.olderUsesExcluding(v, keep)
	}
	if len(older) == 0 {
		return Plan{}
	}
	slices.Reverse(older) // oldest first
	var p Plan
	var taken map[UnitID]bool
	floor := stubFloor(k.MinTokens)
	for _, e := range older {
		u, ok := v.Unit(e.Unit)
		if !ok || !prunable(u) {
			continue
		}
		if k.Stub {
			if !e.Stubbed && e.Tokens > floor {
				p.Stub = append(p.Stub, e.ID)
			}
			continue
		}
		if taken[e.Unit] || protected(e) || v.Hidden(e.Unit) {
			continue
		}
		if taken == nil {
			taken = make(map[UnitID]bool)
		}
		taken[e.Unit] = true
		p.Evict = append(p.Evict, u.Messages...)
	}
	return p
}

// olderUses finds the oldest kept use in logarithmic time and walks the
// uses older than it (with Stub, those still whole). A unit that also
// holds the oldest kept use or a later message is protected.
func (k KeepLastToolUses) olderUses(v *View, keep int) ([]Entry, func(Entry) bool) {
	b := v.newestResult(keep)
	if b == none {
		return nil, nil
	}
	index := results
	if k.Stub {
		index = whole
	}
	var older []Entry
	for e := range v.descend(index, b) {
		older = append(older, e)
	}
	return older, func(e Entry) bool { return v.reaches(e.Unit, b) }
}

// excluded reports whether result e answers a call to a tool of Exclude.
func (k KeepLastToolUses) excluded(e Entry) bool {
	return slices.ContainsFunc(e.Tools, func(t string) bool { return slices.Contains(k.Exclude, t) })
}

// olderUsesExcluding walks the kept uses, newest first, passing over the
// results of excluded tools, whose units it protects with the kept ones
// and those holding a message no older than the oldest kept use; then,
// without Stub, every older use, and with it, the older ones still
// whole.
func (k KeepLastToolUses) olderUsesExcluding(v *View, keep int) ([]Entry, func(Entry) bool) {
	protect := make(map[UnitID]bool)
	kept, whole := 0, 0
	var older []Entry
	var oldest MessageID // the oldest kept use
	for e := range v.Results() {
		if kept == keep && k.Stub {
			older = append(older, e) // a sign that there are older uses
			break
		}
		if v.wholeEntry(e) {
			whole++
		}
		if k.excluded(e) {
			protect[e.Unit] = true
			continue
		}
		if kept < keep {
			protect[e.Unit] = true
			kept++
			oldest = e.ID
			continue
		}
		older = append(older, e)
	}
	if len(older) > 0 && k.Stub {
		// The walk of the whole results passes first over those the walk
		// above counted, then over the older ones still to stub.
		older = older[:0]
		for e := range v.WholeResults() {
			if whole > 0 {
				whole--
				continue
			}
			if !k.excluded(e) {
				older = append(older, e)
			}
		}
	}
	b := v.position(oldest)
	return older, func(e Entry) bool { return protect[e.Unit] || v.reaches(e.Unit, b) }
}

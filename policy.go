package pruneguard

import "slices"

// Policy proposes what to prune. It sees a snapshot of the Context and
// the number of tokens to free, and returns a [Plan]; the guard then
// decides what of it is safe. Implementations must be safe for the
// concurrency their callers use; the built-in ones are stateless values.
type Policy interface {
	Propose(entries []Entry, need int) Plan
}

// PolicyFunc adapts a function to a [Policy].
type PolicyFunc func(entries []Entry, need int) Plan

// Propose calls f.
func (f PolicyFunc) Propose(entries []Entry, need int) Plan { return f(entries, need) }

// unitsInOrder groups entries by unit, in order of each unit's first entry.
func unitsInOrder(entries []Entry) (order []UnitID, members map[UnitID][]Entry) {
	members = make(map[UnitID][]Entry)
	for _, e := range entries {
		if _, ok := members[e.Unit]; !ok {
			order = append(order, e.Unit)
		}
		members[e.Unit] = append(members[e.Unit], e)
	}
	return order, members
}

func prunable(es []Entry) bool {
	for _, e := range es {
		if e.Pinned || e.Open || e.Pending {
			return false
		}
	}
	return true
}

// OldestFirst proposes whole units, oldest first, until enough tokens
// would be freed. It skips units that are pinned or in flight, and keeps
// the last Keep messages of the transcript, with the units they belong
// to, out of its proposals.
type OldestFirst struct {
	Keep int
}

// Propose implements [Policy].
func (o OldestFirst) Propose(entries []Entry, need int) Plan {
	kept := make(map[UnitID]bool)
	if o.Keep > 0 {
		// A unit with a message among the last Keep stays whole.
		for _, e := range entries[max(0, len(entries)-o.Keep):] {
			kept[e.Unit] = true
		}
	}
	order, members := unitsInOrder(entries)
	var p Plan
	freed := 0
	for _, u := range order {
		if freed >= need {
			break
		}
		es := members[u]
		if kept[u] || !prunable(es) {
			continue
		}
		for _, e := range es {
			p.Evict = append(p.Evict, e.ID)
			freed += e.Tokens
		}
	}
	return p
}

// LargestResultsFirst proposes the largest tool results first until
// enough tokens would be freed: their whole units, or with Stub set, the
// results alone replaced by stubs. When stubbing it skips results of
// MinTokens or fewer (zero means 8, the default stub's size), which a
// stub would not make smaller.
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
func (l LargestResultsFirst) Propose(entries []Entry, need int) Plan {
	_, members := unitsInOrder(entries)
	var results []Entry
	for _, e := range entries {
		if e.Result && !e.Stubbed {
			results = append(results, e)
		}
	}
	slices.SortStableFunc(results, func(a, b Entry) int { return b.Tokens - a.Tokens })
	var p Plan
	freed := 0
	taken := make(map[UnitID]bool)
	for _, e := range results {
		if freed >= need {
			break
		}
		if !prunable(members[e.Unit]) || taken[e.Unit] {
			continue
		}
		if l.Stub {
			if e.Tokens > stubFloor(l.MinTokens) {
				p.Stub = append(p.Stub, e.ID)
				freed += max(0, e.Tokens-DefaultStubTokens)
			}
			continue
		}
		taken[e.Unit] = true
		for _, m := range members[e.Unit] {
			p.Evict = append(p.Evict, m.ID)
			freed += m.Tokens
		}
	}
	return p
}

// KeepLastToolUses clears every tool use but the last Keep (default 3),
// oldest first, as Anthropic's clear_tool_uses context edit does. Tools
// named in Exclude are never cleared. With Stub set the results are
// replaced by placeholders and the calls stay, as that edit does;
// otherwise the whole units go. When stubbing it skips results of
// MinTokens or fewer (zero means 8, the default stub's size). It ignores
// need: once the guard asks, it clears everything older than the kept
// tool uses.
type KeepLastToolUses struct {
	Keep      int
	Exclude   []string
	Stub      bool
	MinTokens int
}

// Propose implements [Policy].
func (k KeepLastToolUses) Propose(entries []Entry, need int) Plan {
	keep := k.Keep
	if keep <= 0 {
		keep = 3
	}
	excluded := func(e Entry) bool {
		return slices.ContainsFunc(e.Tools, func(t string) bool { return slices.Contains(k.Exclude, t) })
	}
	// Tool uses are results; the last keep of them stay.
	var uses []Entry
	protect := make(map[UnitID]bool)
	for _, e := range entries {
		if !e.Result {
			continue
		}
		if excluded(e) {
			protect[e.Unit] = true
			continue
		}
		uses = append(uses, e)
	}
	if len(uses) <= keep {
		return Plan{}
	}
	for _, e := range uses[len(uses)-keep:] {
		protect[e.Unit] = true
	}
	_, members := unitsInOrder(entries)
	var p Plan
	taken := make(map[UnitID]bool)
	for _, e := range uses[:len(uses)-keep] {
		if !prunable(members[e.Unit]) {
			continue
		}
		if k.Stub {
			if !e.Stubbed && e.Tokens > stubFloor(k.MinTokens) {
				p.Stub = append(p.Stub, e.ID)
			}
			continue
		}
		if taken[e.Unit] || protect[e.Unit] {
			continue
		}
		taken[e.Unit] = true
		for _, m := range members[e.Unit] {
			p.Evict = append(p.Evict, m.ID)
		}
	}
	return p
}

package pruneguard

import (
	"math"
	"slices"

	"github.com/pruneguard/pruneguard/internal/facts"
)

// What no event says, taken after the replay: what the messages and
// calls became (stubs, needs, summaries' facts, ghost and stale calls,
// ids taken by calls since pruned) and what the prompt shows of each
// tool.

// marks takes what the messages and their calls became.
func (b *restorer) marks() error {
	c := b.c
	for i := range b.s.Messages {
		m, p := &b.s.Messages[i], int32(i)
		if m.NeededBy != nil {
			c.side(p).neededBy = append(make([]StepID, 0, len(*m.NeededBy)), unstrs[StepID](*m.NeededBy)...)
		}
		if m.Counted {
			if !m.Open {
				return badStateBecause("messages", string(m.ID), "counted but not open")
			}
			c.side(p).counted = true
		}
		if m.Stubbed {
			if m.Content != nil && !m.Open {
				return badStateBecause("messages", string(m.ID), "stubbed with content")
			}
			c.restub(p)
		}
		if err := b.summary(m, p); err != nil {
			return err
		}
		if err := b.callMarks(m, p); err != nil {
			return err
		}
	}
	return nil
}

// restub marks message p stubbed, its content (none, or what streamed
// after the stub) in place, as stub leaves it.
func (c *Context) restub(p int32) {
	c.unrequire(p)
	c.whole.Delete(p)
	c.bySize.Delete(c.sizeKey(p))
	x := c.msg(p)
	x.flags = x.flags&^mEmpty | mStubbed
}

// summary takes what a summary carries.
func (b *restorer) summary(m *savedMessage, p int32) error {
	if len(m.Carries) == 0 && len(m.Holds) == 0 {
		return nil
	}
	if Role(m.Role) != RoleSummary {
		return badStateBecause("messages", string(m.ID), "carries or holds facts but is no summary")
	}
	sd := b.c.side(p)
	for _, sp := range m.Carries {
		sd.carries = append(sd.carries, Pointer{Store: string(sp.Store), Key: string(sp.Key)})
	}
	for _, f := range m.Holds {
		kind, ok := factKind(f.Kind)
		if !ok || f.Text == "" {
			return badStateBecause("messages", string(m.ID), "a fact of no known kind")
		}
		sd.holds = append(sd.holds, heldFact{facts.Fact{Kind: kind, Text: string(f.Text), Key: string(f.Key)}, f.Kind})
	}
	return nil
}

// factKind returns the kind of the facts package a Fact's kind names.
func factKind(name string) (facts.Kind, bool) {
	if name == "text" || name == "pointer" {
		return facts.KindQuoted, true
	}
	for k := facts.Kind(1); k < 64; k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// callMarks takes what the calls of message p became: made while their
// tool's schema was not shown whole, under an older version of it, or
// with an id a later call took.
func (b *restorer) callMarks(m *savedMessage, p int32) error {
	c := b.c
	j := 0
	for k := range c.callsOf(p) {
		sc := &m.Calls[j]
		j++
		r := c.call(k)
		if sc.Ghost {
			r.flags |= cGhost
		}
		st := b.tools[sc.Tool]
		if st == nil {
			return badStateBecause("messages", string(m.ID), "a call to a tool not listed")
		}
		r.ver = st.Migrations
		if sc.Stale {
			if r.ver == 0 {
				return badStateBecause("messages", string(m.ID), "a stale call to a tool never migrated")
			}
			r.ver = 0
		}
		if sc.Superseded {
			if r.flags&cDone == 0 {
				return badStateBecause("messages", string(m.ID), "a superseded call waits")
			}
			if q, ok := c.byCall.Find(string(sc.ID)); ok && q == k {
				c.byCall.Remove(k)
			}
		}
	}
	return nil
}

// toolStates takes what the prompt shows of each tool, what the Counter
// counted of it, its counters and its latest calls, then brings the
// tools up to date.
func (b *restorer) toolStates() error {
	c := b.c
	room := math.MaxInt - c.heldTokens() // for what the tools' counts add
	for i := range c.tools {
		t := &c.tools[i]
		st := b.tools[str(t.t.Name)]
		if st == nil {
			return badStateBecause("tools", t.t.Name, "required but not listed")
		}
		if st.Withdrawn && st.Compressed != nil {
			return badStateBecause("tools", string(st.Name), "withdrawn and compressed")
		}
		for _, n := range []int{st.SchemaTokens, st.CompressedTokens, st.TombstoneTokens} {
			if n < 0 || n > room {
				return badStateBecause("tools", string(st.Name), ErrTokenOverflow)
			}
			room -= n
		}
		t.ver = st.Migrations
		t.compressed = slices.Clone(bytesOf(st.Compressed))
		c.registered(int32(i), false) // what the schema says: its properties, a compression's losses
		t.resident, t.tombstoned = !st.Withdrawn, st.Tombstoned
		t.schemaTok, t.compTok, t.tombTok = st.SchemaTokens, st.CompressedTokens, st.TombstoneTokens
		t.reexpand, t.ghostCalls, t.refetches = st.Reexpansions, st.GhostCalls, st.Refetches
		t.irreducibleRefetches, t.mismatchedRefetches = st.IrreducibleRefetches, st.MismatchedRefetches
		t.ghostCopies, t.ghostRejections, t.ghostDetours, t.ghostTriads = st.GhostCopies, st.GhostRejections, st.GhostDetours, st.GhostTriads
		if err := b.window(t, st); err != nil {
			return err
		}
		if err := b.lastCall(t, st); err != nil {
			return err
		}
	}
	for i := range c.tools {
		c.retally(int32(i))
		c.recheck(int32(i))
	}
	c.rescope()
	return nil
}

// window takes the latest calls of tool t.
func (b *restorer) window(t *toolRec, st *savedTool) error {
	if len(st.Recent) > ghostWindow {
		return badStateBecause("tools", string(st.Name), "more recent calls than a tool keeps")
	}
	t.window = [ghostWindow]int32{}
	for j, ref := range st.Recent {
		if ref == nil {
			continue
		}
		k, ok := b.findCall(ref)
		if !ok || b.c.call(k).tool != b.c.toolIdx[t.t.Name] {
			return badStateBecause("tools", string(st.Name), "a recent call to another tool, or none")
		}
		t.window[j] = k + 1
	}
	t.windowAt = uint8(len(st.Recent) % ghostWindow)
	return nil
}

// lastCall places tool t's latest call when it is no longer held: after
// the calls of t the replay made.
func (b *restorer) lastCall(t *toolRec, st *savedTool) error {
	if st.PrunedLast == nil {
		return nil
	}
	rank := int32(0) // the calls held before it
	if ref := st.PrunedLast.After; ref != nil {
		k, ok := b.findCall(ref)
		if !ok {
			return badStateBecause("tools", string(st.Name), "its last call after no call")
		}
		rank = k + 1
	}
	m := 2*int64(rank) + 1
	if m <= t.last {
		return badStateBecause("tools", string(st.Name), "its last call before one of its calls held")
	}
	t.last = m
	return nil
}

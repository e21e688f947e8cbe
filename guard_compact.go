package pruneguard

import (
	"errors"
	"math"
	"slices"
	"strconv"
)

// Compaction: a check of a Guard with a Summarizer replaces the oldest
// run of whole units it may with one summary before it evicts anything.

// fromSummary names the part of a check that compacts, for the log.
const fromSummary = "summary"

// compact replaces a run of the oldest units that may go with a summary
// the Summarizer writes, when the Context is over the target. With a
// Spill store it first spills the run, so that everything replaced can be
// read back and the summary need only carry the pointer. What stands in
// the way (a refused summary, a summarizer's error) is reported and the
// check goes on with evictions.
func (r *guardRun) compact() {
	c := r.c
	now := c.Tokens()
	if now <= r.target {
		return
	}
	r.v.arm()                                                 // the walks of the View, for the policy's Keeper, see the Context as it is
	run := r.summaryRun(2 * min(now-r.target, math.MaxInt/2)) // twice what must go, at most all
	if len(run) == 0 {
		return
	}
	b, err := c.Brief(Plan{Summary: &Summary{Replace: run}, Split: SplitStrict})
	if err != nil {
		r.compactFailed(err)
		return
	}
	if r.g.Spill != nil {
		if b = r.spillRun(b); b == nil {
			return
		}
	} else if b, err = r.trimToCarry(b); b == nil || err != nil {
		r.compactFailed(err)
		return
	}
	text, err := r.g.Summarizer.Summarize(r.ctx, b)
	if err != nil {
		r.compactFailed(err)
		return
	}
	s := &Summary{Replace: b.Replace, ID: r.summaryID(), Text: text, Pointers: b.Pointers}
	d, err := c.Prune(Plan{Summary: s, Split: SplitStrict})
	if err != nil {
		r.compactFailed(err)
		return
	}
	if r.g.Screen != nil {
		if sv := r.g.Screen.Screen(d); len(sv) > 0 {
			r.report(sv)
			r.takeBack(d.Evict)
			return
		}
	}
	if err := c.Apply(d); err != nil {
		r.res.Reason = err
		return
	}
	r.applied(d)
	r.res.Decisions = append(r.res.Decisions, d)
	r.log.decision(r, d, fromSummary)
}

// compactFailed records what kept a compaction from being applied.
func (r *guardRun) compactFailed(err error) {
	if err == nil {
		return
	}
	r.res.Reason = err
	var pe *PruneError
	if errors.As(err, &pe) {
		r.report(pe.Violations)
	}
}

// summaryRun returns the messages of the oldest run of whole units that
// may go, from the first such unit on, until they hold at least want
// tokens or the next unit may not go: a unit pinned, in flight or unread,
// one the policy keeps (see [Keeper]) or hides, or one whose messages
// interleave with a unit outside the run.
func (r *guardRun) summaryRun(want int) []MessageID {
	keep, keeps := r.kept()
	c := r.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	bound := c.msgs.Len()
	if keeps {
		if q, ok := c.find(keep); ok {
			bound = q
		}
	}
	var run []int32
	tokens, last := 0, none
	for u := c.firstUnit(); u != none && tokens < want; u = c.unit(u).next {
		un := c.unit(u)
		ok := c.proposable(u) && un.tail < bound && !c.hides(r.v.hidden, un.head)
		switch {
		case !ok && len(run) == 0:
			continue // before the run
		case !ok, last != none && un.head < last:
			u = none // the run ends here
		}
		if u == none {
			break
		}
		for p := range c.members(u) {
			run = append(run, p)
			tokens += c.tokensOf(p)
		}
		last = max(last, un.tail)
	}
	ids := c.names(run)
	out := make([]MessageID, len(ids))
	for i, id := range ids {
		out[i] = MessageID(id)
	}
	return out
}

// spillRun spills the messages of the run b describes that have no
// resolvable pointer, as one segment, and returns the Brief of the run
// with their pointers; nil when the spill failed (it is reported).
func (r *guardRun) spillRun(b *Brief) *Brief {
	var cands []spillCand
	for _, u := range b.Units {
		cands = append(cands, spillCand{unit: u})
	}
	if !r.spill(cands) && len(r.res.SpillErrors) > 0 {
		return nil
	}
	nb, err := r.c.Brief(Plan{Summary: &Summary{Replace: b.Replace}, Split: SplitStrict})
	if err != nil {
		r.compactFailed(err)
		return nil
	}
	return nb
}

// trimToCarry cuts a run with no store to spill to before the unit of
// its first message that only a pointer could stand for (see
// [Brief.Spill]), and returns the Brief of what is left, or nil when
// nothing is.
func (r *guardRun) trimToCarry(b *Brief) (*Brief, error) {
	if len(b.Spill) == 0 {
		return b, nil
	}
	u, _ := r.c.UnitOf(b.Spill[0])
	i := slices.Index(b.Replace, MessageID(u.ID))
	if i <= 0 {
		return nil, nil
	}
	return r.c.Brief(Plan{Summary: &Summary{Replace: b.Replace[:i]}, Split: SplitStrict})
}

// summaryID returns an id no message of the Context holds for the
// summary of this check.
func (r *guardRun) summaryID() MessageID {
	id := MessageID(r.res.Compaction + "-summary")
	for n := 2; ; n++ {
		if _, ok := r.c.Message(id); !ok {
			return id
		}
		id = MessageID(r.res.Compaction + "-summary-" + strconv.Itoa(n))
	}
}

package pruneguard

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Compaction: a check of a Guard with a Summarizer replaces the oldest
// runs of whole units it may with one summary each before it evicts
// anything.

// fromSummary names the part of a check that compacts, for the log.
const fromSummary = "summary"

// compact replaces the oldest runs of units that may go with summaries
// the Summarizer writes, when the Context is over the target: the runs,
// oldest first, until they hold twice what the check must free (a run
// ends at a unit that may not go, the next starts after it). The runs
// are summarized smallest first, each with room for what the runs left
// hold beyond what must still be freed, in proportion to its share of
// them: what a summary costs beyond its room (a header, a pointer line
// that a short run cannot pay for) is taken from the rooms of the larger
// runs after it, not from a summary evicted at the end. With a Spill
// store each run is first spilled, so that everything replaced can be
// read back and the summary need only carry the pointer. What stands in
// the way (a refused summary, a summarizer's error) is reported and the
// check goes on with the next run, then with evictions.
func (r *guardRun) compact() {
	c := r.c
	need := c.Tokens() - r.target
	if need <= 0 {
		return
	}
	r.v.arm()                                                 // the walks of the View, for the policy's Keeper, see the Context as it is
	runs, held := r.summaryRuns(2 * min(need, math.MaxInt/2)) // twice what must go, at most all
	slices.SortStableFunc(runs, func(a, b summaryRun) int { return a.tokens - b.tokens })
	for _, run := range runs {
		if need = c.Tokens() - r.target; need <= 0 {
			return
		}
		r.compactRun(run, need, held)
		held -= run.tokens
	}
}

// compactRun replaces run with a summary, which may hold what the run
// holds beyond its share of need, held being what the runs left to
// summarize hold, run's own included. A run cut short of what only a
// pointer could stand for shares need by what is left of it: the part
// cut off frees nothing.
func (r *guardRun) compactRun(run summaryRun, need, held int) {
	c := r.c
	b, err := c.Brief(Plan{Summary: &Summary{Replace: run.ids}, Split: SplitStrict})
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
	held -= max(0, run.tokens-b.Tokens)
	// What the summary may hold for the check to reach its target.
	room := b.Tokens - int((int64(need)*int64(b.Tokens)+int64(held)-1)/int64(max(held, 1)))
	texts := r.summarize(b, room)
	if len(texts) == 0 {
		return
	}
	id := r.summaryID()
	var d *Decision
	for _, text := range texts { // the shorter first; the first written when the gates refuse it
		s := &Summary{Replace: b.Replace, ID: id, Text: text, Pointers: b.Pointers}
		if d, err = c.Prune(Plan{Summary: s, Split: SplitStrict}); err == nil {
			break
		}
	}
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

// summarize asks the Summarizer for the summary of b in room tokens as
// the Context counts it: Room is room less a little for what the
// runtime's message around the text costs, and a summary that the
// Context counts over room is asked for again, once, with a Room of the
// first Room or its text's tokens (as Config.Counter counts), whichever
// is fewer, less the excess, so that a summary a few tokens too long is
// not evicted whole to make up for them. It returns the texts to try, in
// order: the second, when it is shorter, then the first (which stands
// when the gates refuse the second, or the second call fails or writes
// nothing); none when the Summarizer failed (the error is reported).
func (r *guardRun) summarize(b *Brief, room int) []string {
	b.Room = max(1, room-8-room/32)
	text, err := r.g.Summarizer.Summarize(r.ctx, b)
	if err != nil {
		r.res.SummaryErrors = append(r.res.SummaryErrors, err)
		r.log.summaryFailed(r, b, err)
		r.compactFailed(err)
		return nil
	}
	n := r.c.summaryTokens(&Summary{Text: text})
	if over := n - room; over > 0 && b.Room > 1 {
		b.Room = max(1, min(b.Room, r.c.textTokens(text))-over)
		if again, err := r.g.Summarizer.Summarize(r.ctx, b); err == nil && strings.TrimSpace(again) != "" &&
			r.c.summaryTokens(&Summary{Text: again}) < n {
			return []string{again, text}
		}
	}
	return []string{text}
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

// summaryRuns returns the runs of whole units that may go, oldest
// first, until they hold at least want tokens, and what they hold. A run
// takes the units in the order of their first messages, a unit that
// starts among its messages included (the last run goes on past want
// for those), and ends at a unit that may not go (pinned, in flight or
// unread, one the policy keeps, see [Keeper], or hides); the next run
// starts with the next unit that may go.
func (r *guardRun) summaryRuns(want int) (runs []summaryRun, held int) {
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
	last, from := none, 0
	end := func() {
		if len(run) > 0 {
			runs = append(runs, summaryRun{ids: c.messageIDs(run), tokens: held - from})
		}
		run, last, from = run[:0], none, held
	}
	for u := c.firstUnit(); u != none && (held < want || c.unit(u).head < last); u = c.unit(u).next {
		un := c.unit(u)
		if !c.proposable(u) || un.tail >= bound || c.hides(r.v.hidden, un.head) {
			end()
			continue
		}
		for p := range c.members(u) {
			run = append(run, p)
			held += c.tokensOf(p)
		}
		last = max(last, un.tail)
	}
	end()
	return runs, held
}

// A summaryRun is a run of whole units a check may replace with one
// summary: its messages, oldest first, and the tokens they hold.
type summaryRun struct {
	ids    []MessageID
	tokens int
}

// messageIDs returns the ids of the messages at ps. Under the read lock.
func (c *Context) messageIDs(ps []int32) []MessageID {
	ids := c.names(ps)
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

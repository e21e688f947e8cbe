package wire

import (
	"slices"

	"github.com/pruneguard/pruneguard"
)

// A Guarded writes the summary of a decision in the place of the first
// message of the run it replaces (see the package documentation,
// "Summaries"): that message's index is the summary's slot from then on,
// kept by the edit state, written as the summary message; the other
// messages of the run are removed. A later decision may evict the
// summary or replace it, with what follows it, by a new summary, which
// takes the same slot.

// CodeSummaryNotSmaller is the code of a "wire" refusal of a summary
// that, as written, would not make the body smaller than the run it
// replaces.
const CodeSummaryNotSmaller = "summary-not-smaller"

// sumSlot is a summary the applied decisions wrote, in the slot of the
// message whose place it took.
type sumSlot struct {
	id     pruneguard.MessageID
	f      facts
	tokens int // written on its own
}

// summaryOf returns the summary in slot i, or nil.
func (g *Guarded) summaryOf(i int32) *sumSlot {
	if g.sum == nil {
		return nil
	}
	return g.sum.at[i]
}

// base returns message i as the applied edits write it, before stubs:
// the summary in its slot, the message read otherwise.
func (g *Guarded) base(i int32) *facts {
	if s := g.summaryOf(i); s != nil {
		return &s.f
	}
	return &g.src.facts[i]
}

// id returns the id the Context gives message i: its summary's, or
// [ID](i).
func (g *Guarded) id(i int) pruneguard.MessageID {
	if s := g.summaryOf(int32(i)); s != nil {
		return s.id
	}
	return ID(i)
}

// summaryRun returns the indexes of the messages decision d replaces,
// in order, and the summary as written; ok is false when d names a
// message the body does not hold or has removed.
func (g *Guarded) summaryRun(d *pruneguard.Decision) (run []int32, f *facts, ok bool) {
	run = make([]int32, 0, len(d.Evict))
	for _, id := range d.Evict {
		i, ok := g.Index(id)
		if !ok || g.seq.removed[i] {
			return nil, nil, false
		}
		run = append(run, int32(i))
	}
	slices.Sort(run)
	sf, ok := summaryFacts(g.src.provider(), d.Summary.Text)
	if len(run) == 0 || !ok {
		return nil, nil, false
	}
	return run, &sf, true
}

// summaryEdits returns the edits of writing summary f in the place of
// run[0] and removing the rest of the run.
func (g *Guarded) summaryEdits(run []int32, f *facts) *edits {
	e := g.seq.newEditsFor(len(run)-1, 0)
	for _, i := range run[1:] {
		e.remove(i)
	}
	e.rewrite(run[0], f)
	return e
}

// screenSummary screens the decision of a summary: the body with the
// summary in the place of its run must break no provider rule the input
// kept, and be smaller. A summary is one edit: it passes whole or is
// refused whole, naming its units.
func (g *Guarded) screenSummary(d *pruneguard.Decision) (refused []Refusal, all bool) {
	run, f, ok := g.summaryRun(d)
	if !ok {
		return []Refusal{{Gate: "wire", Code: CodeScreenUnsplit, Units: d.Units, Messages: d.Evict}}, false
	}
	refuse := func(code, detail string) ([]Refusal, bool) {
		r := Refusal{Gate: "wire", Code: code, Units: d.Units, Messages: d.Evict, Detail: detail}
		for _, i := range run {
			r.Indexes = append(r.Indexes, int(i))
		}
		return []Refusal{r}, false
	}
	skip, refs, ts, base := g.screenSchemas(d, nil)
	if len(refs) > 0 || len(skip) > 0 {
		return refuse(refs[0].Code, refs[0].Detail)
	}
	e := g.summaryEdits(run, f)
	delta, after := g.rules.delta(view{s: g.seq}, e, ts)
	if nv := g.rules.fresh(base, delta, after); len(nv) > 0 {
		return refuse(nv[0].Rule, nv[0].Message)
	}
	freed := 0
	for _, i := range run {
		freed += g.written(int(i))
	}
	if g.summaryCost(run, f) >= freed {
		return refuse(CodeSummaryNotSmaller, "")
	}
	if ts == g.tools {
		g.screened = &screened{d: d, version: g.seq.version, delta: delta, e: e}
	}
	return nil, true
}

// summaryCost is what summary f costs written in the place of run: on
// its own, or, joining the user message before the run, what it adds to
// that message.
func (g *Guarded) summaryCost(run []int32, f *facts) int {
	n := countFacts(g.count, f)
	if !f.joins {
		return n
	}
	prev := g.seq.prev[run[0]]
	if prev < 0 || !joined(f, g.current(int(prev))) {
		return n
	}
	pf := g.current(int(prev))
	if jf, ok := joinedFacts(g.src.provider(), pf, f); ok {
		return countFacts(g.count, &jf) - g.written(int(prev))
	}
	return n
}

// recordSummary carries the applied decision of a summary out on the
// edit state: the summary in the place of the run's first message, the
// rest of the run removed; u, when set, is the journal's record of it.
func (g *Guarded) recordSummary(d *pruneguard.Decision, u *undo) {
	run, f, ok := g.summaryRun(d)
	if !ok {
		return
	}
	var e *edits
	var delta map[string]int
	if sc := g.screened; sc != nil && sc.version == g.seq.version && sameDecision(sc.d, d) && sc.e != nil && sc.e.gen == g.seq.gen {
		e, delta = sc.e, sc.delta
		f = e.sub.f
	} else {
		e = g.summaryEdits(run, f)
		delta, _ = g.rules.delta(view{s: g.seq}, e, g.tools)
	}
	g.screened = nil
	g.rules.commit(delta)
	u.add(delta)
	for _, i := range run {
		g.msgTokens -= g.written(int(i))
	}
	first := run[0]
	slot := &sumSlot{id: d.Summary.ID, f: *f, tokens: countFacts(g.count, f)}
	g.msgTokens += slot.tokens
	g.noteSummary(first, slot, run[1:], u)
	removed, _ := g.rules.applyEdits(e, u != nil)
	if u != nil {
		u.removed = removed
	}
}

// noteSummary puts summary s in slot first, forgets the summaries of the
// slots gone, and records in u how to take it back.
func (g *Guarded) noteSummary(first int32, s *sumSlot, gone []int32, u *undo) {
	if g.sum == nil {
		g.sum = &guardSums{at: map[int32]*sumSlot{}, byID: map[pruneguard.MessageID]int32{}}
	}
	sums, byID := g.sum.at, g.sum.byID
	prev := map[int32]*sumSlot{first: sums[first]}
	for _, i := range gone {
		if old := sums[i]; old != nil {
			prev[i] = old
		}
	}
	mask, stubbed, stub := g.rules.gmask[first], g.seq.stubbed[first], g.stubs[int(first)]
	for i, old := range prev {
		if old != nil {
			delete(byID, old.id)
			delete(sums, i)
		}
	}
	sums[first] = s
	byID[s.id] = first
	g.rules.gmask[first] = globalsMask(&s.f)
	g.seq.stubbed[first] = false
	delete(g.stubs, int(first))
	g.seq.version++
	if u == nil {
		return
	}
	if g.sumUndo == nil {
		g.sumUndo = map[int]func(){}
	}
	g.sumUndo[len(g.journal)-1] = func() {
		delete(byID, s.id)
		delete(sums, first)
		for i, old := range prev {
			if old != nil {
				sums[i] = old
				byID[old.id] = i
			}
		}
		g.rules.gmask[first], g.seq.stubbed[first] = mask, stubbed
		if stub != nil {
			g.stubs[int(first)] = stub
		}
		g.seq.version++
	}
}

// writtenFrom returns kept message i as written, with the summaries
// after it that join it written inside it (see provider.summaryJoins),
// and the kept message after those.
func (g *Guarded) writtenFrom(i int32) (*facts, int32) {
	f := g.current(int(i))
	j := g.seq.next[i]
	for j >= 0 && g.sum != nil {
		s := g.sum.at[j]
		if s == nil || !joined(&s.f, f) {
			break
		}
		jf, ok := joinedFacts(g.src.provider(), f, &s.f)
		if !ok {
			break
		}
		f = &jf
		j = g.seq.next[j]
	}
	return f, j
}

// joinTokens is what the summaries that join the message before them
// change in the body's tokens, against counting them on their own as
// msgTokens does. It is found again when the edit state changed since.
func (g *Guarded) joinTokens() int {
	if g.sum == nil || !g.src.provider().summaryJoins {
		return 0
	}
	join := &g.sum.join
	if join.version == g.seq.version && join.sys == g.sysFacts {
		return join.delta
	}
	slots := make([]int32, 0, len(g.sum.at))
	for i := range g.sum.at {
		if !g.seq.removed[i] {
			slots = append(slots, i)
		}
	}
	slices.Sort(slots)
	delta := 0
	done := map[int32]bool{}
	for _, i := range slots {
		prev := g.seq.prev[i]
		if done[i] || prev < 0 {
			continue
		}
		f, end := g.writtenFrom(prev)
		if end == g.seq.next[prev] {
			continue // nothing joins prev
		}
		delta += countFacts(g.count, f) - g.written(int(prev))
		for j := g.seq.next[prev]; j != end; j = g.seq.next[j] {
			delta -= g.written(int(j))
			done[j] = true
		}
	}
	join.version, join.sys, join.delta = g.seq.version, g.sysFacts, delta
	return delta
}

// guardSums are the summaries the applied decisions of a Guarded wrote:
// each by its slot and the slot of each by its id, with the last count
// of what those that join a message change.
type guardSums struct {
	at   map[int32]*sumSlot
	byID map[pruneguard.MessageID]int32
	join joinCache
}

// joinCache is the last count of joinTokens, for the edit state of
// version (and system message sys).
type joinCache struct {
	version uint64
	sys     *facts
	delta   int
}

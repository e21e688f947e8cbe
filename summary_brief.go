package pruneguard

import (
	"slices"
)

// Brief returns what a summary of the run p.Summary names must carry:
// the "what must survive" request a runtime hands its summarizer before
// it writes. Only p.Summary.Replace and p.Split are read (and p's schema
// edits, checked as Prune checks them); the run is taken as Prune would
// take it, so a Brief that is returned names a run the commit boundary
// lets go whole. It fails as Prune does when the boundary refuses the run
// (a [*DeferredError], or a [*PruneError] with [CodeGap], [CodeUnread],
// [CodePinned] ... under SplitStrict, or, under any Split, with the
// refusals that left nothing of the run), and with an [*InputError] for a
// plan that names what the Context does not hold.
//
// It changes nothing. It costs time in proportion to the run and the
// bytes of its text (each message's facts are found in it), not to the
// length of the Context.
func (c *Context) Brief(p Plan) (*Brief, error) {
	if p.Summary == nil {
		return nil, inputErr("brief", "", ErrEmptySummary)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	at, err := c.checkSummary(p, planHint{}, false)
	if err != nil {
		return nil, err
	}
	c.pruneMu.Lock()
	defer c.pruneMu.Unlock()
	r := c.newRun(p, at)
	for _, step := range []func(*pruneRun){(*pruneRun).takeMessages, (*pruneRun).boundaryGate, (*pruneRun).summaryRun} {
		step(r)
		if r.deferred != nil {
			return nil, r.deferred
		}
	}
	r.refuseEmptySummary()
	if len(r.violations) > 0 {
		sortViolations(r.violations)
		r.stampViolations(r.violations)
		return nil, &PruneError{Violations: r.violations}
	}
	return r.brief(), nil
}

// brief describes the run r took, in transcript order.
func (r *pruneRun) brief() *Brief {
	c := r.c
	run := slices.Clone(r.evict)
	slices.Sort(run)
	b := &Brief{Replace: make([]MessageID, len(run)), Messages: make([]BriefMessage, len(run))}
	seen := map[Pointer]bool{}
	for i, p := range run {
		bm := r.briefMessage(p)
		b.Replace[i] = bm.ID
		b.Tokens += c.tokensOf(p)
		if u := c.unitID(c.msg(p).unit); !slices.Contains(b.Units, u) {
			b.Units = append(b.Units, u)
		}
		switch {
		case bm.Withheld:
			b.Withheld = append(b.Withheld, bm.ID)
		}
		if bm.Required && bm.Pointer.IsZero() {
			b.Facts = append(b.Facts, bm.Facts...)
		}
		if bm.Required && !bm.Pointer.IsZero() && !seen[bm.Pointer] {
			seen[bm.Pointer] = true
			b.Pointers = append(b.Pointers, bm.Pointer)
		}
		b.Messages[i] = bm
	}
	for i := range b.Messages {
		if bm := &b.Messages[i]; bm.Pointer.IsZero() && (bm.Withheld || bm.Required && r.mustSpill(run[i])) {
			b.Spill = append(b.Spill, bm.ID)
		}
	}
	return b
}

// briefMessage describes message p of a run.
func (r *pruneRun) briefMessage(p int32) BriefMessage {
	c := r.c
	x := c.msg(p)
	m := c.copy(p)
	bm := BriefMessage{ID: m.ID, Role: m.Role, Class: r.classOf(p), Answers: m.Answers, IsError: m.IsError,
		Stubbed: x.flags&mStubbed != 0}
	if ptr := c.pointer(p); c.resolvable(ptr) {
		bm.Pointer = ptr
	}
	for _, k := range m.Calls {
		bm.Tools = appendNew(bm.Tools, k.Tool)
	}
	for k := range c.answersOf(p) {
		bm.Tools = appendNew(bm.Tools, c.tools[c.call(k).tool].t.Name)
	}
	bm.Required = !c.sealed && bm.Class != Reconstructible
	if x.facts&OneTimeSecret != 0 {
		bm.Withheld = true
		for _, k := range m.Calls {
			k.Args = nil
			bm.Calls = append(bm.Calls, k)
		}
		return bm
	}
	bm.Calls = m.Calls
	if !bm.Stubbed {
		bm.Content = slices.Clone(c.textOf(p))
	}
	fs, _ := r.sum.factsOf(c, p)
	for _, f := range fs {
		bm.Facts = append(bm.Facts, f.public(bm.ID))
	}
	return bm
}

// mustSpill reports whether message p of a run can be replaced only
// behind its pointer: a message marked with Facts whose text is too long
// to carry and holds no fact to carry.
func (r *pruneRun) mustSpill(p int32) bool {
	_, spill := r.sum.factsOf(r.c, p)
	return spill
}

// appendNew appends s to list unless it holds it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

package pruneguard

import (
	"bytes"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard/internal/facts"
)

// A summary plan runs the pipeline of an eviction of its run (the
// closing set is the run), with two steps of its own: the boundary gate
// is followed by summaryRun, which refuses a run with a message that
// stays between its ends, and the regenerability gate judges each
// message replaced by summaryCheck, which asks what the summary carries,
// instead of regenCheck.

// maxVerbatim is the longest text, in bytes, that a message marked with
// Facts but holding no fact found must have carried whole; a longer one
// must be spilled.
const maxVerbatim = 480

// sumRun is the state of a summary plan in a prune run.
type sumRun struct {
	s       *Summary
	carrier *facts.Carrier
	carried map[Pointer]bool     // pointers the summary carries: listed and named in the text
	found   map[int32]foundFacts // the facts of the messages of the run, as found
}

// foundFacts is what factsOf found in a message.
type foundFacts struct {
	fs    []heldFact
	spill bool
}

// factsOf returns the facts of message p of the run, finding them once.
func (sr *sumRun) factsOf(c *Context, p int32) ([]heldFact, bool) {
	if f, ok := sr.found[p]; ok {
		return f.fs, f.spill
	}
	fs, spill := c.factsOf(p)
	if sr.found == nil {
		sr.found = make(map[int32]foundFacts)
	}
	sr.found[p] = foundFacts{fs, spill}
	return fs, spill
}

// newSumRun prepares the checks of summary s.
func newSumRun(s *Summary) *sumRun {
	sr := &sumRun{s: s, carrier: facts.NewCarrier(s.Text)}
	for _, p := range s.Pointers {
		if !p.IsZero() && strings.Contains(s.Text, p.Key) {
			if sr.carried == nil {
				sr.carried = make(map[Pointer]bool, len(s.Pointers))
			}
			sr.carried[p] = true
		}
	}
	return sr
}

// checkSummary rejects a summary plan that is malformed, and returns
// the positions of the messages its Summary replaces. With message
// unset, the summary message itself (id, text, tokens) is not looked at,
// as for a [Brief].
func (c *Context) checkSummary(p Plan, h planHint, message bool) ([]int32, error) {
	s := p.Summary
	switch {
	case len(p.Evict) > 0 || len(p.Stub) > 0:
		return nil, inputErr("plan.summary", string(s.ID), ErrSummaryPlan)
	case len(s.Replace) == 0:
		return nil, inputErr("plan.summary", string(s.ID), ErrEmptySummary)
	}
	if message {
		switch {
		case s.ID == "" || strings.TrimSpace(s.Text) == "":
			return nil, inputErr("plan.summary", string(s.ID), ErrEmptySummary)
		case s.Tokens < 0:
			return nil, inputErr("plan.summary", string(s.ID), ErrNegativeTokens)
		}
		if _, held := c.find(s.ID); held {
			return nil, inputErr("plan.summary", string(s.ID), ErrDuplicateMessage)
		}
	}
	at := make([]int32, 0, len(s.Replace))
	for i, id := range s.Replace {
		q, ok := c.locate(id, h.evict, i)
		if !ok {
			return nil, inputErr("plan.summary.replace", string(id), ErrUnknownMessage)
		}
		at = append(at, q)
	}
	q := p
	q.Summary = nil
	if _, err := c.checkPlan(q, planHint{}); err != nil {
		return nil, err
	}
	return at, nil
}

// summaryTokens returns what summary s counts; a negative count is
// zero.
func (c *Context) summaryTokens(s *Summary) int {
	if s.Tokens > 0 {
		return s.Tokens
	}
	if c.cfg.SummaryCounter != nil {
		return max(0, c.cfg.SummaryCounter.Count([]byte(s.Text)))
	}
	return c.textTokens(s.Text)
}

// textTokens returns what Config.Counter, or ApproxCounter without one,
// counts of text; a negative count is zero.
func (c *Context) textTokens(text string) int {
	if c.cfg.Counter != nil {
		return max(0, c.cfg.Counter.Count([]byte(text)))
	}
	return ApproxCounter{}.Count([]byte(text))
}

// summaryRun refuses a run that leaves a message between its first and
// its last message: the summary takes the place of the first, and would
// move what comes after it. It runs after the boundary gate, on the
// units it took.
func (r *pruneRun) summaryRun() {
	if r.sum == nil || len(r.evict) == 0 {
		return
	}
	c := r.c
	first, last := slices.Min(r.evict), slices.Max(r.evict)
	var gap []int32
	for i := range last - first { // from first (in the run) up to last
		if q := first + i; c.msg(q).flags&mDead == 0 && !r.has(q, kEvict) {
			gap = append(gap, q)
		}
	}
	if len(gap) == 0 {
		return
	}
	v := &Violation{Gate: GateBoundary, Code: CodeGap, pos: uint64(gap[0])}
	for _, q := range gap {
		v.Messages = append(v.Messages, c.id(q))
		if id := c.unitID(c.msg(q).unit); !slices.Contains(v.Units, id) {
			v.Units = append(v.Units, id)
		}
	}
	r.object(v)
}

// refuseEmptySummary makes the refusals that left nothing of a
// summary's run the violations that refuse the summary: a summary
// replaces a run, never nothing. (A run is left empty only by them.)
func (r *pruneRun) refuseEmptySummary() {
	if r.sum != nil && len(r.evict) == 0 && len(r.violations) == 0 {
		r.violations, r.refused = r.refused, nil
	}
}

// summaryCheck is regenCheck for message p of a summary's run: the
// violations that keep the summary from standing for it, or nil.
func (r *pruneRun) summaryCheck(p int32) []*Violation {
	c := r.c
	v := func(code Code) *Violation {
		return &Violation{Gate: GateRegen, Code: code, Units: []UnitID{c.unitID(c.msg(p).unit)}, Messages: []MessageID{c.id(p)}, pos: uint64(p)}
	}
	if c.refs(p) > 0 {
		ref := v(CodeReferenced)
		ref.Steps = c.stepsOf(p)
		return []*Violation{ref}
	}
	if c.sealed {
		return nil
	}
	if ptr := c.pointer(p); r.sum.carried[ptr] && c.resolvable(ptr) {
		r.relied = append(r.relied, p)
		return nil
	}
	x := c.msg(p)
	if x.facts&OneTimeSecret != 0 {
		return []*Violation{v(CodeSecret)}
	}
	if r.classOf(p) == Reconstructible {
		return nil
	}
	fs, spill := r.sum.factsOf(c, p)
	if spill {
		return []*Violation{v(x.facts.reasons()[0])}
	}
	var missing []Fact
	for _, f := range fs {
		if !r.sum.carrier.Carries(f.Fact) {
			missing = append(missing, f.public(c.id(p)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	m := v(CodeMissingFact)
	m.Facts = missing
	return []*Violation{m}
}

// summarySize refuses a summary that is not smaller than its run.
func (r *pruneRun) summarySize() {
	if r.sum == nil {
		return
	}
	c := r.c
	if n := c.summaryTokens(r.sum.s); n >= r.evictTokens() && len(r.evict) > 0 {
		p := slices.Min(r.evict)
		r.object(&Violation{Gate: GateRegen, Code: CodeSummaryGrows, Units: []UnitID{c.unitID(c.msg(p).unit)},
			Messages: []MessageID{r.sum.s.ID}, pos: uint64(p)})
	}
}

// textOf returns the text of message p: its content, or, when it has
// none and Config.Text is set, what the source gives. A stubbed message
// has no text: its content left the prompt already.
func (c *Context) textOf(p int32) []byte {
	x := c.msg(p)
	if x.flags&mStubbed != 0 {
		return nil
	}
	if b := c.content(p); len(b) > 0 || c.cfg.Text == nil {
		return b
	}
	return c.cfg.Text.Text(c.id(p))
}

// heldFact is a fact of a message as the checks need it: what the
// facts package found (its key says how a setting may be written), and
// the kind named as [Fact] names it.
type heldFact struct {
	facts.Fact
	kind string
}

// public returns f as a [Fact] of message id.
func (f heldFact) public(id MessageID) Fact { return Fact{Message: id, Kind: f.kind, Text: f.Text} }

// factsOf returns the facts of message p: those found in its text and
// its calls' arguments; for a summary, the keys of the pointers it
// carried too; and, for a message marked with Facts holding none of
// them, its whole text when it is short. spill reports such a message
// whose text is too long to carry: only its pointer can stand for it.
func (c *Context) factsOf(p int32) (fs []heldFact, spill bool) {
	text := c.textOf(p)
	add := func(found []facts.Fact) {
		for _, f := range found {
			fs = append(fs, heldFact{f, f.Kind.String()})
		}
	}
	if s := c.sideOf(p); s != nil && c.role(p) == RoleSummary {
		// A summary's facts are those it was found to carry, all of
		// them, with the keys of its pointers.
		fs = slices.Clone(s.holds)
		for _, ptr := range s.carries {
			fs = append(fs, heldFact{facts.Fact{Kind: facts.KindQuoted, Text: ptr.Key}, "pointer"})
		}
		return dedupeFacts(fs), false
	}
	add(facts.Extract(string(text)))
	for k := range c.callsOf(p) {
		add(facts.Extract(string(c.args(k))))
	}
	fs = dedupeFacts(fs)
	if len(fs) > 0 || c.msg(p).facts == 0 {
		return fs, false
	}
	t := bytes.TrimSpace(text)
	if len(t) == 0 {
		return nil, false
	}
	if len(t) > maxVerbatim {
		return nil, true
	}
	return []heldFact{{facts.Fact{Kind: facts.KindQuoted, Text: string(t)}, "text"}}, false
}

// dedupeFacts drops the facts whose text came earlier, in place.
func dedupeFacts(fs []heldFact) []heldFact {
	if len(fs) < 2 {
		return fs
	}
	seen := make(map[string]bool, len(fs))
	return slices.DeleteFunc(fs, func(f heldFact) bool {
		if seen[f.Text] {
			return true
		}
		seen[f.Text] = true
		return false
	})
}

// evictTokens returns the tokens of the closing set.
func (r *pruneRun) evictTokens() int {
	n := 0
	for _, p := range r.evict {
		n += r.c.tokensOf(p)
	}
	return n
}

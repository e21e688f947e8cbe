package wire

import (
	"bytes"
	"context"
	"errors"
	"hash/maphash"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// CodeStubNotSmaller is the code of a "wire" refusal of a stub that would
// not make its message smaller.
const CodeStubNotSmaller = "stub-not-smaller"

// CodeSchemaNotSmaller is the code of a "wire" refusal of a schema
// withdrawal or compression that would not make the body smaller: a
// tombstone line, written into the system prompt, can cost more than the
// small schema it stands in for.
const CodeSchemaNotSmaller = "schema-not-smaller"

// CodeEmptyTools is the code of a "wire" refusal of a schema withdrawal
// that would leave a tools array (OpenAI Chat tools or functions,
// Responses or Anthropic tools, a Gemini functionDeclarations list,
// Bedrock toolConfig.tools) empty when the input's was not: some
// OpenAI-compatible servers (vLLM) reject an empty tools array, as
// OpenAI Chat and Bedrock do, so the screen keeps the last entry.
const CodeEmptyTools = "empty-tools"

// CodeStubUnsupported is the code of a "wire" refusal of a stub of a
// result whose content cannot become text: a Responses computer call's
// screenshot, or a client tool search's tool list.
const CodeStubUnsupported = "stub-unsupported"

// ErrScreen is matched (with errors.Is) by the [*ScreenError] that
// [Guarded.Apply] returns for a decision the wire screen refuses.
var ErrScreen = errors.New("wire: the decision fails the provider-rule screen")

// ScreenError is returned by [Guarded.Apply] for a decision it did not
// screen itself (one taken from the Context's own Prune) that would
// leave the body breaking a provider rule the input kept, or would not
// make it smaller. Nothing was applied. Refusals name what the screen
// refused, as [Guarded.Prune] reports it. The zero value refuses nothing
// in particular.
type ScreenError struct {
	Refusals []Refusal
}

func (e *ScreenError) Error() string {
	if len(e.Refusals) == 0 {
		return ErrScreen.Error()
	}
	r := e.Refusals[0]
	msg := ErrScreen.Error() + ": " + r.Code
	if r.Detail != "" {
		msg += ": " + r.Detail
	}
	if len(e.Refusals) > 1 {
		msg += " (and " + strconv.Itoa(len(e.Refusals)-1) + " more)"
	}
	return msg
}

// Is reports target == ErrScreen.
func (e *ScreenError) Is(target error) bool { return target == ErrScreen }

// candidate is one unit of a decision's eviction set, or one stub: the
// messages of the screened body it removes or stubs, and the messages it
// names in a refusal.
type candidate struct {
	unit   pruneguard.UnitID
	rm, st []int32
	ids    []pruneguard.MessageID
	idx    []int // the ids' positions
	first  int32
}

// screen checks what a decision would do to the body, schema edits and
// tombstones included. It returns the candidates that keep the body no
// worse than the input, and refusals for the others; skip names the
// tools whose schema edits (withdrawal, compression, with their
// tombstones) are refused, because they would not shrink the body or
// would break a rule. all reports that nothing was refused. It looks at
// the messages the decision edits and those around them, and at the
// top-level fields its schema edits touch, not at the whole body.
func (g *Guarded) screen(d *pruneguard.Decision) (kept []candidate, refused []Refusal, skip map[string]bool, all bool) {
	turn := g.turnRefusals(d)
	if d.Summary != nil {
		if len(turn) > 0 {
			return nil, turn, nil, false // a summary goes whole or not at all
		}
		refused, all := g.screenSummary(d)
		return nil, refused, nil, all
	}
	if len(turn) > 0 {
		return g.outsideTurn(d), turn, nil, false // the rest is screened when tried again
	}
	// A stub that does not shrink its message (a short result, a long
	// placeholder) only costs tokens; one whose content cannot become text
	// cannot be made.
	g.notePointers(d)
	var recs []pruneguard.Record
	var badStub map[int]bool
	for k, id := range d.Stub {
		i, ok := g.Index(id)
		if !ok || g.seq.removed[i] {
			continue
		}
		code := ""
		if s := g.stub(i); !s.ok {
			code = CodeStubUnsupported
		} else if s.tokens >= g.written(i) {
			code = CodeStubNotSmaller
		}
		if code == "" {
			continue
		}
		if recs == nil {
			recs = d.Records()
		}
		if badStub == nil {
			badStub = map[int]bool{}
		}
		badStub[i] = true
		refused = append(refused, Refusal{Gate: "wire", Code: code, Units: []pruneguard.UnitID{recs[len(d.Evict)+k].Unit},
			Messages: []pruneguard.MessageID{id}, Indexes: []int{i}})
	}
	refused = append(refused, g.pointerRefusals(d, &recs, &badStub)...)
	skip, refused, ts, base := g.screenSchemas(d, refused)

	// The whole decision first: most pass.
	e := g.seq.newEditsFor(len(d.Evict), len(d.Stub))
	for _, id := range d.Evict {
		if i, ok := g.Index(id); ok && !g.seq.removed[i] && (badStub == nil || !badStub[i]) {
			e.remove(int32(i))
		}
	}
	for _, id := range d.Stub {
		if i, ok := g.Index(id); ok && !g.seq.removed[i] && (badStub == nil || !badStub[i]) {
			e.stub(int32(i))
		}
	}
	if e.empty() {
		return nil, refused, skip, len(refused) == 0
	}
	if delta, after := g.rules.delta(view{s: g.seq}, e, ts); len(g.rules.fresh(base, delta, after)) == 0 {
		if len(refused) == 0 {
			if ts == g.tools {
				// Carrying the decision out will need the same delta.
				g.screened = &screened{d: d, version: g.seq.version, delta: delta, e: e}
			}
			return nil, nil, skip, true // the caller needs no candidates
		}
		return g.candidates(d, recs, badStub), refused, skip, false
	}
	kept, wrefs := g.rules.greedy(g.candidates(d, recs, badStub), ts, base)
	return kept, append(refused, wrefs...), skip, false
}

// candidates splits decision d into its units and stubs, in transcript
// order, leaving out the messages in bad; recs are d's records, or nil.
func (g *Guarded) candidates(d *pruneguard.Decision, recs []pruneguard.Record, bad map[int]bool) []candidate {
	if recs == nil {
		recs = d.Records()
	}
	var cands []candidate
	at := map[pruneguard.UnitID]int{}
	for k, id := range d.Evict {
		i, ok := g.Index(id)
		if !ok || g.seq.removed[i] || bad[i] {
			continue
		}
		u := recs[k].Unit
		c, seen := at[u]
		if !seen {
			c = len(cands)
			at[u] = c
			cands = append(cands, candidate{unit: u, first: int32(i)})
		}
		cands[c].rm = append(cands[c].rm, int32(i))
		cands[c].ids = append(cands[c].ids, id)
		cands[c].idx = append(cands[c].idx, i)
	}
	for k, id := range d.Stub {
		i, ok := g.Index(id)
		if !ok || g.seq.removed[i] || bad[i] {
			continue
		}
		cands = append(cands, candidate{unit: recs[len(d.Evict)+k].Unit, st: []int32{int32(i)}, ids: []pruneguard.MessageID{id}, idx: []int{i}, first: int32(i)})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].first < cands[b].first })
	return cands
}

// screenSchemas checks the schema edits of decision d, tool by tool in
// the order the decision names them, on the messages as they stand: an
// edit is refused when it would not make the body smaller, or when it
// would leave the body breaking a rule the input did not break (an empty
// tools array, a tool choice naming a tool no longer declared, tool
// blocks without tools). It returns the tools refused and appends their
// refusals to refused, with the tools state the edits left leave and
// how they change the violation counts.
func (g *Guarded) screenSchemas(d *pruneguard.Decision, refused []Refusal) (map[string]bool, []Refusal, *toolState, map[string]int) {
	var tools []string
	for _, t := range d.DropSchemas {
		if !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	for _, cs := range d.Compress {
		if !slices.Contains(tools, cs.Tool) {
			tools = append(tools, cs.Tool)
		}
	}
	skip := make(map[string]bool, len(tools))
	if len(tools) == 0 {
		return skip, refused, g.tools, map[string]int{}
	}
	size := func(skip map[string]bool) int { return g.schemaSize(g.schemaWith(d, skip)) }
	// Size: each edit with its tombstone must shrink what it touches. with
	// is the size with the edits not skipped so far.
	with := size(skip)
	for _, t := range tools {
		skip[t] = true
		without := size(skip)
		if with < without {
			delete(skip, t)
			continue
		}
		with = without
		refused = append(refused, Refusal{Gate: "wire", Code: CodeSchemaNotSmaller, Tools: []string{t}})
	}
	// Each edit left pays on the margin; together they must pay for what
	// they share too (the system prompt a first tombstone line creates).
	all := maps.Clone(skip)
	for _, t := range tools {
		all[t] = true
	}
	if len(all) > len(skip) && with >= size(all) {
		for _, t := range tools {
			if !skip[t] {
				refused = append(refused, Refusal{Gate: "wire", Code: CodeSchemaNotSmaller, Tools: []string{t}})
			}
		}
		skip = all
	}
	// Rules: all the edits left, then greedily one by one.
	check := func(skip map[string]bool) ([]RuleViolation, *toolState, map[string]int) {
		top := g.topWith(g.schemaWith(d, skip))
		ts := top.toolState()
		delta, after := g.rules.toolDelta(view{s: g.seq}, g.tools, ts)
		nv := g.rules.fresh(nil, delta, after)
		now := toolArrays(top)
		for _, a := range g.arrays {
			if a.n > 0 && now[a.path] == 0 {
				nv = append(nv, RuleViolation{Rule: CodeEmptyTools, Message: a.path + ": a tools array is never left empty; some servers reject an empty one"})
			}
		}
		return nv, ts, delta
	}
	if nv, ts, delta := check(skip); len(nv) == 0 {
		return skip, refused, ts, delta
	}
	var left []string
	for _, t := range tools {
		if !skip[t] {
			left = append(left, t)
			skip[t] = true
		}
	}
	for _, t := range left {
		delete(skip, t)
		nv, _, _ := check(skip)
		if len(nv) == 0 {
			continue
		}
		skip[t] = true
		refused = append(refused, Refusal{Gate: "wire", Code: nv[0].Rule, Tools: []string{t}, Detail: nv[0].Message})
	}
	_, ts, delta := check(skip)
	return skip, refused, ts, delta
}

// withoutTools takes the schema edits of the tools in skip out of plan p.
func withoutTools(p pruneguard.Plan, skip map[string]bool) pruneguard.Plan {
	if len(skip) == 0 {
		return p
	}
	p.DropSchemas = slices.DeleteFunc(slices.Clone(p.DropSchemas), func(t string) bool { return skip[t] })
	if len(p.CompressSchemas) > 0 {
		cs := maps.Clone(p.CompressSchemas)
		for t := range skip {
			delete(cs, t)
		}
		p.CompressSchemas = cs
	}
	return p
}

// planOf turns screened candidates back into a plan that names whole units
// and nothing else.
func (g *Guarded) planOf(kept []candidate, p pruneguard.Plan, skip map[string]bool) pruneguard.Plan {
	p = withoutTools(p, skip)
	q := pruneguard.Plan{DropSchemas: p.DropSchemas, CompressSchemas: p.CompressSchemas, Split: pruneguard.SplitShrink}
	for _, c := range kept {
		for _, i := range c.rm {
			q.Evict = append(q.Evict, g.id(int(i)))
		}
		for _, i := range c.st {
			q.Stub = append(q.Stub, g.id(int(i)))
		}
	}
	return q
}

// Prune asks the Context's gates about plan p, then checks the decision
// against the provider's rules: when the pruned body would break a rule
// the input did not, the offending units (and stubs, and schema edits)
// are left out, the rest is pruned again and screened again, until a
// decision passes the screen whole; each one left out is reported as a
// refusal with gate "wire". A plan the core gates refuse returns their
// error, as [pruneguard.Context.Prune] does; a core refusal of a plan the
// screen shrank is taken out of it like a wire refusal. The refusals
// also hold those of the core gates (Decision.Refused). Nothing changes
// until [Guarded.Apply].
func (g *Guarded) Prune(p pruneguard.Plan) (*pruneguard.Decision, []Refusal, error) {
	st := newSettling()
	_, d, err := g.settle(p, st)
	if err != nil {
		return nil, dedupe(st.refs), err
	}
	g.vouched = d
	return d, dedupe(st.refs), nil
}

// settling is what settle learns on the way: the refusals met, and the
// units and tools refused.
type settling struct {
	refs   []Refusal
	hidden map[pruneguard.UnitID]bool
	tools  map[string]bool
}

func newSettling() *settling {
	return &settling{hidden: map[pruneguard.UnitID]bool{}, tools: map[string]bool{}}
}

// settle runs plan p through the core gates and the wire screen until the
// decision passes the screen whole, and returns the plan that gives it
// with the decision. Each round refuses something, so the plan shrinks
// at every round and settle ends. What it meets is recorded in st. A core refusal
// (a *pruneguard.PruneError) is returned as the error when it meets the
// first plan, or when taking out what it names
// leaves the plan as it was; otherwise what it names is taken out, as
// the guard does, and the rest is tried. Other core errors (deferral,
// input errors) are returned at once.
func (g *Guarded) settle(p pruneguard.Plan, st *settling) (pruneguard.Plan, *pruneguard.Decision, error) {
	first := true
	for {
		d, err := g.ctx.Prune(p)
		if err != nil {
			st.refs = append(st.refs, g.refusalsOf(err)...)
			var pe *pruneguard.PruneError
			if !errors.As(err, &pe) || first {
				return p, nil, err
			}
			q := g.withoutRefused(p, pe.Violations, st.hidden, st.tools)
			if planSize(q) >= planSize(p) {
				return p, nil, err
			}
			p, first = q, false
			continue
		}
		first = false
		st.refs = append(st.refs, g.fromViolations(d.Refused)...)
		kept, wire, skip, all := g.screen(d)
		if all {
			return p, d, nil
		}
		st.refs = append(st.refs, wire...)
		if d.Summary != nil {
			// A summary passes whole or not at all.
			return p, nil, &ScreenError{Refusals: wire}
		}
		for _, r := range wire {
			for _, u := range r.Units {
				st.hidden[u] = true
			}
		}
		maps.Copy(st.tools, skip)
		q := g.planOf(kept, p, st.tools)
		if planSize(q) >= planSize(p) && !p.Empty() {
			// Cannot happen: the screen refused something the plan named.
			// Stop on an empty plan rather than loop.
			q = pruneguard.Plan{}
		}
		p = q
	}
}

// planSize counts what a plan names.
func planSize(p pruneguard.Plan) int {
	return len(p.Evict) + len(p.Stub) + len(p.DropSchemas) + len(p.CompressSchemas)
}

// withoutRefused takes out of p the messages of the units and the schema
// edits of the tools that core violations vs name (a tool only for a
// schema-gate violation), and records them in hidden and tools, as the
// guard's own retry does.
func (g *Guarded) withoutRefused(p pruneguard.Plan, vs []*pruneguard.Violation, hidden map[pruneguard.UnitID]bool, tools map[string]bool) pruneguard.Plan {
	for _, v := range vs {
		for _, u := range v.Units {
			hidden[u] = true
		}
		if v.Gate == pruneguard.GateSchema {
			for _, t := range v.Tools {
				tools[t] = true
			}
		}
	}
	drop := func(id pruneguard.MessageID) bool {
		u, ok := g.ctx.UnitOf(id)
		return ok && hidden[u.ID]
	}
	q := withoutTools(p, tools)
	q.Evict = slices.DeleteFunc(slices.Clone(q.Evict), drop)
	q.Stub = slices.DeleteFunc(slices.Clone(q.Stub), drop)
	return q
}

// Check runs guard.Check on the Context behind the same provider-rule
// screen as [Guarded.Prune], and carries the applied decisions out on
// the body. The screen is the guard's Screen: every decision the guard
// is about to apply, whichever part of the check made it (the policy's
// plans, the furthest safe prune, spill-then-evict, the hoarding rule),
// is screened against the body as the decisions applied before it in
// the same check left it, and what the screen refuses (the units, stubs
// and schema edits that would break a provider rule the input kept,
// empty a tools array, or not make the body smaller) is taken out and
// the rest pruned again, so no decision reaches the body unscreened. A
// guard.Screen of the caller's is asked after the wire screen passes a
// decision. The refusals gather everything the gates and the screens
// left out, without repeats; the wire screen's have gate "wire". A
// guard.Spill is refused with a *pruneguard.ConfigError, changing
// nothing: a Guarded spills through [Options.Spiller], which writes the
// pointer lines for what it spills (as a [Session] with a Spiller does).
//
// guard.Budget, and guard.Ceiling when positive, count the whole
// request body as [Guarded.Tokens] does: the history, the system prompt,
// the tools and the settings, what a provider bills. The Context counts
// the messages, the schemas and the tombstones; what it does not count
// ([Guarded.Overhead]) is taken off the budget and the ceiling the
// Context's guard is given (down to 1 at least, for a positive budget).
// When the Context comes under that budget and the body as written does
// not (a stub written longer than the Context's estimate of it, Config.
// StubTokens), the guard runs again for the difference, three more times
// at most. Result.Before and Result.After are the body's tokens before
// and after the check; a *pruneguard.CeilingError, returned only when
// the body as written ends over a positive guard.Ceiling, gives the
// body's tokens and that ceiling.
//
// With guard.Summarizer set, a check compacts before it evicts: the
// summary is written in the place of its run in the dialect's form (see
// the package documentation, "Summaries"); with Options.Spiller, the run
// is spilled first, the summary carries the pointer (a
// pruneguard.Digest without a PointerText words it as the Spiller
// does), and no pointer line is added.
//
// Check spills, with Options.Spiller set, with context.Background(): a
// spill cannot be cancelled. Use [Guarded.CheckContext] to bound it.
func (g *Guarded) Check(guard pruneguard.Guard) (pruneguard.Result, []Refusal, error) {
	return g.CheckContext(context.Background(), guard)
}

// CheckContext is [Guarded.Check] with a context for the check's I/O,
// the spills to Options.Spiller, as in [pruneguard.Guard.CheckContext].
func (g *Guarded) CheckContext(ctx context.Context, guard pruneguard.Guard) (pruneguard.Result, []Refusal, error) {
	budget, ceiling := guard.Budget, guard.Ceiling
	out := pruneguard.Result{Before: g.Tokens()}
	if guard.Spill != nil {
		out.After = out.Before
		return out, nil, &pruneguard.ConfigError{Field: "Guard.Spill",
			Reason: "is set; a Guarded spills through Options.Spiller, which writes a pointer line for what it spills"}
	}
	var refs []Refusal
	var err error
	lined := g.schema.spilled // the notes of the lines that stand: a later state extends them
	for try := 0; ; try++ {
		fixed := g.Tokens() - g.ctx.Tokens()
		if budget > 0 {
			guard.Budget = max(budget-fixed, 1)
		}
		if ceiling > 0 {
			guard.Ceiling = max(ceiling-fixed, 1)
		}
		var res pruneguard.Result
		var rs []Refusal
		res, rs, err = g.check(ctx, guard)
		out.Alerts = append(out.Alerts, res.Alerts...)
		out.Spills = append(out.Spills, res.Spills...)
		out.SpillErrors = append(out.SpillErrors, res.SpillErrors...)
		if try == 0 {
			refs, out.Decisions, out.Refused, out.Compaction = rs, res.Decisions, res.Refused, res.Compaction
		} else {
			refs = append(refs, rs...)
			out.Decisions = append(out.Decisions, res.Decisions...)
			for _, v := range res.Refused {
				if !slices.ContainsFunc(out.Refused, func(w *pruneguard.Violation) bool { return sameViolation(v, w) }) {
					out.Refused = append(out.Refused, v)
				}
			}
		}
		if res.Reason != nil {
			out.Reason = res.Reason
		}
		out.Outcome, out.Held = res.Outcome, res.Held
		if err != nil || g.Tokens() <= budget || len(res.Decisions) == 0 || res.After > guard.Budget || try == 3 {
			break
		}
	}
	if len(out.Decisions) > 0 {
		out.Outcome = pruneguard.Pruned
		g.fitLines(lined, budget)
	}
	out.After = g.Tokens()
	var ce *pruneguard.CeilingError
	if ceiling > 0 && out.After <= ceiling && errors.As(err, &ce) {
		err = nil // the body as written is within the ceiling
	}
	if errors.As(err, &ce) {
		ce.Tokens = out.After
		if ceiling > 0 {
			ce.Ceiling = ceiling
		}
	}
	refs = append(refs, placeRefused(&out, g.Index)...)
	return out, dedupe(refs), err
}

// check is one guard check on the Context's tokens, behind the screen.
func (g *Guarded) check(ctx context.Context, guard pruneguard.Guard) (pruneguard.Result, []Refusal, error) {
	sc := &guardedScreen{g: g, outer: guard.Screen}
	guard.Screen = sc
	if g.sp != nil {
		guard.Spill = bodySpiller{g: g, compacts: guard.Summarizer != nil}
		guard.Summarizer = withPointerText(guard.Summarizer, g.sp.s)
	}
	g.journal = []undo{}
	defer func() { g.journal, g.sumUndo = nil, nil }()

	res, err := guard.CheckContext(ctx, g.ctx)
	// The edit state followed the rounds as they were applied; the
	// guard's list of applied decisions is the authority: the rounds
	// carried out so far are checked against it, and the last one is
	// carried out now.
	sc.catchUp()
	same := len(sc.recorded) <= len(res.Decisions)
	for i := 0; same && i < len(sc.recorded); i++ {
		same = sameDecision(sc.recorded[i], res.Decisions[i])
	}
	done := len(sc.recorded)
	if !same {
		g.undo()
		done = 0
	}
	for _, d := range res.Decisions[done:] {
		g.record(d)
	}
	g.vouched = nil
	// res.Refused holds every refusal met: the core gates', the wire
	// screen's (reported from the screen's own refusals, which carry the
	// indexes and the provider's wording) and those of a screen of the
	// caller's; a deferral is not a refusal and comes from the last error.
	vs := slices.DeleteFunc(slices.Clone(res.Refused), func(v *pruneguard.Violation) bool { return sc.own[v] })
	refs := append(sc.refs, g.fromViolations(vs)...)
	var de *pruneguard.DeferredError
	if errors.As(res.Reason, &de) {
		refs = append(refs, g.refusalsOf(de)...)
	}
	return res, refs, err
}

// sameDecision reports whether two decisions edit the same: the same
// messages evicted and stubbed, schemas withdrawn and compressed,
// tombstones written and retired.
func sameDecision(a, b *pruneguard.Decision) bool {
	if a == b {
		return true
	}
	if !slices.Equal(a.Evict, b.Evict) || !slices.Equal(a.Stub, b.Stub) || !slices.Equal(a.DropSchemas, b.DropSchemas) ||
		!slices.Equal(a.Retire, b.Retire) || len(a.Tombstones) != len(b.Tombstones) || len(a.Compress) != len(b.Compress) {
		return false
	}
	if (a.Summary == nil) != (b.Summary == nil) || a.Summary != nil && (a.Summary.ID != b.Summary.ID || a.Summary.Text != b.Summary.Text) {
		return false
	}
	for i := range a.Tombstones {
		if a.Tombstones[i].Tool != b.Tombstones[i].Tool || a.Tombstones[i].Text != b.Tombstones[i].Text {
			return false
		}
	}
	for i := range a.Compress {
		if a.Compress[i].Tool != b.Compress[i].Tool || !bytes.Equal(a.Compress[i].Schema, b.Compress[i].Schema) {
			return false
		}
	}
	return true
}

// sameViolation compares two core violations by gate, code and what they
// name.
func sameViolation(a, b *pruneguard.Violation) bool {
	return a.Gate == b.Gate && a.Code == b.Code && slices.Equal(a.Units, b.Units) &&
		slices.Equal(a.Messages, b.Messages) && slices.Equal(a.Tools, b.Tools)
}

// applied reports whether decision d of the Context was applied: Apply
// carries a decision out whole or not at all, so one of its edits tells.
func (g *Guarded) applied(d *pruneguard.Decision) bool {
	if len(d.Evict) > 0 {
		_, ok := g.ctx.Message(d.Evict[0])
		return !ok
	}
	if len(d.Stub) > 0 {
		// A stub sets the message's tokens to the stub's; a check ends by
		// comparing what it carried out with the guard's list of applied
		// decisions, so a stub whose count did not change is caught there.
		m, ok := g.ctx.Message(d.Stub[0])
		recs := d.Records()
		return ok && m.Tokens != recs[len(d.Evict)].Tokens
	}
	if len(d.DropSchemas) > 0 {
		ts, ok := g.ctx.Tool(d.DropSchemas[0])
		return ok && !ts.Resident
	}
	if len(d.Compress) > 0 {
		ts, ok := g.ctx.Tool(d.Compress[0].Tool)
		return ok && bytes.Equal(ts.Compressed, d.Compress[0].Schema)
	}
	if len(d.Retire) > 0 {
		ts, ok := g.ctx.Tool(d.Retire[0])
		return ok && !ts.Tombstoned
	}
	if len(d.Tombstones) > 0 {
		// A decision of repairing tombstones only: the tool it repairs
		// stood behind none.
		ts, ok := g.ctx.Tool(d.Tombstones[0].Tool)
		return ok && ts.Tombstoned
	}
	return false
}

func (g *Guarded) refusalsOf(err error) []Refusal {
	var pe *pruneguard.PruneError
	if errors.As(err, &pe) {
		return g.fromViolations(pe.Violations)
	}
	var de *pruneguard.DeferredError
	if errors.As(err, &de) {
		r := Refusal{Gate: "boundary", Code: "deferred", Units: slices.Clone(de.Units)}
		add := func(id pruneguard.MessageID) {
			i, ok := g.Index(id)
			if !ok || slices.Contains(r.Messages, id) {
				return
			}
			r.Messages = append(r.Messages, id)
			r.Indexes = append(r.Indexes, i)
			if u, ok := g.ctx.UnitOf(id); ok && !slices.Contains(r.Units, u.ID) {
				r.Units = append(r.Units, u.ID)
			}
		}
		for _, id := range de.Open {
			add(id)
		}
		// Pending calls: the Context's call ids are "i.k", call k of body
		// message i.
		pending := de.Pending
		if len(pending) == 0 && len(de.Open) == 0 && len(de.Units) == 0 {
			pending = g.ctx.Pending()
		}
		for _, c := range pending {
			if i, ok := callerOf(c); ok && i < len(g.src.facts) {
				add(ID(i))
			}
		}
		return []Refusal{r}
	}
	return nil
}

// callerOf returns the body index of the message that made call c, from
// the id [Body.Bind] gives it: "i.k" for call k of message i.
func callerOf(c pruneguard.CallID) (int, bool) {
	s, _, ok := strings.Cut(string(c), ".")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

func (g *Guarded) fromViolations(vs []*pruneguard.Violation) []Refusal {
	out := make([]Refusal, 0, len(vs))
	for _, v := range vs {
		r := Refusal{Gate: v.Gate.String(), Code: string(v.Code), Units: v.Units, Messages: v.Messages, Tools: v.Tools, Calls: v.Calls}
		for _, c := range v.Calls {
			// The Context's call ids are "i.k", call k of body message i.
			if i, ok := callerOf(c); ok && i < len(g.src.facts) && !slices.Contains(r.Messages, ID(i)) {
				r.Messages = append(slices.Clip(r.Messages), ID(i))
			}
		}
		for _, id := range r.Messages {
			if i, ok := g.Index(id); ok {
				r.Indexes = append(r.Indexes, i)
			}
		}
		out = append(out, r)
	}
	return out
}

// dedupe returns rs without the refusals that name what an earlier one
// names (gate, code, units, messages, tools and calls), in order. They
// are found by a hash of their gate, code, first unit and first message,
// and compared whole when two hash alike.
func dedupe(rs []Refusal) []Refusal {
	seed := maphash.MakeSeed()
	last := make(map[uint64]int32, len(rs)) // a hash, to 1 + the last refusal of out with it
	prev := make([]int32, 0, len(rs))       // a refusal of out, to 1 + the one before it with its hash
	out := make([]Refusal, 0, len(rs))
next:
	for _, r := range rs {
		h := refusalHash(seed, &r)
		for i := last[h]; i != 0; i = prev[i-1] {
			if sameRefusal(&out[i-1], &r) {
				continue next
			}
		}
		prev = append(prev, last[h])
		last[h] = int32(len(out) + 1)
		out = append(out, r)
	}
	return out
}

// refusalHash hashes refusal r's gate, code, first unit and first
// message.
func refusalHash(seed maphash.Seed, r *Refusal) uint64 {
	var unit, msg string
	if len(r.Units) > 0 {
		unit = string(r.Units[0])
	}
	if len(r.Messages) > 0 {
		msg = string(r.Messages[0])
	}
	return maphash.String(seed, msg) ^ 31*maphash.String(seed, unit) ^ 17*maphash.String(seed, r.Code) ^ maphash.String(seed, r.Gate)<<1
}

// sameRefusal reports whether a and b name the same.
func sameRefusal(a, b *Refusal) bool {
	return a.Gate == b.Gate && a.Code == b.Code && slices.Equal(a.Units, b.Units) && slices.Equal(a.Messages, b.Messages) &&
		slices.Equal(a.Tools, b.Tools) && slices.Equal(a.Calls, b.Calls)
}

func joinStrings[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

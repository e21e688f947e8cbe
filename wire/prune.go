package wire

import (
	"errors"
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

// candidate is one unit of a decision's eviction set, or one stub.
type candidate struct {
	unit  pruneguard.UnitID
	evict []int // body indexes to remove
	stub  int   // body index to stub, or -1
	first int
}

// screen checks what a decision would do to the body, schema edits and
// tombstones included. It returns the candidates that keep the body no
// worse than the input, and refusals for the others; skip names the
// tools whose schema edits (withdrawal, compression, with their
// tombstones) are refused, because they would not shrink the body or
// would break a rule. all reports that nothing was refused.
func (g *Guarded) screen(d *pruneguard.Decision) (kept []candidate, refused []Refusal, skip map[string]bool, all bool) {
	var cands []candidate
	at := map[pruneguard.UnitID]int{}
	for _, id := range d.Evict {
		i, ok := g.index[id]
		if !ok {
			continue
		}
		u, _ := g.ctx.UnitOf(id)
		k, seen := at[u.ID]
		if !seen {
			k = len(cands)
			at[u.ID] = k
			cands = append(cands, candidate{unit: u.ID, stub: -1, first: i})
		}
		cands[k].evict = append(cands[k].evict, i)
	}
	for _, id := range d.Stub {
		i, ok := g.index[id]
		if !ok {
			continue
		}
		u, _ := g.ctx.UnitOf(id)
		cands = append(cands, candidate{unit: u.ID, stub: i, first: i})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].first < cands[b].first })

	// A stub that does not shrink its message (a short result, a long
	// placeholder) only costs tokens.
	cands = slices.DeleteFunc(cands, func(c candidate) bool {
		if c.stub < 0 || g.tok.Tokens(g.stubMsg(c.stub).Raw) < g.tok.Tokens(g.src.Messages[c.stub].Raw) {
			return false
		}
		refused = append(refused, Refusal{Gate: "wire", Code: CodeStubNotSmaller, Units: []pruneguard.UnitID{c.unit},
			Messages: []pruneguard.MessageID{g.ids[c.stub]}, Indexes: []int{c.stub}})
		return true
	})

	skip, refused = g.screenSchemas(d, refused)
	se := g.schemaWith(d, skip)

	removed := slices.Clone(g.removed)
	stubbed := slices.Clone(g.stubbed)
	apply := func(c candidate, r, s []bool) {
		for _, i := range c.evict {
			r[i] = true
		}
		if c.stub >= 0 {
			s[c.stub] = true
		}
	}
	worse := func(r, s []bool) []Violation {
		return NewViolations(g.inputV, g.render(r, s, se).Validate())
	}
	{
		r, s := slices.Clone(removed), slices.Clone(stubbed)
		for _, c := range cands {
			apply(c, r, s)
		}
		if len(worse(r, s)) == 0 {
			return cands, refused, skip, len(refused) == 0
		}
	}
	// Greedy, in transcript order: take each candidate that keeps the body
	// no worse, together with those already taken.
	for _, c := range cands {
		r, s := slices.Clone(removed), slices.Clone(stubbed)
		apply(c, r, s)
		nv := worse(r, s)
		if len(nv) == 0 {
			removed, stubbed = r, s
			kept = append(kept, c)
			continue
		}
		ref := Refusal{Gate: "wire", Code: nv[0].Rule, Units: []pruneguard.UnitID{c.unit}, Detail: nv[0].Message}
		idx := c.evict
		if c.stub >= 0 {
			idx = []int{c.stub}
		}
		for _, i := range idx {
			ref.Messages = append(ref.Messages, g.ids[i])
			ref.Indexes = append(ref.Indexes, i)
		}
		refused = append(refused, ref)
	}
	return kept, refused, skip, false
}

// screenSchemas checks the schema edits of decision d, tool by tool in
// the order the decision names them, on the messages as they stand: an
// edit is refused when it would not make the body smaller, or when it
// would leave the body breaking a rule the input did not break (an empty
// tools array, a tool choice naming a tool no longer declared, tool
// blocks without tools). It returns the tools refused and appends their
// refusals to refused.
func (g *Guarded) screenSchemas(d *pruneguard.Decision, refused []Refusal) (map[string]bool, []Refusal) {
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
		return skip, refused
	}
	// The size a schema edit changes: the body outside its messages or, in
	// Chat, where tombstone lines go into a system message, the whole body.
	size := func(skip map[string]bool) int {
		nb := g.render(g.removed, g.stubbed, g.schemaWith(d, skip))
		if nb.Dialect == OpenAIChat {
			return Tokens(nb, g.tok)
		}
		return Overhead(nb, g.tok)
	}
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
	if len(NewViolations(g.inputV, g.render(g.removed, g.stubbed, g.schemaWith(d, skip)).Validate())) == 0 {
		return skip, refused
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
		nv := NewViolations(g.inputV, g.render(g.removed, g.stubbed, g.schemaWith(d, skip)).Validate())
		if len(nv) == 0 {
			continue
		}
		skip[t] = true
		refused = append(refused, Refusal{Gate: "wire", Code: nv[0].Rule, Tools: []string{t}, Detail: nv[0].Message})
	}
	return skip, refused
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
		for _, i := range c.evict {
			q.Evict = append(q.Evict, g.ids[i])
		}
		if c.stub >= 0 {
			q.Stub = append(q.Stub, g.ids[c.stub])
		}
	}
	return q
}

// Prune asks the Context's gates about plan p, then checks the decision
// against the provider's rules: when the pruned body would break a rule
// the input did not, the offending units (and stubs) are left out, the
// rest is pruned again, and each one left out is reported as a refusal
// with gate "wire". The refusals also hold those of the core gates
// (Decision.Refused). Nothing changes until [Guarded.Apply].
func (g *Guarded) Prune(p pruneguard.Plan) (*pruneguard.Decision, []Refusal, error) {
	d, err := g.ctx.Prune(p)
	if err != nil {
		return nil, g.refusalsOf(err), err
	}
	refs := g.fromViolations(d.Refused)
	skipped := map[string]bool{}
	for round := 0; round < 4; round++ {
		kept, wire, skip, all := g.screen(d)
		if all {
			return d, refs, nil
		}
		refs = append(refs, wire...)
		maps.Copy(skipped, skip)
		q := g.planOf(kept, p, skipped)
		if d, err = g.ctx.Prune(q); err != nil {
			return nil, append(refs, g.refusalsOf(err)...), err
		}
	}
	return d, refs, nil
}

// Check runs guard.Check on the Context with the guard's policy (nil
// means OldestFirst) behind the same provider-rule screen as
// [Guarded.Prune], and carries the applied decisions out on the body.
// guard.Budget counts the Context's tokens, the messages only; subtract
// [Guarded.Overhead] from a budget for the whole request. The refusals
// gather everything the gates and the screen left out, without repeats.
func (g *Guarded) Check(guard pruneguard.Guard) (pruneguard.Result, []Refusal, error) {
	inner := guard.Policy
	if inner == nil {
		inner = pruneguard.OldestFirst{}
	}
	sp := &screenPolicy{g: g, inner: inner, tools: map[string]bool{}}
	guard.Policy = sp
	res, err := guard.Check(g.ctx)
	for _, d := range res.Decisions {
		g.record(d)
	}
	// res.Refused holds every core refusal met, those of the applied
	// decisions and of the plans refused in between; a deferral is not a
	// refusal and comes from the last error.
	sp.refs = append(sp.refs, g.fromViolations(res.Refused)...)
	var de *pruneguard.DeferredError
	if errors.As(res.Reason, &de) {
		sp.refs = append(sp.refs, g.refusalsOf(de)...)
	}
	return res, dedupe(sp.refs), err
}

// screenPolicy wraps a policy so that the plans it hands the guard keep
// the body no worse than the input.
type screenPolicy struct {
	g     *Guarded
	inner pruneguard.Policy
	tools map[string]bool // tools whose schema edits the screen refused
	refs  []Refusal
}

// Propose asks the inner policy for a plan and screens its decision. A
// plan the screen passes whole is returned as is; otherwise the refused
// units are hidden from the inner policy (and, through the guard's view,
// for the rest of the check) and the refused tools' schema
// edits dropped, and the plan of what the screen kept is returned, or,
// when it kept nothing, the inner policy is asked again (eight times at
// most, then the plan is empty).
func (s *screenPolicy) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	for attempt := 0; attempt < 8; attempt++ {
		p := withoutTools(s.inner.Propose(v, need), s.tools)
		if p.Empty() {
			return p
		}
		d, err := s.g.ctx.Prune(p)
		if err != nil {
			return p // the guard meets the same error and deals with it
		}
		kept, wire, skip, all := s.g.screen(d)
		if all {
			return p
		}
		s.refs = append(s.refs, wire...)
		for _, r := range wire {
			v.Hide(r.Units...)
		}
		maps.Copy(s.tools, skip)
		if len(kept) > 0 {
			s.refs = append(s.refs, s.g.fromViolations(d.Refused)...)
			return s.g.planOf(kept, p, s.tools)
		}
	}
	return pruneguard.Plan{}
}

// Overhead counts the tokens of the current body outside its messages.
func (g *Guarded) Overhead() int { return Overhead(g.Body(), g.tok) }

// Tokens counts the tokens of the current body, messages and the rest.
func (g *Guarded) Tokens() int { return Tokens(g.Body(), g.tok) }

func (g *Guarded) refusalsOf(err error) []Refusal {
	var pe *pruneguard.PruneError
	if errors.As(err, &pe) {
		return g.fromViolations(pe.Violations)
	}
	var de *pruneguard.DeferredError
	if errors.As(err, &de) {
		r := Refusal{Gate: "boundary", Code: "deferred", Units: slices.Clone(de.Units)}
		add := func(id pruneguard.MessageID) {
			i, ok := g.index[id]
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
			if i, ok := callerOf(c); ok && i < len(g.ids) {
				add(g.ids[i])
			}
		}
		return []Refusal{r}
	}
	return nil
}

// callerOf returns the body index of the message that made call c, from
// the id [Body.Context] gives it: "i.k" for call k of message i.
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
		r := Refusal{Gate: v.Gate.String(), Code: string(v.Code), Units: v.Units, Messages: v.Messages, Tools: v.Tools}
		for _, id := range v.Messages {
			if i, ok := g.index[id]; ok {
				r.Indexes = append(r.Indexes, i)
			}
		}
		out = append(out, r)
	}
	return out
}

func dedupe(rs []Refusal) []Refusal {
	seen := map[string]bool{}
	out := rs[:0:0]
	for _, r := range rs {
		k := r.Gate + "|" + r.Code + "|" + joinStrings(r.Units) + "|" + joinStrings(r.Messages) + "|" + strings.Join(r.Tools, ",")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

func joinStrings[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

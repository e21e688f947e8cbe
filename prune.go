package pruneguard

import "slices"

// Prune decides whether plan p may be carried out, and what it really
// takes. It changes nothing; pass the decision to [Context.Apply].
//
// The gates run in this order, and every violation of every gate is
// reported at once:
//
//  1. Commit boundary. In the strict mode (the default) a pending call or
//     a streaming message anywhere defers the prune ([*DeferredError]). A
//     unit named in part is grown, shrunk or refused as p.Split says; a
//     unit with a pinned message, and in the relaxed mode a unit in
//     flight, is never pruned. The result is a union of whole units.
//  2. Regenerability. Every evicted or stubbed message must be
//     reconstructible, or spilled behind a resolvable pointer, or outside
//     every step of a sealed plan; no message a pending planned step names
//     may go. Facts make a message irreducible whatever else is said.
//  3. Evict-or-tombstone, over what survives the first two: a schema may
//     leave when no arguments of calls to its tool survive, or behind a
//     tombstone; a mutation tool that cannot be tombstoned keeps it.
//
// A plan naming a message, tool or schema the Context does not hold is an
// [*InputError]. A refused plan yields a [*PruneError]. Equal Contexts and
// plans give equal decisions. The cost is proportional to the plan and
// the units it touches, not to the length of the Context; the one
// exception is the hoarding report, when Config.HoardTokens is set, which
// looks at every message of at least that many tokens.
func (c *Context) Prune(p Plan) (*Decision, error) {
	return c.prune(p, true)
}

// pruneRun is one Prune in progress: the plan, the closing set and the
// stub targets with their marks, and what the gates objected to. Each
// gate is a step that reads the Context and changes only the run.
type pruneRun struct {
	c *Context
	p Plan
	d *Decision // the decision being built; its marks generation is d.gen

	evict []*msg // the closing set
	stubs []*msg // the stub targets, none of them in the closing set

	// whole says the closing set is a union of whole units, as the
	// boundary gate leaves it.
	whole bool
	// tools counts, per tool, the calls whose arguments leave with the
	// closing set; edits are the schema changes the plan asks for.
	tools toolCounts
	edits []schemaEdit

	violations []*Violation   // objections: the plan is refused
	refused    []*Violation   // what the gates left out of the plan
	deferred   *DeferredError // the boundary gate defers the prune
}

// A stage is one step of the pipeline Prune runs. Stages with a gate are
// the gates; the others carry out the plan as named.
type stage struct {
	gate Gate
	run  func(r *pruneRun)
}

// pipeline is what Prune runs, in order. A gate narrows what the steps
// before it took; without it, the plan goes through as named.
var pipeline = []stage{
	{0, (*pruneRun).takeMessages},
	{GateBoundary, (*pruneRun).boundaryGate},
	{0, (*pruneRun).takeStubs},
	{GateRegen, (*pruneRun).regenGate},
	{0, (*pruneRun).takeSchemas},
	{GateSchema, (*pruneRun).schemaGate},
}

// prune is Prune; with ceiling false a deferral past Config.Ceiling stays
// a deferral, for the Guard, which applies its own ceiling.
func (c *Context) prune(p Plan, ceiling bool) (*Decision, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	// A zero Context's nil maps read as empty: only an empty plan is valid.
	if err := c.checkPlan(p); err != nil {
		return nil, err
	}
	c.pruneMu.Lock()
	defer c.pruneMu.Unlock()
	c.pruneGen++
	r := &pruneRun{c: c, p: p, d: &Decision{c: c, epoch: c.epoch, gen: c.pruneGen}}
	stages := c.pipeline
	if stages == nil {
		stages = pipeline
	}
	for _, s := range stages {
		s.run(r)
		if r.deferred != nil {
			if ceiling && c.cfg.Ceiling > 0 && c.tokens > c.cfg.Ceiling {
				return nil, &CeilingError{Tokens: c.tokens, Ceiling: c.cfg.Ceiling, Cause: r.deferred}
			}
			return nil, r.deferred
		}
	}
	if len(r.violations) > 0 {
		sortViolations(r.violations)
		return nil, &PruneError{Violations: r.violations}
	}
	sortViolations(r.refused)
	r.d.Refused = r.refused
	r.d.finish(r)
	return r.d, nil
}

// takeMessages carries out the plan's evictions as named: the closing
// set is every message the plan evicts, once each, in the order named.
func (r *pruneRun) takeMessages() {
	r.evict = make([]*msg, 0, len(r.p.Evict))
	for _, id := range r.p.Evict {
		x := r.c.byID[id]
		if !r.inEvict(x) {
			r.markEvict(x)
			r.evict = append(r.evict, x)
		}
	}
}

// takeStubs takes the plan's stubs as named, less the messages of the
// closing set and the stubs a gate held back.
func (r *pruneRun) takeStubs() {
	for _, id := range r.p.Stub {
		x := r.c.byID[id]
		if !r.inEvict(x) && !r.stubbed(x) && !r.heldStub(x) {
			r.markStub(x)
		}
	}
}

// The marks of the run on messages: in the closing set, a stub target.
// They hold for the run's generation only, so nothing needs clearing.

func (r *pruneRun) inEvict(x *msg) bool { return x.evictMark == r.d.gen }
func (r *pruneRun) markEvict(x *msg)    { x.evictMark = r.d.gen }
func (r *pruneRun) unmarkEvict(x *msg)  { x.evictMark = 0 }
func (r *pruneRun) stubbed(x *msg) bool { return x.stubMark == r.d.gen }

func (r *pruneRun) markStub(x *msg) {
	x.stubMark = r.d.gen
	r.stubs = append(r.stubs, x)
}

func (r *pruneRun) unmarkStub(x *msg)    { x.stubMark = 0 }
func (r *pruneRun) holdStub(x *msg)      { x.stubMark = r.d.gen | 1<<62 }
func (r *pruneRun) heldStub(x *msg) bool { return x.stubMark == r.d.gen|1<<62 }

// listMark returns a fresh mark for walking the units of the run once
// each.
func (r *pruneRun) listMark() uint64 {
	r.d.list++
	return r.d.gen + r.d.list<<48
}

// classOf returns the class of x, classifying it once per run.
func (r *pruneRun) classOf(x *msg) Class {
	if x.classMark != r.d.gen {
		x.classMark = r.d.gen
		x.pruneClass = r.c.classify(x)
	}
	return x.pruneClass
}

// object records a violation: the plan is refused.
func (r *pruneRun) object(vs ...*Violation) { r.violations = append(r.violations, vs...) }

// leaveOut records a refusal: the plan goes on without what v names.
func (r *pruneRun) leaveOut(vs ...*Violation) { r.refused = append(r.refused, vs...) }

// dropUnit takes unit u out of the closing set.
func (r *pruneRun) dropUnit(u *unit) {
	r.evict = slices.DeleteFunc(r.evict, func(x *msg) bool {
		if x.unit == u {
			r.unmarkEvict(x)
			return true
		}
		return false
	})
}

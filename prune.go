package pruneguard

import (
	"slices"
	"strings"
)

// Prune decides whether plan p may be carried out, and what it really
// takes. It changes nothing; pass the decision to [Context.Apply].
//
// The gates run in this order, and every violation of every gate is
// reported at once:
//
//  1. Commit boundary. In the strict mode (the default) a pending call or
//     a streaming message anywhere defers the prune ([*DeferredError]). A
//     unit named in part is grown, shrunk or refused as p.Split says; a
//     unit with a pinned message, a unit holding a message the model has
//     not read yet ([Context.Unread]), and in the relaxed mode a unit in
//     flight, is never pruned. The result is a union of whole units.
//  2. Regenerability. Every evicted or stubbed message must be
//     reconstructible, or spilled behind a resolvable pointer, or outside
//     every step of a sealed plan; no message a pending planned step names
//     may go. Facts make a message irreducible whatever else is said. A
//     unit's messages held for one reason make one violation, naming them
//     all (a message a step names has its own, with the steps).
//  3. Evict-or-tombstone, over what survives the first two: a schema may
//     leave when no arguments of calls to its tool survive, or behind a
//     tombstone; a mutation tool that cannot be tombstoned keeps it; no
//     schema leaves, or loses a constraint, while a message requiring it
//     survives. Every tool
//     whose arguments or requiring messages already stand behind no
//     schema is looked at too, named by the plan or not (see
//     [Context.Unsound]): surviving arguments get a tombstone in the
//     decision, or, for a mutation tool that cannot have one, refuse the
//     plan; a surviving requiring message refuses it.
//
// A plan naming a message, tool or schema the Context does not hold is an
// [*InputError], and so is a decision whose stubs, pointer lines,
// schemas, tombstones or summary would take [Context.Tokens] past the
// largest int ([ErrTokenOverflow]). A refused plan yields a [*PruneError]. Equal Contexts and
// plans give equal decisions. The cost is proportional to the plan, the
// units it touches, the bytes of the results it evicts or stubs (which it
// hashes for [Decision.Records], sharing a large decision's hashing
// among goroutines) and the tools [Context.Unsound] lists,
// not to the length of the Context; the one
// exception is the hoarding report, when Config.HoardTokens is set, which
// costs time in proportion to the messages that may be hoarded: those of
// at least that many tokens that were reconstructible when last judged
// (see [HoardMode]), never text that is irreducible by default or the
// results of mutating or open-world tools.
func (c *Context) Prune(p Plan) (*Decision, error) {
	return c.prune(p, planHint{}, true)
}

// pruneRun is one Prune in progress: the plan, the closing set and the
// stub targets with their marks, and what the gates objected to. Each
// gate is a step that reads the Context and changes only the run.
type pruneRun struct {
	c   *Context
	p   Plan
	d   *Decision // the decision being built
	gen uint32    // the generation of this run's marks on messages

	// The positions of the messages the plan evicts and stubs.
	named, stubAt []int32

	evict []int32 // the closing set
	stubs []int32 // the stub targets, none of them in the closing set

	// whole says the closing set is a union of whole units, as the
	// boundary gate leaves it.
	whole bool
	// tools counts, per tool, the calls whose arguments leave with the
	// closing set; edits are the schema changes the plan asks for.
	tools    toolCounts
	toolsBuf [4]toolCount // tools' first backing: a plan touches few tools
	edits    []schemaEdit

	violations []*Violation   // objections: the plan is refused
	refused    []*Violation   // what the gates left out of the plan
	deferred   *DeferredError // the boundary gate defers the prune

	// repairs are the tombstones the decision adds for tools whose
	// arguments already stood behind no schema.
	repairs []Tombstone
	// relied are the messages the regenerability gate let go only
	// because their pointer resolves.
	relied []int32
	// sum is the summary of a summary plan, nil for any other.
	sum *sumRun
	// vs hands out the run's violations of one message.
	vs violationSlab
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
	{GateBoundary, (*pruneRun).summaryRun},
	{0, (*pruneRun).takeStubs},
	{GateRegen, (*pruneRun).regenGate},
	{0, (*pruneRun).takeSchemas},
	{GateSchema, (*pruneRun).schemaGate},
	{GateSchema, (*pruneRun).toolGate},
	{GateRegen, (*pruneRun).summarySize},
}

// prune is Prune, with a hint of where the messages p names are; with
// ceiling false a deferral past Config.Ceiling stays a deferral, for the
// Guard, which applies its own ceiling.
func (c *Context) prune(p Plan, h planHint, ceiling bool) (*Decision, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	// A zero Context reads as empty: only an empty plan is valid.
	var at []int32
	var err error
	if p.Summary != nil {
		at, err = c.checkSummary(p, h, true)
	} else {
		at, err = c.checkPlan(p, h)
	}
	if err != nil {
		return nil, err
	}
	c.pruneMu.Lock()
	defer c.pruneMu.Unlock()
	r := c.newRun(p, at)
	stages := c.pipeline
	if stages == nil {
		stages = pipeline
	}
	for _, s := range stages {
		s.run(r)
		if r.deferred != nil {
			if held := c.heldTokens(); ceiling && c.cfg.Ceiling > 0 && held > c.cfg.Ceiling {
				return nil, &CeilingError{Tokens: held, Ceiling: c.cfg.Ceiling, Cause: r.deferred, Held: c.heldIn(nil)}
			}
			return nil, r.deferred
		}
	}
	r.refuseEmptySummary()
	if len(r.violations) > 0 {
		sortViolations(r.violations)
		r.stampViolations(r.violations)
		return nil, &PruneError{Violations: r.violations}
	}
	sortViolations(r.refused)
	r.stampViolations(r.refused)
	r.d.Refused = r.refused
	r.d.finish(r)
	if !r.d.fits(c) {
		return nil, inputErr("prune", "", ErrTokenOverflow)
	}
	return r.d, nil
}

// newRun starts a run of plan p, whose messages are at positions at:
// those p.Evict names, then p.Stub, or those its Summary replaces. Under
// the read lock and pruneMu.
func (c *Context) newRun(p Plan, at []int32) *pruneRun {
	// The run and its decision in one allocation.
	both := &struct {
		d Decision
		r pruneRun
	}{d: Decision{c: c, epoch: c.epoch, compactions: c.compactions}}
	r := &both.r
	*r = pruneRun{c: c, p: p, gen: c.nextGen(), d: &both.d, named: at[:len(p.Evict)], stubAt: at[len(p.Evict):]}
	r.tools = r.toolsBuf[:0]
	if p.Summary != nil {
		r.sum = newSumRun(p.Summary)
		r.named, r.stubAt = at, nil
	}
	return r
}

// takeMessages carries out the plan's evictions as named: the closing
// set is every message the plan evicts, once each, in the order named.
func (r *pruneRun) takeMessages() {
	r.evict = r.named[:0:len(r.named)] // in place: it only drops duplicates
	for _, p := range r.named {
		if !r.has(p, kEvict) {
			r.set(p, kEvict)
			r.evict = append(r.evict, p)
		}
	}
}

// takeStubs takes the plan's stubs as named, less the messages of the
// closing set and the stubs a gate held back.
func (r *pruneRun) takeStubs() {
	for _, p := range r.stubAt {
		if !r.has(p, kEvict|kStub|kHeld) {
			r.set(p, kStub)
			r.stubs = append(r.stubs, p)
		}
	}
}

// The marks of a run on messages: a word per message, the run's
// generation above markBits, the marks below. A mark of an older
// generation reads as no mark, so nothing needs clearing.
const (
	kEvict   uint32 = 1 << iota // in the closing set
	kStub                       // a stub target
	kHeld                       // a stub the boundary gate held back
	kClassed                    // classified: the class is in the next two bits
	markBits = 6
)

// nextGen starts the marks of a new run. When the generations run out,
// every mark is cleared and they start again.
func (c *Context) nextGen() uint32 {
	c.pruneGen++
	if c.pruneGen >= 1<<(32-markBits) {
		for p := range c.msgs.Len() {
			c.msg(p).mark = 0
		}
		c.pruneGen = 1
	}
	return c.pruneGen
}

// pass returns a fresh stamp for a pass over units, so that each unit is
// visited once per pass. When the stamps run out, every stamp is cleared
// and they start again.
func (r *pruneRun) pass() uint32 {
	c := r.c
	c.tick++
	if c.tick == 0 {
		for u := range c.units.Len() {
			c.unit(u).mark = 0
		}
		c.tick = 1
	}
	return c.tick
}

// has reports whether message p has any of the marks.
func (r *pruneRun) has(p int32, marks uint32) bool {
	m := r.c.msg(p).mark
	return m>>markBits == r.gen && m&marks != 0
}

func (r *pruneRun) set(p int32, marks uint32) {
	x := r.c.msg(p)
	if x.mark>>markBits != r.gen {
		x.mark = r.gen << markBits
	}
	x.mark |= marks
}

func (r *pruneRun) unset(p int32, marks uint32) {
	if x := r.c.msg(p); x.mark>>markBits == r.gen {
		x.mark &^= marks
	}
}

// classOf returns the class of message p, classifying it once per run.
func (r *pruneRun) classOf(p int32) Class { return r.classOfRec(p, r.c.msg(p)) }

// classOfRec is classOf for message p whose record is x.
func (r *pruneRun) classOfRec(p int32, x *mrec) Class {
	if m := x.mark; m>>markBits == r.gen && m&kClassed != 0 {
		return Class(m >> 4 & 3)
	}
	k := r.c.classify(p)
	if x.mark>>markBits != r.gen {
		x.mark = r.gen << markBits
	}
	x.mark |= kClassed | uint32(k)<<4
	return k
}

// object records a violation: the plan is refused.
func (r *pruneRun) object(vs ...*Violation) { r.violations = append(r.violations, vs...) }

// leaveOut records a refusal: the plan goes on without what v names.
func (r *pruneRun) leaveOut(vs ...*Violation) { r.refused = append(r.refused, vs...) }

// dropUnits takes units us out of the closing set, in one pass over it,
// with the units stamped by a pass of their own.
func (r *pruneRun) dropUnits(us []int32) {
	if len(us) == 0 {
		return
	}
	c := r.c
	t := r.pass()
	for _, u := range us {
		c.unit(u).mark = t
	}
	r.evict = slices.DeleteFunc(r.evict, func(p int32) bool {
		if c.unit(c.msg(p).unit).mark == t {
			r.unset(p, kEvict)
			return true
		}
		return false
	})
}

// violationSlab hands out the violations the regenerability gate makes,
// from chunks, with their ids cut from one string: a plan that names
// thousands of refused messages allocates a few times, not a few times
// each. The violations share nothing that a caller could change for
// another: each slice is capped at its length.
type violationSlab struct {
	vs    []Violation
	units []UnitID
	msgs  []MessageID
	ids   strings.Builder
	// last is the unit whose id units ends with, plus one; zero for none.
	last int32
}

// unit appends to dst the violations of the messages of one unit that at
// says why the gate holds, in the order of at: one per code, naming every
// message held for it, but one per message for CodeReferenced, which
// names the steps too.
func (s *violationSlab) unit(r *pruneRun, dst []*Violation, at []codeAt) []*Violation {
	for i, a := range at {
		if a.p == none {
			continue // named by an earlier violation
		}
		v := s.violation(r, a.code, a.p)
		if a.code == CodeReferenced {
			v.Steps = r.c.stepsOf(a.p)
		} else {
			for j := i + 1; j < len(at); j++ {
				if at[j].code == a.code && at[j].p != none {
					s.add(r.c, v, at[j].p)
					at[j].p = none
				}
			}
		}
		dst = append(dst, v)
	}
	return dst
}

// violation returns a new violation of the gate with code naming message
// p and its unit, stamped with the unit as the run sees it (see seenAt).
func (s *violationSlab) violation(r *pruneRun, code Code, p int32) *Violation {
	c := r.c
	u := c.msg(p).unit
	if s.last != u+1 {
		if len(s.units) == cap(s.units) {
			s.units = make([]UnitID, 0, chunkOf(cap(s.units)))
		}
		s.units = append(s.units, UnitID(s.cut(c.msgID(c.unit(u).head))))
		s.last = u + 1
	}
	if len(s.vs) == cap(s.vs) {
		s.vs = make([]Violation, 0, chunkOf(cap(s.vs)))
	}
	n := len(s.units)
	s.vs = append(s.vs, Violation{Gate: GateRegen, Code: code, Units: s.units[n-1 : n : n], pos: uint64(p), one: true,
		seen: seenAt{unit: u, ver: c.unit(u).version, comp: c.compactions, judge: c.judge(), ok: true}})
	v := &s.vs[len(s.vs)-1]
	s.add(c, v, p)
	return v
}

// add adds message p to those v names: in the slab's chunk of ids when v's
// are its last, copied otherwise. (A violation that names a message was
// given it by add, so the chunk is not empty then.)
func (s *violationSlab) add(c *Context, v *Violation, p int32) {
	id := MessageID(s.cut(c.msgID(p)))
	m := len(s.msgs)
	if k := len(v.Messages); k > 0 && m < cap(s.msgs) && &s.msgs[m-1] == &v.Messages[k-1] {
		s.msgs = append(s.msgs, id)
		v.Messages = s.msgs[m-k : m+1 : m+1]
	} else if k > 0 {
		v.Messages = append(slices.Clip(v.Messages), id)
	} else {
		if m == cap(s.msgs) {
			s.msgs = make([]MessageID, 0, chunkOf(cap(s.msgs)))
			m = 0
		}
		s.msgs = append(s.msgs, id)
		v.Messages = s.msgs[m : m+1 : m+1]
	}
}

// cut returns b as a string cut from the slab's text.
func (s *violationSlab) cut(b []byte) string {
	from := s.ids.Len()
	s.ids.Write(b)
	return s.ids.String()[from:]
}

// chunkOf returns the size of the chunk after one of n: twice as large,
// from 8 to 1,024.
func chunkOf(n int) int { return min(max(8, 2*n), 1024) }

package pruneguard

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"slices"
)

// One round of a check: a plan pruned, what the gates and the Screen
// refuse taken out of it (and remembered), what only a spill lets go
// spilled, the decision screened and applied.

// tryOutcome says what one plan came to.
type tryOutcome uint8

const (
	tryNothing  tryOutcome = iota // nothing applied; ask again
	tryApplied                    // a decision was applied
	tryDeferred                   // the Context left the commit boundary: stop
)

// try prunes plan p, takes out what the gates refuse and tries what is
// left, spills what only a spill lets go and prunes again, screens the
// decision and applies it. It returns a non-nil error only for a plan
// that names what the Context does not hold (and not because the
// Context changed since the policy looked).
//
// h, when not empty, says where the messages p names are.
func (r *guardRun) try(p Plan, h planHint, from string) (tryOutcome, error) {
	c := r.c
	for attempt := 0; attempt < 16; attempt++ {
		if attempt > 0 {
			p, h = r.filter(p, h)
		}
		if p.Empty() {
			return tryNothing, nil
		}
		prev := r.res.Reason
		d, err := c.prune(p, h, false)
		var vs []*Violation
		if err != nil {
			r.res.Reason = err
			var pe *PruneError
			if !errors.As(err, &pe) {
				if errors.Is(err, ErrInvalidInput) {
					if r.v.changed() {
						return tryNothing, nil // look again
					}
					return tryNothing, err
				}
				var de *DeferredError
				if errors.As(err, &de) && len(de.Units) > 0 {
					// The relaxed boundary: every unit the plan named is
					// in flight. They stay out of the rest of the check,
					// which goes on without them.
					for _, u := range de.Units {
						r.noEvictUnit(u)
					}
					continue
				}
				return tryDeferred, nil
			}
			vs = pe.Violations
		} else if len(d.Refused) > 0 {
			r.res.Reason = &PruneError{Violations: d.Refused}
			vs = d.Refused
		}
		if units, ok := r.standing(p, vs); ok {
			// Refused for the state of a tool, whatever the plan names:
			// only taking the calls that stand behind it can pass.
			if !r.standingTried && len(units) > 0 {
				r.standingTried = true
				if q := r.withUnits(p, units); len(q.Evict) > len(p.Evict) {
					p = q
					continue
				}
			}
			r.learn(p, vs)
			r.stop = true
			return tryNothing, nil
		}
		if len(vs) > 0 {
			cands, pending := r.learn(p, vs)
			if len(cands) > 0 {
				if r.spill(cands) {
					if len(pending) == len(vs) {
						r.res.Reason = prev // nothing stood in the way but what went to the store
					}
					continue // the spilled content may go now
				}
				r.report(pending)
			}
			if err != nil {
				continue
			}
		}
		if d.Empty() {
			return tryNothing, nil
		}
		if d.Freed <= 0 && r.spilledFor(d) {
			// It frees nothing, for the pointer lines of what it
			// spilled cost what the units held: it stays out of the
			// rest of the check as a screened decision does.
			r.screened(d, nil)
			continue
		}
		if r.g.Screen != nil {
			if sv := r.g.Screen.Screen(d); len(sv) > 0 {
				r.screened(d, sv)
				continue
			}
		}
		if err := c.Apply(d); err != nil {
			r.res.Reason = err
			return tryNothing, nil
		}
		r.applied(d)
		r.reopen()
		r.res.Decisions = append(r.res.Decisions, d)
		r.log.decision(r, d, from)
		return tryApplied, nil
	}
	return tryNothing, nil
}

// filter takes out of a plan what this check or an earlier one learned
// may not go: schema edits of refused tools, evictions of units refused
// or hidden, stubs refused or in units that may not be pruned, and stubs
// that would free nothing (those it hides from the policy too). It
// returns the plan with where its messages are: h says where they may
// be, and its slices are reused.
func (r *guardRun) filter(p Plan, h planHint) (Plan, planHint) {
	p = withoutTools(p, r.refusedTools)
	if len(p.Evict) == 0 && len(p.Stub) == 0 {
		return p, planHint{}
	}
	c := r.c
	var small []MessageID
	c.mu.RLock()
	if len(p.Stub) == 0 && len(r.v.hidden) == 0 && len(r.noEvict) == 0 && len(c.mem.units) == 0 {
		// No unit is hidden or refused: every eviction stays, and Prune
		// checks the hint as it finds the messages.
		c.mu.RUnlock()
		return p, h
	}
	dropEvict := func(q int32) bool {
		u := c.msg(q).unit
		return c.hides(r.v.hidden, q) || c.mem.refused(c, u) != nil || len(r.noEvict) > 0 && r.noEvict[UnitID(c.msgID(c.unit(u).head))]
	}
	dropStub := func(q int32, id MessageID) bool {
		x := c.msg(q)
		if c.hides(r.v.hidden, q) || c.mem.stubRefused(q) || r.v.stubHidden(q) {
			return true
		}
		if ur := c.mem.refused(c, x.unit); ur != nil && !ur.regen {
			return true // held back by the boundary: nothing of it may go
		}
		if x.flags&mStubbed != 0 {
			return true // stubbed already: a stub frees nothing more
		}
		if x.ans != none && c.tokensOf(q) <= c.stubTokens(q) {
			small = append(small, id)
			return true
		}
		return false
	}
	// keep filters ids, their positions written over hint as it goes
	// (none for an id the Context does not hold, which Prune reports).
	keep := func(ids []MessageID, hint []int32, drop func(q int32, id MessageID) bool) ([]MessageID, []int32) {
		at := hint[:0]
		if cap(hint) < len(ids) {
			at = make([]int32, 0, len(ids))
		}
		var out []MessageID // the ids kept, once one is dropped
		for i, id := range ids {
			q, ok := c.locate(id, hint, i)
			if !ok {
				q = none
			} else if drop(q, id) {
				if out == nil {
					out = make([]MessageID, i, len(ids))
					copy(out, ids[:i])
				}
				continue
			}
			if out != nil {
				out = append(out, id)
			}
			at = append(at, q)
		}
		if out == nil {
			return ids, at
		}
		return out, at
	}
	var next planHint
	p.Evict, next.evict = keep(p.Evict, h.evict, func(q int32, _ MessageID) bool { return dropEvict(q) })
	p.Stub, next.stub = keep(p.Stub, h.stub, dropStub)
	c.mu.RUnlock()
	if len(small) > 0 {
		r.v.hideStub(small...)
	}
	return p, next
}

// learn records the refusals vs of plan p: in the result and the log,
// in the Context's memory (units refused eviction, results refused a
// stub, by the boundary's pins and the regenerability gate), and for the
// rest of the check (units in flight or unread, split units, refused
// tools). With a Spill store it returns, instead of remembering them, the
// units and results refused only for content a spill would let go.
func (r *guardRun) learn(p Plan, vs []*Violation) (cands []spillCand, pending []*Violation) {
	var stubs, evictUnits map[string]bool
	if len(p.Stub) > 0 {
		stubs = make(map[string]bool, len(p.Stub))
		for _, id := range p.Stub {
			stubs[string(id)] = true
		}
		evictUnits = r.c.unitsOf(p.Evict)
	}
	var remUnits, remStubs []*Violation
	// What blocks a spill, and the spill candidates a regen violation
	// makes: only with a store to spill to.
	spills := r.g.Spill != nil
	var blocked, unitCand map[UnitID]bool
	var cand []spillCand
	if spills {
		blocked, unitCand = map[UnitID]bool{}, map[UnitID]bool{}
		cand = make([]spillCand, len(vs))
	}
	spillable := func(v *Violation, key string) bool {
		return spills && v.Code != CodeReferenced && !r.spillTried[key]
	}
	for i, v := range vs {
		switch v.Gate {
		case GateBoundary:
			if v.Code == CodePinned {
				remUnits = append(remUnits, v)
				for _, u := range v.Units {
					r.noEvictUnit(u)
				}
			} else {
				r.v.Hide(v.Units...)
			}
			for _, u := range v.Units {
				if spills {
					blocked[u] = true
				}
			}
		case GateSchema:
			for _, t := range v.Tools {
				r.refuseTool(t)
			}
		case GateRegen:
			if len(v.Units) == 0 || len(v.Messages) == 0 {
				continue
			}
			u, m := v.Units[0], v.Messages[0]
			if stubs[string(m)] && !evictUnits[string(u)] {
				switch {
				case spillable(v, string(m)) && r.c.pointerLarger(m):
					cand[i] = spillCand{unit: u, stub: m}
				case spillable(v, string(m)):
					// Its stub would show a pointer no smaller than it:
					// a stub that frees nothing.
					r.v.hideStub(m)
				default:
					remStubs = append(remStubs, v)
					r.v.hideStub(m)
				}
				continue
			}
			if !spillable(v, string(u)) {
				if spills {
					blocked[u] = true
				}
				remUnits = append(remUnits, v)
				continue // remembered, or held back for this check below
			}
			cand[i] = spillCand{unit: u}
		}
	}
	if !spills {
		added, kept := r.c.remember(remUnits, remStubs)
		r.keepOut(remUnits, added, kept)
		r.report(vs)
		return nil, nil
	}
	// A unit held for any reason a spill does not lift is not spilled:
	// its refusals are remembered whole. The refusals a spill may lift
	// are reported only if it fails.
	var now []*Violation
	for i, v := range vs {
		k := cand[i]
		switch {
		case k.unit == "":
			now = append(now, v)
		case k.stub == "" && blocked[k.unit]:
			remUnits = append(remUnits, v)
			now = append(now, v)
		default:
			pending = append(pending, v)
			if k.stub != "" || !unitCand[k.unit] {
				unitCand[k.unit] = unitCand[k.unit] || k.stub == ""
				cands = append(cands, k)
			}
		}
	}
	added, kept := r.c.remember(remUnits, remStubs)
	r.keepOut(remUnits, added, kept)
	r.report(now)
	return cands, pending
}

// keepOut records what remember did with the unit refusals vs: how many
// units and results it added, and, for each unit refusal it could not
// remember (its unit changed since Prune), that the unit stays out of
// this check all the same.
func (r *guardRun) keepOut(vs []*Violation, added int, kept []bool) {
	r.remembered += added
	for i, v := range vs {
		if !kept[i] {
			for _, u := range v.Units {
				r.noEvictUnit(u)
			}
		}
	}
}

// progress measures what this check has taken out of its plans: it only
// grows, and is bounded by what the Context holds, so the rounds it pays
// for end.
func (r *guardRun) progress() int {
	return r.remembered + len(r.refusedTools) + len(r.noEvict) + len(r.spillTried) + len(r.v.hidden) + len(r.v.noStub)
}

func (r *guardRun) noEvictUnit(u UnitID) {
	if r.noEvict == nil {
		r.noEvict = make(map[UnitID]bool)
	}
	r.noEvict[u] = true
}

// unitsOf returns the units of the messages ids names, by id.
func (c *Context) unitsOf(ids []MessageID) map[string]bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		if p, ok := c.find(id); ok {
			out[string(c.unitID(c.msg(p).unit))] = true
		}
	}
	return out
}

// screened takes out what the Screen refused of decision d for the rest
// of the check.
func (r *guardRun) screened(d *Decision, vs []*Violation) {
	r.report(vs)
	var back []MessageID // spilled for what the screen refused
	acted := false
	for _, v := range vs {
		for _, t := range v.Tools {
			if slices.Contains(d.DropSchemas, t) || slices.ContainsFunc(d.Compress, func(cs CompressedSchema) bool { return cs.Tool == t }) {
				if !r.refusedTools[t] {
					r.screenedTools = append(r.screenedTools, t)
				}
				r.refuseTool(t)
				acted = true
			}
		}
		stubbed := false
		for _, m := range v.Messages {
			if slices.Contains(d.Stub, m) {
				r.screenStub(m)
				back = append(back, m)
				stubbed, acted = true, true
			}
		}
		if !stubbed {
			for _, u := range v.Units {
				if slices.Contains(d.unitTab, u) {
					r.screenUnit(u)
					for _, id := range d.Evict {
						if w, ok := r.c.UnitOf(id); ok && w.ID == u {
							back = append(back, id)
						}
					}
					acted = true
				}
			}
		}
	}
	if !acted {
		// Nothing named: the whole decision is refused.
		back = append(append(back, d.Evict...), d.Stub...)
		for _, u := range d.unitTab {
			r.screenUnit(u)
		}
		for _, m := range d.Stub {
			r.screenStub(m)
		}
		for _, t := range d.DropSchemas {
			r.screenTool(t)
		}
		for _, cs := range d.Compress {
			r.screenTool(cs.Tool)
		}
	}
	r.takeBack(back)
}

// screenUnit keeps unit u out of the rest of the check, or until a
// decision is applied, for the Screen refused its eviction.
func (r *guardRun) screenUnit(u UnitID) {
	if !r.v.Hidden(u) && !r.noEvict[u] {
		r.screenedUnits = append(r.screenedUnits, u)
	}
	r.v.Hide(u)
	r.noEvictUnit(u)
}

// screenStub keeps result m from being stubbed, as screenUnit does.
func (r *guardRun) screenStub(m MessageID) {
	if _, ok := r.v.noStub[string(m)]; !ok {
		r.screenedStubs = append(r.screenedStubs, m)
	}
	r.v.hideStub(m)
}

// screenTool keeps the schema of tool t as it is, as screenUnit does.
func (r *guardRun) screenTool(t string) {
	if !r.refusedTools[t] {
		r.screenedTools = append(r.screenedTools, t)
	}
	r.refuseTool(t)
}

// reopen lets what the Screen refused since the last decision be tried
// again, now that a decision changed what it answered: a unit whose
// eviction would have orphaned a result may go once the result has.
func (r *guardRun) reopen() {
	for _, u := range r.screenedUnits {
		delete(r.v.hidden, string(u))
		delete(r.noEvict, u)
	}
	for _, m := range r.screenedStubs {
		delete(r.v.noStub, string(m))
	}
	for _, t := range r.screenedTools {
		delete(r.refusedTools, t)
	}
	r.screenedUnits, r.screenedStubs, r.screenedTools = r.screenedUnits[:0], r.screenedStubs[:0], r.screenedTools[:0]
}

func (r *guardRun) refuseTool(t string) {
	if r.refusedTools == nil {
		r.refusedTools = make(map[string]bool)
	}
	r.refusedTools[t] = true
}

// report records refusals in the result, skipping those already there,
// and in the log.
func (r *guardRun) report(vs []*Violation) {
	n := len(r.res.Refused)
	c := r.c
	c.mu.RLock()
	for _, v := range vs {
		if r.met.seen(c, v, r.res.Refused) {
			continue
		}
		r.res.Refused = append(r.res.Refused, v)
	}
	c.mu.RUnlock()
	for _, v := range r.res.Refused[n:] {
		r.log.refusal(r, v)
	}
}

// metSet is the set of refusals a check met. Those that name a message,
// one unit at most and no tool (most refusals, each of the
// regenerability gate) are chained by the position of their first
// message, the rest kept by the hash of their key: a refusal costs a few
// steps, however many there are and however long their ids.
type metSet struct {
	// comp is the Context's compactions when at was filled: a compaction
	// moves the messages, and at is filled again.
	comp  int
	at    []int32 // a message's position, to 1 + the index of the last refusal naming it
	prev  []int32 // a refusal's index, to 1 + the index of the one before it in its chain
	seed  maphash.Seed
	first map[uint64][]int // a hash, to the refusals with it
}

// place returns the position of the first message v names, when it
// names one unit at most and no tool, or none: for a refusal the
// regenerability gate made, where it saw it. Under the read lock.
func (s *metSet) place(c *Context, v *Violation) int32 {
	if len(v.Messages) == 0 || len(v.Units) > 1 || len(v.Tools) > 0 {
		return none
	}
	if v.one && v.seen.comp == c.compactions {
		return int32(v.pos)
	}
	if p, ok := c.find(v.Messages[0]); ok {
		return p
	}
	return none
}

// seen reports whether a refusal that makes v's objection is in met, the
// refusals reported so far, and records v as the next one when not.
// Under the read lock.
func (s *metSet) seen(c *Context, v *Violation, met []*Violation) bool {
	if s.at == nil || s.comp != c.compactions {
		s.chain(c, met)
	}
	s.prev = append(s.prev, 0) // v's, if it joins met
	if p := s.place(c, v); p != none {
		if int(p) >= len(s.at) {
			s.at = append(s.at, make([]int32, int(p)+1-len(s.at))...)
		}
		for i := s.at[p]; i != 0; i = s.prev[i-1] {
			if met[i-1].same(v) {
				s.prev = s.prev[:len(met)]
				return true
			}
		}
		s.prev[len(met)] = s.at[p]
		s.at[p] = int32(len(met) + 1)
		return false
	}
	if s.hashed(v, met) {
		s.prev = s.prev[:len(met)]
		return true
	}
	return false
}

// chain files again, by the positions of their messages now, the
// refusals met that name one message. Under the read lock.
func (s *metSet) chain(c *Context, met []*Violation) {
	s.comp = c.compactions
	s.at = make([]int32, c.msgs.Len())
	s.prev = s.prev[:0]
	for i, v := range met {
		s.prev = append(s.prev, 0)
		if p := s.place(c, v); p != none {
			s.prev[i] = s.at[p]
			s.at[p] = int32(i + 1)
		}
	}
}

// hashed is seen for a refusal that names no one message held.
func (s *metSet) hashed(v *Violation, met []*Violation) bool {
	if s.first == nil {
		s.seed = maphash.MakeSeed()
		s.first = make(map[uint64][]int)
	}
	h := v.hash(s.seed)
	for _, i := range s.first[h] {
		if met[i].same(v) {
			return true
		}
	}
	s.first[h] = append(s.first[h], len(met))
	return false
}

// hash returns a hash of what v names, as same compares it: equal
// objections hash alike. It reads the gate, the code, the first and last
// unit, message and tool and how many of each, so that it costs the same
// for a violation naming thousands of units as for one naming one.
func (v *Violation) hash(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteByte(byte(v.Gate))
	h.WriteString(string(v.Code))
	ends := func(n int, at func(int) string) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
		if n > 0 {
			h.WriteString(at(0))
			h.WriteByte(0)
			h.WriteString(at(n - 1))
		}
		h.WriteByte(1)
	}
	ends(len(v.Units), func(i int) string { return string(v.Units[i]) })
	ends(len(v.Messages), func(i int) string { return string(v.Messages[i]) })
	ends(len(v.Tools), func(i int) string { return v.Tools[i] })
	return h.Sum64()
}

// standing reports whether every violation of vs names no unit, no
// message and no tool whose schema p edits: a refusal for the state of a
// tool (arguments or a requiring message behind a missing schema), which
// no plan passes until the calls behind it go or the tool changes. It
// returns the units of the calls the violations name.
func (r *guardRun) standing(p Plan, vs []*Violation) (units []UnitID, ok bool) {
	if len(vs) == 0 {
		return nil, false
	}
	edits := func(t string) bool {
		_, compressed := p.CompressSchemas[t]
		return compressed || slices.Contains(p.DropSchemas, t)
	}
	c := r.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, v := range vs {
		if len(v.Units) > 0 || len(v.Messages) > 0 || slices.ContainsFunc(v.Tools, edits) {
			return nil, false
		}
		for _, id := range v.Calls {
			if k, found := c.byCall.Find(string(id)); found {
				if u := c.unitID(c.msg(c.call(k).caller).unit); !slices.Contains(units, u) {
					units = append(units, u)
				}
			}
		}
	}
	return units, true
}

// withUnits adds to p's evictions the messages of units that may go
// (closed, not pinned, not refused in this check).
func (r *guardRun) withUnits(p Plan, units []UnitID) Plan {
	q := p
	q.Evict = slices.Clone(p.Evict)
	named := make(map[MessageID]bool, len(p.Evict))
	for _, m := range p.Evict {
		named[m] = true
	}
	for _, id := range units {
		u, ok := r.c.UnitOf(MessageID(id))
		if !ok || u.ID != id || !prunable(u) || r.noEvict[id] || r.v.Hidden(id) {
			continue
		}
		for _, m := range u.Messages {
			if !named[m] {
				named[m] = true
				q.Evict = append(q.Evict, m)
			}
		}
	}
	return q
}

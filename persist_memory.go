package pruneguard

import "slices"

// What a Context remembers, in its saved form (see persist_format.go),
// and back.

// savedMemory returns what the Context remembers.
func (c *Context) savedMemory() savedMemory {
	var s savedMemory
	for k, v := range c.gone.Slots() {
		var g *savedGone
		if v != nil {
			g = &savedGone{Call: str(k), Abandoned: *v}
		}
		s.PrunedCalls = append(s.PrunedCalls, g)
	}
	for k, v := range c.cleared.Slots() {
		var pr *savedPruned
		if v != nil {
			pr = &savedPruned{Signature: hexBytes(k), Class: className(v.class), Hash: hexHash(v.hash), Message: str(v.msg), Stubbed: v.stubbed}
		}
		s.PrunedResults = append(s.PrunedResults, pr)
	}
	for _, a := range c.alerts {
		s.Alerts = append(s.Alerts, savedAlert{
			Tool: str(a.Tool), Call: str(a.Call), Result: str(a.Result), Pruned: str(a.Pruned),
			Stubbed: a.Stubbed, Class: className(a.Class), Match: a.Match, Was: hexHash(a.Was), Now: hexHash(a.Now),
		})
	}
	for _, ep := range c.ghostLog {
		e := ep.ev
		s.Ghosts = append(s.Ghosts, savedGhost{
			Tool: str(c.tools[ep.tool].t.Name), Open: ep.open, From: str(ep.from), Call: str(e.Call), Copied: str(e.Copied),
			Missing: strs(e.Missing), Stale: strs(e.Stale), Rejected: str(e.Rejected), Fields: strs(e.Fields),
			Sibling: str(e.Sibling), SiblingCall: str(e.SiblingCall), Reexpanded: e.Reexpanded,
		})
	}
	for _, e := range c.reexp {
		s.Reexpansions = append(s.Reexpansions, savedReexp{Tool: str(e.tool), Tombstoned: e.tombstoned, Withdrawn: e.withdrawn})
	}
	s.RefusedUnits, s.RefusedStubs = c.savedRefusals()
	s.Swept, s.SweptAll, s.SweptPassed = c.savedSwept()
	return s
}

// savedRefusals returns the refusals the guards remember that still
// hold: of units, in the order of the units (a sweep's run whose units
// all hold as one), and of stubs, in transcript order.
func (c *Context) savedRefusals() (units, stubs []savedRefusal) {
	m := &c.mem
	if len(m.units) > 0 {
		m.eachRefused(c, c.unitsInOrder, func(u int32, vs []*Violation, run bool) {
			if run {
				units = append(units, savedRefusal{Run: strs(vs[0].Units), Violations: savedViolations(vs)})
			} else {
				units = append(units, savedRefusal{Unit: str(c.unitID(u)), Violations: savedViolations(vs)})
			}
		})
	}
	if len(m.stubs) == 0 || m.epoch != c.judge() {
		return units, nil
	}
	ps := slices.Sorted(mapKeys(m.stubs))
	for _, p := range ps {
		stubs = append(stubs, savedRefusal{Message: str(c.id(p)), Violations: savedViolations(m.stubs[p])})
	}
	return units, stubs
}

// savedSwept returns where the next sweep starts, as saved: nothing for
// the first unit, the first message of a unit, or after the last; and
// the first messages of the units it passed that are still held.
func (c *Context) savedSwept() (at str, all bool, passed []str) {
	from, ps := c.mem.sweepFrom(c)
	for _, p := range ps {
		if c.heads(p) {
			passed = append(passed, str(c.id(p)))
		}
	}
	first := c.firstUnit()
	for p := from; p < c.msgs.Len(); p++ {
		switch {
		case !c.heads(p):
		case c.msg(p).unit == first:
			return "", false, passed
		default:
			return str(c.id(p)), false, passed
		}
	}
	return "", first != none, passed
}

func savedViolations(vs []*Violation) []savedViolation {
	out := make([]savedViolation, 0, len(vs))
	for _, v := range vs {
		sv := savedViolation{
			Gate: gateName(v.Gate), Code: str(v.Code), Units: strs(v.Units), Messages: strs(v.Messages),
			Tools: strs(v.Tools), Calls: strs(v.Calls), Steps: strs(v.Steps),
		}
		for _, f := range v.Facts {
			sv.Facts = append(sv.Facts, savedPublicFact{Message: str(f.Message), Kind: str(f.Kind), Text: str(f.Text)})
		}
		out = append(out, sv)
	}
	return out
}

// restoreMemory takes what the Context remembers from s, checking what
// it refers to.
func (b *restorer) memory() error {
	s, c := &b.s.Memory, b.c
	if len(s.PrunedCalls) > recentBound || len(s.PrunedResults) > recentBound {
		return badStateBecause("memory", "", "more pruned calls or results than a Context remembers")
	}
	for _, g := range s.PrunedCalls {
		if g == nil {
			c.gone.Put("", false)
			c.gone.Forget("")
			continue
		}
		if g.Call == "" {
			return badStateBecause("memory.prunedCalls", "", "a call with no id")
		}
		c.gone.Put(string(g.Call), g.Abandoned)
	}
	for _, pr := range s.PrunedResults {
		if pr == nil {
			c.cleared.Put("", prunedResult{})
			c.cleared.Forget("")
			continue
		}
		if len(pr.Signature) != 16 {
			return badStateBecause("memory.prunedResults", string(pr.Message), "a signature is 16 bytes")
		}
		c.cleared.Put(string(pr.Signature), prunedResult{class: Class(pr.Class), hash: ContentHash(pr.Hash), msg: MessageID(pr.Message), stubbed: pr.Stubbed})
	}
	if len(s.Alerts) > alertBound || len(s.Reexpansions) > reexpBound {
		return badStateBecause("memory", "", "more alerts or re-expansions than a Context keeps")
	}
	for _, a := range s.Alerts {
		c.alerts = append(c.alerts, RefetchAlert{
			Tool: string(a.Tool), Call: CallID(a.Call), Result: MessageID(a.Result), Pruned: MessageID(a.Pruned),
			Stubbed: a.Stubbed, Class: Class(a.Class), Match: a.Match, Was: ContentHash(a.Was), Now: ContentHash(a.Now),
		})
	}
	for _, e := range s.Reexpansions {
		if c.toolRec(string(e.Tool)) == nil {
			return badStateBecause("memory.reexpansions", string(e.Tool), "no such tool")
		}
		c.reexp = append(c.reexp, reexpansion{tool: string(e.Tool), tombstoned: e.Tombstoned, withdrawn: e.Withdrawn})
	}
	if err := b.ghosts(); err != nil {
		return err
	}
	return b.refusals()
}

// ghosts takes the ghost-tool episodes, open ones on their tools.
func (b *restorer) ghosts() error {
	c := b.c
	if len(b.s.Memory.Ghosts) > ghostLogBound {
		return badStateBecause("memory.ghosts", "", "more episodes than a Context keeps")
	}
	for _, g := range b.s.Memory.Ghosts {
		ti, ok := c.toolIdx[string(g.Tool)]
		if !ok || g.Open && c.tools[ti].ep != nil {
			return badStateBecause("memory.ghosts", string(g.Tool), "no such tool, or two open episodes")
		}
		ep := &ghostEpisode{
			ev: GhostEvidence{
				Tool: string(g.Tool), Call: CallID(g.Call), Copied: CallID(g.Copied),
				Missing: unstrs[string](g.Missing), Stale: unstrs[string](g.Stale), Rejected: CallID(g.Rejected),
				Fields: unstrs[string](g.Fields), Sibling: string(g.Sibling), SiblingCall: CallID(g.SiblingCall),
				Reexpanded: g.Reexpanded,
			},
			tool: ti, open: g.Open, from: MessageID(g.From),
		}
		if g.Open {
			c.tools[ti].ep = ep
			c.openGhosts++
		}
		c.ghostLog = append(c.ghostLog, ep)
	}
	return nil
}

// refusals takes the refusals the guards remember, as holding now.
func (b *restorer) refusals() error {
	c := b.c
	m := &c.mem
	m.epoch = c.judge()
	for _, sr := range b.s.Memory.RefusedUnits {
		if len(sr.Run) > 0 {
			if err := b.run(sr); err != nil {
				return err
			}
			continue
		}
		p, ok := c.find(MessageID(sr.Unit))
		if !ok || c.unit(c.msg(p).unit).head != p || len(sr.Violations) == 0 {
			return badStateBecause("memory.refusedUnits", string(sr.Unit), "not the first message of a unit")
		}
		u := c.msg(p).unit
		if m.units == nil {
			m.units = make(map[int32]*unitRefusal)
		}
		r := &unitRefusal{ver: c.unit(u).version, last: u, vs: b.violations(sr.Violations)}
		for _, v := range r.vs {
			r.regen = r.regen || v.Gate == GateRegen
		}
		m.units[u] = r
	}
	for _, sr := range b.s.Memory.RefusedStubs {
		p, ok := c.find(MessageID(sr.Message))
		if !ok || !c.isResult(p) || len(sr.Violations) == 0 || m.stubs[p] != nil {
			return badStateBecause("memory.refusedStubs", string(sr.Message), "not a result")
		}
		if m.stubs == nil {
			m.stubs = make(map[int32][]*Violation)
		}
		m.stubs[p] = b.violations(sr.Violations)
		c.whole.Delete(p)
		c.bySize.Delete(c.sizeKey(p))
	}
	return b.swept()
}

// run takes a sweep's run saved: one violation of the regenerability
// gate naming the units of sr.Run, next to each other, and for each in
// turn its messages held.
func (b *restorer) run(sr savedRefusal) error {
	c := b.c
	bad := func(why string) error { return badStateBecause("memory.refusedUnits", string(sr.Run[0]), why) }
	if len(sr.Violations) != 1 {
		return bad("a run has one violation")
	}
	v := b.violations(sr.Violations)[0]
	if v.Gate != GateRegen || !slices.Equal(strs(v.Units), strs(sr.Run)) || len(v.Messages) < len(v.Units) {
		return bad("a run's violation names its units and their messages")
	}
	v.us = make([]int32, len(v.Units))
	v.seen = seenAt{comp: c.compactions, judge: c.judge()}
	recs := make([]unitRefusal, len(v.Units))
	j := 0       // the next message of v
	prev := none // the unit before
	for i, id := range v.Units {
		p, ok := c.find(MessageID(id))
		if !ok || c.unit(c.msg(p).unit).head != p {
			return bad("not the first message of a unit")
		}
		u := c.msg(p).unit
		if i > 0 && c.unit(u).prev != prev {
			return bad("units of a run not next to each other")
		}
		prev = u
		from, last := j, none // last: the message before, of u
		for ; j < len(v.Messages); j++ {
			q, ok := c.find(v.Messages[j])
			if !ok || c.msg(q).unit != u || q <= last {
				break
			}
			last = q
		}
		if j == from {
			return bad("a unit of a run with no message held")
		}
		v.us[i] = u
		recs[i] = unitRefusal{ver: c.unit(u).version, regen: true, run: v, at: int32(i), msgs: [2]int32{int32(from), int32(j)}, last: u}
	}
	if j != len(v.Messages) {
		return bad("a message held outside the run's units")
	}
	if c.mem.units == nil {
		c.mem.units = make(map[int32]*unitRefusal, len(recs))
	}
	c.mem.keepSwept(c, recs)
	return nil
}

// swept takes where the next sweep starts, and the units it passed:
// first messages of units, in order, before where it starts.
func (b *restorer) swept() error {
	c, s := b.c, b.s.Memory
	head := func(id str) (int32, bool) {
		p, ok := c.find(MessageID(id))
		return p, ok && c.unit(c.msg(p).unit).head == p
	}
	mark := sweepMark{comp: c.compactions, judge: c.judge()}
	switch {
	case s.SweptAll:
		mark.pos = c.msgs.Len()
	case s.Swept != "":
		p, ok := head(s.Swept)
		if !ok {
			return badStateBecause("memory.swept", string(s.Swept), "not the first message of a unit")
		}
		mark.pos = p
	}
	for _, id := range s.SweptPassed {
		p, ok := head(id)
		if !ok || p >= mark.pos || len(mark.passed) > 0 && p <= mark.passed[len(mark.passed)-1] {
			return badStateBecause("memory.sweptPassed", string(id), "not the first message of a unit, in order, before where the sweep starts")
		}
		mark.passed = append(mark.passed, p)
	}
	c.mem.swept = mark
	return nil
}

// violations makes the violations a refusal saved, each placed in the
// transcript where its gate places it: a boundary refusal at its unit's
// first message, another at its first message.
func (b *restorer) violations(svs []savedViolation) []*Violation {
	c := b.c
	out := make([]*Violation, 0, len(svs))
	for _, sv := range svs {
		v := &Violation{
			Gate: Gate(sv.Gate), Code: Code(sv.Code), Units: unstrs[UnitID](sv.Units), Messages: unstrs[MessageID](sv.Messages),
			Tools: unstrs[string](sv.Tools), Calls: unstrs[CallID](sv.Calls), Steps: unstrs[StepID](sv.Steps),
		}
		for _, f := range sv.Facts {
			v.Facts = append(v.Facts, Fact{Message: MessageID(f.Message), Kind: string(f.Kind), Text: string(f.Text)})
		}
		if p, ok := c.placeOf(v); ok {
			v.pos = uint64(p)
		}
		out = append(out, v)
	}
	return out
}

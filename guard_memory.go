package pruneguard

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// What a Context remembers of the refusals its guards met, so that later
// checks neither walk nor retry them.
//
// A [Guard] remembers two kinds of refusal: a unit the gates refused to
// evict whole (a pinned message in it, content that cannot be obtained
// again, a message a planned step names), and a tool result they refused
// to stub. A unit refusal holds while the unit's version stays the same;
// one of the regenerability gate holds, besides, while neither the tool
// registry nor the task plan changes (the judgement epoch: the Context's
// epoch less the bumps of Apply, which change nothing a refusal rests
// on). A spill, a merge of units, a message leaving (an eviction, a
// summary: the refusals of its unit and its stub go with it) and
// [Context.ForgetRefusals] drop refusals at once. Refusals of units in
// flight or unread, of a split plan, of a schema and of a Screen are
// never remembered: they change with the plan or come from outside the
// gates.
//
// Units refused are passed over by [View.Units] in runs: the first unit of
// a run keeps a hint to the run's last unit, so that a walk crosses a run
// of any length in constant time. Hints hold until a refusal is dropped or
// units move (a merge, a compaction), which bumps gen. Results refused a
// stub leave the indexes of whole and largest results while the refusal
// holds.

// refusalMemory is a Context's memory of refusals. Its maps and gen
// change under the Context's write lock; the hints of its unit refusals
// change under mu, taken with the read lock by the walks.
type refusalMemory struct {
	mu      sync.Mutex
	units   map[int32]*unitRefusal // by unit
	stubs   map[int32][]*Violation // by message position
	epoch   uint64                 // the judgement epoch of the regen refusals remembered
	applies uint64                 // the Context's epoch bumps made by Apply
	gen     uint64                 // bumped when a refusal is dropped or units move
	checks  atomic.Uint64          // the guard checks that ran, for their compaction ids
	cfg     atomic.Uint32          // the Config checked: 1 valid, 2 not
	swept   sweepMark              // where the last sweep stopped
}

// unitRefusal is a unit the gates refused to evict whole.
type unitRefusal struct {
	ver   uint32 // the unit's version when refused
	regen bool   // a regen refusal: it rests on the judgement epoch too
	vs    []*Violation
	// run, when set, is a sweep's violation naming this unit among others
	// refused next to it for the same reason: the unit at index at of its
	// Units, its messages from msgs[0] to msgs[1] of its Messages. vs is
	// empty then; see violations.
	run  *Violation
	at   int32
	msgs [2]int32
	// The hint: the last unit of the run of refused units this one
	// starts, as of gen.
	last int32
	gen  uint64
}

// violations returns the violations of the refusal of unit u: vs, or for
// a unit of a sweep's run, one naming it alone, made on demand. Under the
// read lock.
func (r *unitRefusal) violations(c *Context, u int32) []*Violation {
	if r.run == nil {
		return r.vs
	}
	v, placed := r.run.part(c, [2]int32{r.at, r.at + 1}, r.msgs)
	v.seen = seenAt{unit: u, ver: r.ver, comp: c.compactions, judge: c.judge(), ok: true}
	if v.one = placed; !placed {
		v.pos = 0
	}
	return []*Violation{v}
}

// part returns a copy of run, a sweep's violation, naming its units at[0]
// to at[1] and its messages msgs[0] to msgs[1], placed in the transcript
// as it is now, and whether its first message was found to place it.
// Under the read lock.
func (run *Violation) part(c *Context, at, msgs [2]int32) (*Violation, bool) {
	v := *run
	v.Units = run.Units[at[0]:at[1]:at[1]]
	v.Messages = run.Messages[msgs[0]:msgs[1]:msgs[1]]
	v.us = nil
	if len(run.us) == len(run.Units) {
		v.us = run.us[at[0]:at[1]:at[1]]
	}
	p, ok := c.placeOf(&v)
	if ok {
		v.pos = uint64(p)
	}
	return &v, ok
}

// seenAt is the unit a violation names, as Prune saw it.
type seenAt struct {
	unit  int32
	ver   uint32
	comp  int    // the Context's compactions
	judge uint64 // the judgement epoch
	ok    bool
}

// judge returns the judgement epoch: what the regenerability gate rests
// on beside the units themselves (tools, steps, sealing).
func (c *Context) judge() uint64 { return c.epoch - c.mem.applies }

// stampViolations records on each violation the unit it names as the
// run sees it, so that the guard remembers a refusal only while nothing
// changed since.
func (r *pruneRun) stampViolations(vs []*Violation) {
	c := r.c
	for _, v := range vs {
		if len(v.Units) == 0 || v.seen.ok {
			continue // none, or stamped when made
		}
		p, ok := c.find(MessageID(v.Units[0]))
		if !ok {
			continue
		}
		u := c.msg(p).unit
		if c.unit(u).head != p {
			continue
		}
		v.seen = seenAt{unit: u, ver: c.unit(u).version, comp: c.compactions, judge: c.judge(), ok: true}
	}
}

// current reports whether the unit s names is as it was seen.
func (c *Context) current(s seenAt) bool {
	return s.ok && s.comp == c.compactions && s.unit < c.units.Len() && c.unit(s.unit).head != none &&
		c.unit(s.unit).version == s.ver && s.judge == c.judge()
}

// refused returns the refusal of unit u if it still holds. Under the
// read lock.
func (m *refusalMemory) refused(c *Context, u int32) *unitRefusal {
	r := m.units[u]
	if r == nil {
		return nil
	}
	un := c.unit(u)
	if un.head == none || un.version != r.ver || r.regen && m.epoch != c.judge() {
		return nil
	}
	return r
}

// stubRefused reports whether result p was refused a stub. Under the
// read lock.
func (m *refusalMemory) stubRefused(p int32) bool {
	_, ok := m.stubs[p]
	return ok
}

// remember records refusals: units refused eviction and results refused
// a stub, each as the violation's stamp saw it. A refusal whose unit
// changed since is not recorded. It returns how many units and results it
// added, and which of the unit refusals it holds (kept[i] for units[i]).
func (c *Context) remember(units, stubs []*Violation) (added int, kept []bool) {
	kept = make([]bool, len(units))
	if len(units) == 0 && len(stubs) == 0 {
		return 0, kept
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &c.mem
	m.sync(c)
	var fresh []unitRefusal // the records added, in one allocation
	for i := 0; i < len(units); i++ {
		v := units[i]
		s := v.seen
		if !c.current(s) {
			continue
		}
		kept[i] = true
		r := m.units[s.unit]
		if r == nil || r.ver != s.ver {
			added++
			if len(fresh) == cap(fresh) {
				fresh = make([]unitRefusal, 0, len(units)-i)
			}
			fresh = append(fresh, unitRefusal{ver: s.ver, last: s.unit})
			r = &fresh[len(fresh)-1]
			if m.units == nil {
				m.units = make(map[int32]*unitRefusal, len(units))
			}
			m.units[s.unit] = r
			// The unit's refusals that follow in units are its first ones:
			// kept as they are, capped so that a later one is copied.
			j := i + 1
			for j < len(units) && units[j].seen == s && !slices.ContainsFunc(units[i:j], units[j].same) {
				kept[j] = true
				j++
			}
			r.vs = units[i:j:j]
			r.regen = slices.ContainsFunc(r.vs, func(v *Violation) bool { return v.Gate == GateRegen })
			i = j - 1
			continue
		}
		r.regen = r.regen || v.Gate == GateRegen
		if r.run != nil {
			r.vs, r.run = r.violations(c, s.unit), nil
		}
		if !slices.ContainsFunc(r.vs, v.same) {
			r.vs = append(r.vs, v)
		}
	}
	for _, v := range stubs {
		s := v.seen
		if !c.current(s) || len(v.Messages) == 0 {
			continue
		}
		p, ok := c.find(v.Messages[0])
		if !ok || c.msg(p).unit != s.unit || !c.isResult(p) {
			continue
		}
		if m.stubs == nil {
			m.stubs = make(map[int32][]*Violation)
		}
		if _, had := m.stubs[p]; !had {
			added++
			c.whole.Delete(p)
			c.bySize.Delete(c.sizeKey(p))
			c.shape++
		}
		if !slices.ContainsFunc(m.stubs[p], v.same) {
			m.stubs[p] = append(m.stubs[p], v)
		}
	}
	return added, kept
}

// sync drops the regen refusals when the judgement epoch moved on.
// Under the write lock.
func (m *refusalMemory) sync(c *Context) {
	j := c.judge()
	if m.epoch == j {
		return
	}
	m.epoch = j
	for u, r := range m.units {
		if r.regen {
			delete(m.units, u)
		}
	}
	// A stub is refused by the regenerability gate alone: every one goes.
	m.unstubAll(c)
	m.gen++
}

// syncRefusals brings the memory up to the judgement epoch, taking the
// write lock only when it moved on.
func (c *Context) syncRefusals() {
	c.mu.RLock()
	need := c.mem.epoch != c.judge() && (len(c.mem.units) > 0 || len(c.mem.stubs) > 0)
	c.mu.RUnlock()
	if need {
		c.mu.Lock()
		c.mem.sync(c)
		c.mu.Unlock()
	}
}

// unstub drops the stub refusal of result p and puts it back in the
// indexes of whole results. Under the write lock.
func (m *refusalMemory) unstub(c *Context, p int32) {
	if _, ok := m.stubs[p]; !ok {
		return
	}
	delete(m.stubs, p)
	if x := c.msg(p); x.flags&(mDead|mStubbed) == 0 && x.ans != none {
		c.whole.Insert(p)
		c.bySize.Insert(c.sizeKey(p))
	}
	c.shape++
}

func (m *refusalMemory) unstubAll(c *Context) {
	for p := range m.stubs {
		m.unstub(c, p)
	}
}

// spilled drops what a pointer recorded on message p may lift: the
// refusal of its unit and of its stub. Under the write lock.
func (m *refusalMemory) spilled(c *Context, p int32) {
	if len(m.units) == 0 && len(m.stubs) == 0 {
		return
	}
	m.unstub(c, p)
	m.dropUnit(c.msg(p).unit)
}

// left drops the refusals message p took with it as it left the
// transcript (an eviction, a summary): the refusal of its unit and of
// its stub. It is the one place a refusal goes with its messages,
// whatever the versions of units count. Under the write lock, before p's
// record is reused or renumbered.
func (m *refusalMemory) left(c *Context, p int32) {
	if len(m.units) == 0 && len(m.stubs) == 0 {
		return
	}
	delete(m.stubs, p) // not put back in the indexes of results: p leaves them
	m.dropUnit(c.msg(p).unit)
}

// touch records that unit u changed (a chunk, a result, a pin, a
// coupling, a message leaving): its version moves on, and the refusal
// remembered of it goes, with the hints of the walks, which may cross
// it. Every change of a unit goes through it. Under the write lock.
func (c *Context) touch(u int32) {
	c.unit(u).version++
	c.mem.dropUnit(u)
}

// dropUnit drops the refusal of unit u, if remembered. Under the write
// lock.
func (m *refusalMemory) dropUnit(u int32) {
	if _, ok := m.units[u]; ok {
		delete(m.units, u)
		m.gen++
	}
}

// merged drops the refusals of units a and b, which merge. Under the
// write lock.
func (m *refusalMemory) merged(c *Context, a, b int32) {
	if len(m.units) == 0 {
		return
	}
	delete(m.units, a)
	delete(m.units, b)
	m.gen++
}

// moved records that a unit moved in the order of the units. Under the
// write lock.
func (m *refusalMemory) moved() { m.gen++ }

// compacted renumbers the memory after a compaction, with the new
// positions of messages (pm) and units (um), and takes the results
// refused a stub out of the rebuilt indexes again. Under the write lock.
func (m *refusalMemory) compacted(c *Context, pm, um []int32) {
	m.gen++
	if s := &m.swept; s.comp == c.compactions-1 {
		// The sweep goes on from the first message held from its mark on,
		// and takes up the units it passed that are held.
		p := s.pos
		for p < int32(len(pm)) && pm[p] == none {
			p++
		}
		s.pos, s.comp = c.msgs.Len(), c.compactions
		if p < int32(len(pm)) {
			s.pos = pm[p]
		}
		passed := make([]int32, 0, len(s.passed))
		for _, q := range s.passed {
			if pm[q] != none {
				passed = append(passed, pm[q])
			}
		}
		s.passed = passed
	}
	if len(m.units) > 0 {
		units := make(map[int32]*unitRefusal, len(m.units))
		for u, r := range m.units {
			if v := um[u]; v != none {
				r.last, r.gen = v, 0
				units[v] = r
			}
		}
		m.units = units
	}
	if len(m.stubs) > 0 {
		stubs := make(map[int32][]*Violation, len(m.stubs))
		for p, vs := range m.stubs {
			if q := pm[p]; q != none {
				stubs[q] = vs
				c.whole.Delete(q)
				c.bySize.Delete(c.sizeKey(q))
			}
		}
		m.stubs = stubs
	}
}

// candidate returns the first unit from u on, in the order of the units,
// that is not remembered as refused, or none. It crosses a run of refused
// units by the hint of its first unit, and leaves that hint on the run's
// last unit. Under the read lock.
func (c *Context) candidate(u int32) int32 {
	m := &c.mem
	if u == none || len(m.units) == 0 {
		return u
	}
	first := m.refused(c, u)
	if first == nil {
		return u
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	last := u
	for r := first; r != nil; r = m.refused(c, u) {
		last = u
		if r.gen == m.gen && r.last != u && m.refused(c, r.last) != nil {
			last = r.last
		}
		if u = c.unit(last).next; u == none {
			break
		}
	}
	first.last, first.gen = last, m.gen
	return u
}

// refusedUnit reports whether unit id is remembered as refused.
func (c *Context) refusedUnit(id UnitID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.mem.units) == 0 {
		return false
	}
	p, ok := c.find(MessageID(id))
	if !ok || c.unit(c.msg(p).unit).head != p {
		return false
	}
	return c.mem.refused(c, c.msg(p).unit) != nil
}

// Refusals lists the refusals the guards checking this Context met that
// still hold, so that later checks pass over them: units the gates
// refused to evict whole, and tool results they refused to stub, in the
// order of the gates and the transcript. A run of units next to each
// other that one sweep of a guard refused for one reason (see
// [Guard.Check]) is named by one violation, as long as its units all
// hold; the runs of different sweeps stay apart. The memory is the
// Context's, not a Guard's: every Guard on the Context reads and adds to
// it, and [Context.ForgetRefusals] clears it. A refusal holds until its
// unit changes (a chunk, a result, a pin, a coupling), a pointer is
// recorded on its messages, a message of its unit leaves (an eviction, a
// summary), or, for the regenerability gate's, the tool registry or the
// task plan changes. It costs time in proportion to the refusals
// remembered.
func (c *Context) Refusals() []*Violation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := &c.mem
	var out []*Violation
	// Gathered in the order of units and messages, which is nearly the
	// order asked for, so that the sort has little left to do: by a walk
	// of the units when most are remembered, else by their numbers.
	units := c.unitsInOrder
	if n := len(m.units); n == 0 || n < int(c.units.Len())/16 {
		// In the order of the units, which a merge or a summary may set
		// apart from the order of their numbers.
		us := slices.Collect(maps.Keys(m.units))
		slices.SortFunc(us, func(a, b int32) int { return cmp.Compare(c.unit(a).head, c.unit(b).head) })
		units = slices.Values(us)
	}
	m.eachRefused(c, units, func(_ int32, vs []*Violation, run bool) {
		for _, v := range vs {
			if !run {
				v = c.placed(v)
			}
			out = append(out, v)
		}
	})
	if m.epoch == c.judge() {
		for _, p := range slices.Sorted(maps.Keys(m.stubs)) {
			out = append(out, m.stubs[p]...)
		}
	}
	sortViolations(out)
	return slices.CompactFunc(out, (*Violation).same)
}

// placed returns v, or when a compaction moved the messages since v was
// made, a copy of it placed in the transcript as it is now, so that
// refusals sort in transcript order. Under the read lock.
func (c *Context) placed(v *Violation) *Violation {
	if !v.seen.ok || v.seen.comp == c.compactions {
		return v
	}
	w := *v
	if p, ok := c.placeOf(v); ok {
		w.pos = uint64(p)
	}
	return &w
}

// placeOf returns the position of the message by which v takes its
// place in the transcript: a boundary violation's unit's first message,
// else its first message, else its unit's first. Under the read lock.
func (c *Context) placeOf(v *Violation) (int32, bool) {
	at := MessageID("")
	switch {
	case v.Gate == GateBoundary && len(v.Units) > 0:
		at = MessageID(v.Units[0])
	case len(v.Messages) > 0:
		at = v.Messages[0]
	case len(v.Units) > 0:
		at = MessageID(v.Units[0])
	}
	return c.find(at)
}

// eachRefused calls f, for the units walks in order, with each unit's
// refusal that holds: its violations, or, for the units of a sweep's run
// next to each other that still hold, one violation naming them all (run
// true, u its first unit). Under the read lock.
func (m *refusalMemory) eachRefused(c *Context, units iter.Seq[int32], f func(u int32, vs []*Violation, run bool)) {
	var g runGroup
	first := none // g's first unit
	flush := func() {
		if vs := g.flush(c, nil); len(vs) > 0 {
			f(first, vs, true)
		}
	}
	for u := range units {
		r := m.refused(c, u)
		switch {
		case r == nil:
		case r.run == nil:
			flush()
			f(u, r.vs, false)
		case !g.extend(r):
			flush()
			g, first = runGroup{run: r.run, at: [2]int32{r.at, r.at + 1}, msgs: r.msgs}, u
		}
	}
	flush()
}

// unitsInOrder walks the units oldest first. Under the read lock.
func (c *Context) unitsInOrder(yield func(int32) bool) {
	for u := c.firstUnit(); u != none; u = c.unit(u).next {
		if !yield(u) {
			return
		}
	}
}

// runGroup gathers the units of a sweep's run that still hold, next to
// each other.
type runGroup struct {
	run  *Violation
	at   [2]int32 // from and to, in run.Units
	msgs [2]int32 // from and to, in run.Messages
}

// extend adds refusal r to the group if it names the unit after the
// group's last in the same run, and reports whether it did.
func (g *runGroup) extend(r *unitRefusal) bool {
	if g.run == nil || r.run != g.run || r.at != g.at[1] {
		return false
	}
	g.at[1]++
	g.msgs[1] = r.msgs[1]
	return true
}

// flush appends the group's violation to out, and empties the group: the
// run's own violation when the group is the whole run and no compaction
// moved the messages since, else one naming the group's units.
func (g *runGroup) flush(c *Context, out []*Violation) []*Violation {
	run, at, msgs := g.run, g.at, g.msgs
	*g = runGroup{}
	if run == nil {
		return out
	}
	if at[0] == 0 && int(at[1]) == len(run.Units) && run.seen.comp == c.compactions {
		return append(out, run) // else its place is from before a compaction
	}
	v, _ := run.part(c, at, msgs)
	return append(out, v)
}

// ForgetRefusals drops every refusal the guards remembered, so that the
// next check tries everything again. Call it when an [Oracle] or
// [Resolver] changes its answers without an event on the Context (a
// store that comes back, an oracle retrained).
func (c *Context) ForgetRefusals() {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &c.mem
	m.unstubAll(c)
	m.units = nil
	m.swept = sweepMark{}
	m.gen++
}

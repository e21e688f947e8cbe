package pruneguard

import (
	"slices"
	"strings"
)

// The sweep: a guard that can lift no refusal of the regenerability gate
// (it has no store to spill to and no summarizer) judges, before it asks
// its policy, the units that closed since its last sweep, oldest first,
// each as the gates judge the eviction of the whole unit, until those it
// may take hold what the check must free. It remembers those refused, so
// that the policy walks past them as it walks past any refusal
// remembered, and a check that finds nothing it may take costs a
// judgement per unit, not a plan, a prune and a violation's way through
// the guard for each.
//
// Units next to each other held for one reason alone make one violation,
// naming them all and their messages held; a unit held for more than one
// reason, or named by a planned step, has the violations Prune makes.
//
// The sweep goes on from where the last one stopped (the end, or the unit
// where it had found enough), and takes up again the units it passed
// because they were in flight or unread, so that across checks each unit
// is swept once, once closed and read, while it and the judgement epoch
// stand. A unit that changes later is left to the policy and the gates.

// sweepMark is where a sweep stopped, as the Context stood.
type sweepMark struct {
	pos    int32   // the first message of the unit to sweep next, or the end
	passed []int32 // the first messages of the units passed in flight or unread, in order
	comp   int     // the Context's compactions
	judge  uint64  // the judgement epoch
}

// sweep judges the units that closed since the last sweep, oldest first,
// until those that may go hold need tokens, and remembers the refusals of
// the others, which it reports as met by this check.
func (r *guardRun) sweep(need int) {
	c := r.c
	if r.g.Spill != nil || r.g.Summarizer != nil || c.pipeline != nil || need <= 0 {
		return // a spill or a summary may lift what the gates refuse
	}
	s := c.sweepUnits(need)
	added, kept := c.rememberSwept(s)
	r.keepOut(s.vs, added, kept)
	if len(s.vs) > 0 {
		r.report(s.vs)
		r.res.Reason = &PruneError{Violations: s.vs}
	}
}

// sweepResult is what a sweep found: every refusal, in order; of those,
// the violations of units held for more than one reason, or for a planned
// step (own); the records of the units held for one reason, each with its
// unit in last; and where it stopped.
type sweepResult struct {
	vs, own []*Violation
	recs    []unitRefusal
	mark    sweepMark
}

// sweepUnits judges the units the last sweep passed, then those from
// where it stopped. Under neither lock.
func (c *Context) sweepUnits(need int) (s sweepResult) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.pruneMu.Lock()
	defer c.pruneMu.Unlock()
	from, passed := c.mem.sweepFrom(c)
	w := sweeper{c: c, r: c.newRun(Plan{}, nil), need: need, s: &s}
	s.mark = sweepMark{pos: c.msgs.Len(), comp: c.compactions, judge: c.judge()}
	for i, p := range passed {
		if w.need <= 0 {
			s.mark.passed = append(s.mark.passed, passed[i:]...)
			break
		}
		w.b.starts = true // not next to the unit judged before it
		if c.heads(p) && !w.judge(c.msg(p).unit) {
			s.mark.passed = append(s.mark.passed, p)
		}
	}
	w.b.starts = true
	for p := from; p < c.msgs.Len(); p++ {
		switch {
		case !c.heads(p):
		case w.need <= 0:
			s.mark.pos = p
			w.b.name(c, &s)
			return s
		case !w.judge(c.msg(p).unit):
			s.mark.passed = append(s.mark.passed, p)
			w.b.starts = true
		}
	}
	w.b.name(c, &s)
	return s
}

// sweeper is a sweep in progress: what may go is counted off need.
type sweeper struct {
	c    *Context
	r    *pruneRun
	s    *sweepResult
	b    sweepBuf
	at   []codeAt // a unit's, reused
	need int
}

// judge judges the eviction of unit u, whole, and reports whether it
// could: false for a unit in flight or unread, which the sweep passes.
func (w *sweeper) judge(u int32) bool {
	c, un := w.c, w.c.unit(u)
	switch {
	case un.open > 0 || un.pending > 0 || c.unread(u):
		return false
	case un.pinned > 0 || c.mem.refused(c, u) != nil:
		w.b.starts = true
		return true
	}
	w.at = w.at[:0]
	for q := range c.members(u) {
		w.at = w.r.unsafeCodes(w.at, q)
	}
	switch {
	case len(w.at) == 0:
		w.need -= c.unitTokens(u)
		w.b.starts = true
	case oneReason(w.at):
		w.b.room(len(w.at))
		w.b.add(u, w.at)
	default:
		w.s.own = w.r.vs.unit(w.r, w.s.own, w.at)
		w.b.starts = true
	}
	return true
}

// sweepBuf is what a sweep found refused for one reason alone, before
// it names it: each unit, with its messages held and why, in buffers
// without pointers.
type sweepBuf struct {
	held   []int32 // the messages held
	codes  []Code  // the reasons met, each once
	units  []sweptAt
	starts bool // the next unit added starts a run
}

// sweptAt is a unit refused for one reason alone, codes[code] of its
// sweepBuf: held[from:to] are its messages held. starts says the unit
// before it in the sweep was not refused so.
type sweptAt struct {
	u, from, to int32
	code        uint8
	starts      bool
}

// room makes room for a unit of n messages held, doubling b's buffers
// where append would grow a large one by a quarter at a time.
func (b *sweepBuf) room(n int) {
	if cap(b.held)-len(b.held) < n {
		b.held = append(make([]int32, 0, 2*cap(b.held)+n+64), b.held...)
	}
	if len(b.units) == cap(b.units) {
		b.units = append(make([]sweptAt, 0, 2*cap(b.units)+64), b.units...)
	}
}

// add records unit u, held for one reason as at says.
func (b *sweepBuf) add(u int32, at []codeAt) {
	k := slices.Index(b.codes, at[0].code)
	if k < 0 {
		k = len(b.codes)
		b.codes = append(b.codes, at[0].code)
	}
	w := sweptAt{u: u, from: int32(len(b.held)), code: uint8(k), starts: b.starts}
	b.starts = false
	for _, a := range at {
		b.held = append(b.held, a.p)
	}
	w.to = int32(len(b.held))
	b.units = append(b.units, w)
}

// name makes the violations of the runs of units in b, each the units
// next to each other held for one reason, with their ids, units, messages
// and records in one allocation each, and sets s.vs to every refusal, in
// order. Under the read lock.
func (b *sweepBuf) name(c *Context, s *sweepResult) {
	n := len(b.units)
	if n == 0 {
		s.vs = s.own
		return
	}
	size := 0
	for _, w := range b.units {
		size += int(c.msg(c.unit(w.u).head).idLen)
	}
	for _, p := range b.held {
		size += int(c.msg(p).idLen)
	}
	var text strings.Builder
	text.Grow(size)
	cut := func(id []byte) string {
		from := text.Len()
		text.Write(id)
		return text.String()[from:]
	}
	units := make([]UnitID, n)
	us := make([]int32, n)
	msgs := make([]MessageID, len(b.held))
	for i, p := range b.held {
		msgs[i] = MessageID(cut(c.msgID(p)))
	}
	s.recs = make([]unitRefusal, n)
	var run *Violation
	var u0 int // where run's units start
	for i, w := range b.units {
		if run == nil || w.starts || run.Code != b.codes[w.code] {
			run = &Violation{Gate: GateRegen, Code: b.codes[w.code], pos: uint64(b.held[w.from]),
				seen: seenAt{comp: c.compactions, judge: c.judge()}}
			u0 = i
			s.vs = append(s.vs, run)
		}
		units[i], us[i] = UnitID(cut(c.msgID(c.unit(w.u).head))), w.u
		m0 := b.units[u0].from
		run.Units, run.us, run.Messages = units[u0:i+1:i+1], us[u0:i+1:i+1], msgs[m0:w.to:w.to]
		r := &s.recs[i]
		r.ver, r.regen, r.run, r.at = c.unit(w.u).version, true, run, int32(i-u0)
		r.msgs, r.last = [2]int32{w.from - m0, w.to - m0}, w.u
	}
	if len(s.own) > 0 {
		s.vs = append(s.vs, s.own...)
		sortViolations(s.vs)
	}
}

// oneReason reports whether at holds one reason alone, which is not a
// planned step's (whose violation names its steps).
func oneReason(at []codeAt) bool {
	for _, a := range at {
		if a.code != at[0].code || a.code == CodeReferenced {
			return false
		}
	}
	return true
}

// sweepFrom returns where the next sweep starts, and the units the last
// one passed: where the last one stopped, or the start when the messages
// moved since (a compaction) or the judgement epoch moved on. Under the
// read lock.
func (m *refusalMemory) sweepFrom(c *Context) (int32, []int32) {
	if s := m.swept; s.comp == c.compactions && s.judge == c.judge() {
		return s.pos, s.passed
	}
	return 0, nil
}

// rememberSwept remembers the refusals a sweep met, and where it
// stopped, unless the messages moved or the judgement epoch moved on
// since. It returns how many units it added, and which of s.vs it holds:
// a run is held when none of its units changed since the sweep.
func (c *Context) rememberSwept(s sweepResult) (added int, kept []bool) {
	own, ownKept := c.remember(s.own, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &c.mem
	m.sync(c)
	var lost map[*Violation]bool
	if s.mark.comp == c.compactions && s.mark.judge == c.judge() {
		m.swept = s.mark
		added, lost = m.keepSwept(c, s.recs)
	} else {
		lost = map[*Violation]bool{}
		for i := range s.recs {
			lost[s.recs[i].run] = true
		}
	}
	var ownHeld map[*Violation]bool // the sort may have moved them: found by identity
	if len(s.own) > 0 {
		ownHeld = make(map[*Violation]bool, len(s.own))
		for i, v := range s.own {
			ownHeld[v] = ownKept[i]
		}
	}
	kept = make([]bool, len(s.vs))
	for i, v := range s.vs {
		if held, ok := ownHeld[v]; ok {
			kept[i] = held
		} else {
			kept[i] = !lost[v]
		}
	}
	return own + added, kept
}

// keepSwept adds the records of units refused a sweep made, but for units
// that changed since, whose runs it returns in lost, and returns how many
// it added. A stretch of records next to each other gets the hint of a
// run on its first. Under the write lock.
func (m *refusalMemory) keepSwept(c *Context, recs []unitRefusal) (added int, lost map[*Violation]bool) {
	if len(recs) > 0 && m.units == nil {
		m.units = make(map[int32]*unitRefusal, len(recs))
	}
	var first *unitRefusal // the first record of the stretch the last one joined
	for i := range recs {
		r := &recs[i]
		u := r.last
		if un := c.unit(u); un.head == none || un.version != r.ver {
			if lost == nil {
				lost = map[*Violation]bool{}
			}
			lost[r.run], first = true, nil
			continue
		}
		if m.units[u] == nil {
			added++
		}
		m.units[u] = r
		if first == nil || r.run != first.run || c.unit(u).prev != recs[i-1].last {
			first = r
		}
		first.last, first.gen = u, m.gen
	}
	return added, lost
}

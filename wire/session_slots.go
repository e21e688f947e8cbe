package wire

import (
	"encoding/json"
	"sort"

	"github.com/pruneguard/pruneguard"
)

// A session's history as written, kept message by message so that a
// request costs in proportion to what it adds and prunes, not to the
// length of the history: its token count is a running sum, and a
// decision is screened by the rule screen a guarded body uses, over the
// messages it edits and those around them.
//
// Each written message is a slot. A message fed as provider JSON writes
// one; a message fed as events writes its pieces (a Chat result answering
// several calls writes a tool message for each, a Responses message with
// calls an item for each); in the turn dialects, consecutive pieces of
// one role written from events are merged into one turn, as the body is
// written, and share a slot. Slots are made for the messages fed, in
// order, when a request comes, up to the first message still streaming.
// A history the slots cannot follow (a message written as turns of two
// roles in a turn dialect, a merged turn cut by a decision) is screened
// and counted from the body written whole instead, as it is while a
// message streams.

// slots is a session's history as written.
type slots struct {
	f     []facts // each slot as written before any edit
	tok   []int32 // each slot's tokens as now written
	synth []bool  // the slot was written from events
	role  []string
	// first and last are the positions of the messages writing the slot:
	// more than one only for a merged turn.
	first, last []int32
	seq         *seqState
	rules       *ruleScreen
	stubs       map[int32]*stubbed // each slot with its results stubbed, made once

	sums    []int32 // the slots of summaries, for summaryJoinTokens
	upto    int     // the messages fed that have their slots
	barrier int32   // merging is allowed into slots from this one on
	tokens  int     // the tokens of the kept slots, as written
	// irregular is set when the history cannot be followed slot by slot;
	// broken when a decision cut a merged turn: the slots are made again.
	irregular, broken bool
	// groups is the screen's scratch list of candidates, by unit.
	groups []*candidate
}

// newSlots returns the slots of an empty history.
func (s *Session) newSlots() *slots {
	sl := &slots{seq: newSeqState(0), stubs: map[int32]*stubbed{}}
	sl.rules = &ruleScreen{b: s.topBody(), seq: sl.seq, relative: true,
		at:      func(i int32) *facts { return &sl.f[i] },
		stubbed: func(i int32) (*facts, bool) { return s.slotStubbed(i) },
	}
	sl.rules.glob.lastUser, sl.rules.glob.barrier = -1, -1
	sl.rules.indexKeys()
	return sl
}

// slotUp makes the slots of the messages fed since the last time, up to
// the first one still streaming, and reports whether every message has
// its slots and the slots follow the history.
func (s *Session) slotUp() bool {
	if s.sl.broken {
		s.sl = s.newSlots()
	}
	sl := s.sl
	for sl.upto < len(s.entries) && !sl.irregular {
		e := s.entries[sl.upto]
		if _, open := s.streams[e.id]; open {
			break
		}
		s.slotEntry(e)
		sl.upto++
	}
	return sl.upto == len(s.entries) && !sl.irregular
}

// nonSystem returns the pieces that go into the history.
func nonSystem(ps []rpiece) []rpiece {
	out := ps[:0:0]
	for _, p := range ps {
		if !p.system {
			out = append(out, p)
		}
	}
	return out
}

// slotEntry makes the slots of message e.
func (s *Session) slotEntry(e *sentry) {
	sl := s.sl
	all := s.piecesOf(e, true)
	ps := nonSystem(all)
	if len(ps) < len(all) {
		sl.barrier = int32(len(sl.f)) // a system piece sits between
	}
	e.lo = int32(len(sl.f))
	if e.gone {
		e.hi = e.lo
		return
	}
	if s.p.turns && len(ps) > 1 {
		sl.irregular = true
		return
	}
	for k, p := range ps {
		if k == 0 && s.p.turns && p.synth {
			if l := sl.seq.tail; l >= sl.barrier && l >= 0 && sl.synth[l] && sl.role[l] == p.role {
				// The turn before is written from events too: the piece
				// joins it.
				e.lo = l
				sl.last[l] = int32(e.pos)
				s.reslot(l)
				continue
			}
		}
		f := e.f // a message given as provider JSON is written as it was read
		if e.ev != nil {
			var err error
			if f, err = parseMessage(s.cfg.Dialect, p.json(s.p)); err != nil {
				sl.irregular = true
				return
			}
		}
		i := sl.seq.grow()
		sl.f = append(sl.f, f)
		sl.tok = append(sl.tok, int32(min(countFacts(s.count, &f), 1<<31-1)))
		sl.synth = append(sl.synth, p.synth)
		sl.role = append(sl.role, p.role)
		sl.first = append(sl.first, int32(e.pos))
		sl.last = append(sl.last, int32(e.pos))
		sl.rules.added(i)
		sl.tokens += int(sl.tok[i])
		if e.summary {
			sl.sums = append(sl.sums, i)
		}
		if e.stubbed {
			sl.seq.stubbed[i] = true
			s.retally(i)
		}
	}
	e.hi = int32(len(sl.f))
}

// reslot reads merged slot l again, as written, after a message joined
// it, and updates the counts and indexes it is part of.
func (s *Session) reslot(l int32) {
	sl := s.sl
	p, ok := s.slotPiece(l, false)
	if !ok {
		sl.irregular = true
		return
	}
	f, err := parseMessage(s.cfg.Dialect, p.json(s.p))
	if err != nil {
		sl.irregular = true
		return
	}
	rs := sl.rules
	old := &sl.f[l]
	rs.glob.add(old, -1)
	rs.glob.add(&f, 1)
	rs.gmask[l] = globalsMask(&f)
	if len(f.refs) > 0 && len(old.refs) == 0 {
		rs.refs = append(rs.refs, l)
	}
	sl.f[l] = f
	delete(sl.stubs, l)
	switch {
	case s.p.realUser(&f) && l > rs.glob.lastUser:
		rs.glob.lastUser = l
	case rs.glob.lastUser == l && !s.p.realUser(&f):
		j := sl.seq.prev[l]
		for j >= 0 && !s.p.realUser(&sl.f[j]) {
			j = sl.seq.prev[j]
		}
		rs.glob.lastUser = j
	}
	s.retally(l)
}

// owns reports whether message e writes slot i.
func (sl *slots) owns(e *sentry, i int32) bool {
	return sl.first[i] <= int32(e.pos) && int32(e.pos) <= sl.last[i]
}

// slotPiece writes slot i as it stands, or with the results of its
// messages stubbed.
func (s *Session) slotPiece(i int32, stub bool) (rpiece, bool) {
	sl := s.sl
	var ps []rpiece
	for k := sl.first[i]; k <= sl.last[i]; k++ {
		e := s.entries[k]
		if stub && !e.stubbed && carriesResults(e) {
			ps = append(ps, nonSystem(s.stubPieces(e, pruneguard.Pointer{}))...)
			continue
		}
		ps = append(ps, nonSystem(s.piecesOf(e, false))...)
	}
	ps = mergeSynthTurns(s.p, ps)
	k := int(i - s.entries[sl.first[i]].lo)
	if k < 0 || k >= len(ps) {
		return rpiece{}, false
	}
	return ps[k], true
}

// carriesResults reports whether message e carries tool results.
func carriesResults(e *sentry) bool {
	if e.ev != nil {
		return len(e.ev.Answers) > 0
	}
	return e.f.nresults > 0
}

// retally counts slot i again as it is now written.
func (s *Session) retally(i int32) {
	sl := s.sl
	p, ok := s.slotPiece(i, false)
	if !ok {
		return
	}
	n := int32(min(countJSON(s.count, p.json(s.p)), 1<<31-1))
	if !sl.seq.removed[i] {
		sl.tokens += int(n - sl.tok[i])
	}
	sl.tok[i] = n
}

// slotStubbed returns slot i with the results of its messages stubbed,
// for the screen.
func (s *Session) slotStubbed(i int32) (*facts, bool) {
	sl := s.sl
	if st, ok := sl.stubs[i]; ok {
		return &st.f, st.ok
	}
	st := &stubbed{f: sl.f[i]}
	if p, ok := s.slotPiece(i, true); ok {
		if f, err := parseMessage(s.cfg.Dialect, p.json(s.p)); err == nil {
			st.f, st.ok = f, true
		}
	}
	sl.stubs[i] = st
	return &st.f, st.ok
}

// piecesOf returns the pieces message e is written as now, or with
// nothing evicted or stubbed when fresh is set.
func (s *Session) piecesOf(e *sentry, fresh bool) []rpiece {
	switch {
	case e.gone && !fresh:
		return nil
	case e.stubbed && !fresh:
		return s.stubPieces(e, pruneguard.Pointer{})
	}
	if st, ok := s.streams[e.id]; ok {
		return synthMessage(s.p, st.message(), st.text.String(), s.callTool)
	}
	if e.ev != nil {
		return e.pieces
	}
	if e.summary {
		return []rpiece{{role: e.f.role, raw: e.raw, sum: &e.f}}
	}
	return []rpiece{{role: e.f.role, raw: e.raw}}
}

// slotsOf calls fn with each slot message e writes.
func (s *Session) slotsOf(e *sentry, fn func(i int32)) {
	sl := s.sl
	if e.pos >= sl.upto {
		return
	}
	for i := e.lo; i < e.hi; i++ {
		if sl.owns(e, i) {
			fn(i)
		}
	}
}

// recordSlots carries an applied decision out on the slots: a slot goes
// when every message writing it went, and is counted again when one of
// them was stubbed. A merged turn that loses some of its messages only
// breaks the slots, which are made again at the next request.
func (s *Session) recordSlots(d *pruneguard.Decision) {
	sl := s.sl
	if sl.broken {
		return
	}
	e := sl.seq.newEdits()
	var restub []int32
	for _, id := range d.Evict {
		m := s.byID[id]
		if m == nil {
			continue
		}
		s.slotsOf(m, func(i int32) {
			if sl.seq.removed[i] {
				return
			}
			for k := sl.first[i]; k <= sl.last[i]; k++ {
				if !s.entries[k].gone {
					sl.broken = true
					return
				}
			}
			e.remove(i)
		})
	}
	for _, id := range d.Stub {
		if m := s.byID[id]; m != nil {
			s.slotsOf(m, func(i int32) {
				if !sl.seq.removed[i] && !e.removes(i) {
					e.stub(i)
					restub = append(restub, i)
				}
			})
		}
	}
	if sl.broken || e.empty() {
		return
	}
	for _, i := range e.rm {
		sl.tokens -= int(sl.tok[i])
	}
	sl.rules.applyEdits(e, false)
	for _, i := range restub {
		s.retally(i)
	}
}

// slotHistory writes the messages of the history from the kept slots,
// in order, with the Chat prompt lines: it costs in proportion to the
// messages held, not to those ever fed.
func (s *Session) slotHistory() ([]json.RawMessage, bool) {
	sl := s.sl
	ps := make([]rpiece, 0, sl.seq.kept)
	for i := sl.seq.head; i >= 0; i = sl.seq.next[i] {
		p, ok := s.slotPiece(i, false)
		if !ok {
			return nil, false
		}
		ps = append(ps, p)
	}
	ps = joinSummaries(s.p, ps)
	if s.p.promptInHistory {
		ps = placeLines(s.p, nil, ps, s.lines(nil))
	}
	raws := make([]json.RawMessage, len(ps))
	for i := range ps {
		raws[i] = ps[i].json(s.p)
	}
	return raws, true
}

// bodyTokens counts the tokens of the request as it would now be written:
// the history, message by message, and the rest of the body. With every
// message in its slots it takes constant time once the rest is counted;
// otherwise the history is written and counted whole.
func (s *Session) bodyTokens() int {
	if !s.slotUp() {
		n := 0
		for _, raw := range s.historyPieces(nil) {
			n += countJSON(s.count, raw)
		}
		return n + s.restTokens()
	}
	return s.sl.tokens + s.summaryJoinTokens() + s.historyLineTokens() + s.restTokens()
}

// restTokens counts the body outside its history, once for each change
// of the request's fields, schemas, system messages and prompt lines.
func (s *Session) restTokens() int {
	if s.rest < 0 {
		s.rest = countJSON(s.count, s.topFor(nil).withHistory(s.key, json.RawMessage(`[]`)))
	}
	return s.rest
}

// historyLineTokens counts what the tombstone and pointer lines add to
// the history of a provider that keeps its prompt there: they go into
// its first system or developer message, or into one put first.
func (s *Session) historyLineTokens() int {
	if !s.p.promptInHistory {
		return 0
	}
	lines := s.lines(nil)
	if len(lines) == 0 {
		return 0
	}
	ps := []rpiece{}
	sl := s.sl
	sys := int32(-1)
	for i := sl.seq.head; i >= 0; i = sl.seq.next[i] {
		if r := sl.role[i]; r == "system" || r == "developer" {
			sys = i
			break
		}
		if !isSystem(&sl.f[i]) {
			// System messages are pinned and come first in practice; a
			// later one is found by writing the history.
			break
		}
	}
	if sys >= 0 {
		if p, ok := s.slotPiece(sys, false); ok {
			ps = append(ps, p)
		}
	}
	ps = placeLines(s.p, nil, ps, lines)
	n := 0
	for i := range ps {
		n += countJSON(s.count, ps[i].json(s.p))
	}
	if sys >= 0 {
		n -= int(sl.tok[sys])
	}
	return n
}

// screenSlots is the session's screen over its slots: stubs that cannot
// be made or would not shrink their message, schema edits that would
// leave no tool declared or break a rule, and units whose eviction or
// stubs would break a provider rule the body now keeps, taken unit by
// unit, in transcript order, when the decision as a whole would. ok is
// false when the decision cuts a merged turn: the caller screens it on
// the body written whole.
func (s *Session) screenSlots(d *pruneguard.Decision) (refs []Refusal, ok bool) {
	sl := s.sl
	refs = s.stubRefusals(d, func(e *sentry) int {
		written := 0
		s.slotsOf(e, func(i int32) { written += int(sl.tok[i]) })
		return written
	})
	if len(refs) > 0 {
		return refs, true
	}
	ts, base := s.toolState(nil), map[string]int{}
	if refs := s.screenSlotSchemas(d, &ts, base); len(refs) > 0 {
		return refs, true
	}
	whole := sl.seq.newEdits()
	groups, cut := s.slotCandidates(d, whole)
	if cut {
		return nil, false
	}
	if whole.empty() {
		return nil, true
	}
	delta, after := sl.rules.delta(view{s: sl.seq}, whole, ts)
	if len(sl.rules.fresh(base, delta, after)) == 0 {
		return nil, true
	}
	_, refused := sl.rules.greedy(inOrder(groups), ts, base)
	return refused, true
}

// screenSlotSchemas screens the schema edits of d: it refuses those that
// leave no tool declared or break a rule, and otherwise sets *ts to the
// tools state they leave and adds to base how they change the violation
// counts.
func (s *Session) screenSlotSchemas(d *pruneguard.Decision, ts **toolState, base map[string]int) []Refusal {
	if len(d.DropSchemas) == 0 && len(d.Compress) == 0 {
		return nil
	}
	now, then := s.topFor(nil), s.topFor(d)
	if declaredCount(s.p, &then) == 0 && declaredCount(s.p, &now) > 0 {
		return schemaRefusal(d, CodeEmptyTools, "")
	}
	sl := s.sl
	next := s.toolState(d)
	delta, after := sl.rules.toolDelta(view{s: sl.seq}, *ts, next)
	if nv := sl.rules.fresh(nil, delta, after); len(nv) > 0 {
		return schemaRefusal(d, nv[0].Rule, nv[0].Message)
	}
	for k, n := range delta {
		base[k] += n
	}
	*ts = next
	return nil
}

// slotCandidates groups the slots d evicts or stubs by unit, as the
// decision's records say, and adds the edits of the whole decision to
// whole. cut is set when d evicts part of a merged turn.
func (s *Session) slotCandidates(d *pruneguard.Decision, whole *edits) (groups []*candidate, cut bool) {
	sl := s.sl
	groups = sl.groups[:0] // reused: the groups live until the screen returns
	at := map[pruneguard.UnitID]*candidate{}
	var evicted map[pruneguard.MessageID]bool
	for _, r := range d.Records() {
		e := s.byID[r.Message]
		if e == nil || e.gone {
			continue
		}
		c := at[r.Unit]
		if c == nil {
			c = &candidate{unit: r.Unit, first: -1}
			at[r.Unit] = c
			groups = append(groups, c)
		}
		c.ids = append(c.ids, r.Message)
		c.idx = append(c.idx, e.pos)
		s.slotsOf(e, func(i int32) {
			if sl.seq.removed[i] {
				return
			}
			if c.first < 0 || i < c.first {
				c.first = i
			}
			if r.Stubbed {
				c.st = append(c.st, i)
				whole.stub(i)
				return
			}
			if sl.first[i] != sl.last[i] {
				if evicted == nil {
					evicted = idSet(d.Evict)
				}
				for k := sl.first[i]; k <= sl.last[i]; k++ {
					if m := s.entries[k]; !m.gone && !evicted[m.id] {
						cut = true
					}
				}
			}
			c.rm = append(c.rm, i)
			whole.remove(i)
		})
	}
	sl.groups = groups
	return groups, cut
}

// inOrder returns the groups that edit a slot, in transcript order.
func inOrder(groups []*candidate) []candidate {
	cands := make([]candidate, 0, len(groups))
	for _, c := range groups {
		if len(c.rm) > 0 || len(c.st) > 0 {
			cands = append(cands, *c)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].first < cands[b].first })
	return cands
}

// topBody returns the request's fields, as the last decisions left them,
// read as a body without history: the dialect and settings the rules
// read, and its tools state. It is read again only when they change.
func (s *Session) topBody() *Body {
	if s.topB == nil {
		b, err := readBody(s.topFor(nil).withHistory(s.key, json.RawMessage(`[]`)), s.cfg.Dialect)
		if err != nil {
			b = &Body{Dialect: s.cfg.Dialect}
		}
		s.topB = b
		s.topTS = nil
	}
	return s.topB
}

// toolState returns the tools state of the request's fields as they
// stand, or once d is applied too.
func (s *Session) toolState(d *pruneguard.Decision) *toolState {
	if d == nil || (len(d.DropSchemas) == 0 && len(d.Compress) == 0) {
		b := s.topBody()
		if s.topTS == nil {
			if b.top == nil {
				s.topTS = &toolState{declared: map[string]bool{}}
			} else {
				s.topTS = b.toolState()
			}
		}
		return s.topTS
	}
	b, err := readBody(s.topFor(d).withHistory(s.key, json.RawMessage(`[]`)), s.cfg.Dialect)
	if err != nil {
		return s.toolState(nil)
	}
	return b.toolState()
}

// topChanged forgets what was read and counted of the request's fields.
func (s *Session) topChanged() {
	s.rest = -1
	s.topB, s.topTS = nil, nil
	if s.sl != nil {
		s.sl.rules.b = s.topBody()
	}
}

package wire

import (
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// The rule screen judges edits of a guarded body by the provider rules
// they can affect, without writing or validating the whole body again:
//
//   - a rule about one message, or about a message and its neighbours
//     (roles alternating, the first message, a call and the results right
//     after it, a block of tool messages, a turn and the turns around
//     it), is checked again over a window around each edited run of
//     messages, the same window before and after the edit: what lies
//     outside it cannot change, and what the window cannot see of the
//     world outside is the same on both sides and cancels out;
//   - a Responses call and its output, matched by kind and id anywhere in
//     the input, and item ids, which must be unique, are checked again
//     for the kinds and ids the edit touches;
//   - the rules of the tools arrays and tool choices are checked again
//     from the top-level fields when a decision edits schemas;
//   - a fact of the whole body that an edit changes (the last real user
//     message of a Gemini body, the last output of a Responses input, the
//     only thinking block or tool block left) has the whole body checked
//     again, as [Validate] does; a prune rarely touches those, since the
//     guard pins or protects them.
//
// Violations are counted by key, as [NewViolations] compares them, for
// the input and for the body as the applied decisions left it: an edit
// passes when no key ends up counting more than the input's.

// ruleScreen holds the counts and indexes of the screen of one body: a
// guarded body, or a session's history as written.
type ruleScreen struct {
	// b gives the dialect and the top-level settings the rules read
	// (thinking, toolConfig, store, a continued conversation).
	b *Body
	// at returns message i as written before any edit; stubbed returns it
	// with its results stubbed, or false when they cannot be.
	at      func(i int32) *facts
	stubbed func(i int32) (*facts, bool)
	seq     *seqState

	// relative is set when an edit is judged against the body as it
	// stands, not against an input: a session's history has no input to
	// keep to, so only what an edit adds counts.
	relative bool
	in       map[string]int // the input's violations, by key
	cur      map[string]int // the body's as the applied decisions left it

	// byKey and byID index, when the provider pairs calls and outputs by
	// kind and id (its table's pairKeys), the messages of each key and
	// the items of each id; refs are the messages with tool references.
	byKey map[[2]string][]int32
	byID  map[string][]int32
	refs  []int32

	glob globals // of the applied state
	// gmask holds what each message counts in the globals (globalsMask of
	// at(i)), so that summing a run of messages reads one byte of each.
	gmask []uint8

	buf []*facts // the messages of a window, reused

	// checkBefore has every window checked before an edit too, even where
	// cleanBefore says it can break no rule: the reference a test compares
	// the shortcut with.
	checkBefore bool
}

// globals are the facts of a whole body some rules depend on.
type globals struct {
	thinking   int   // messages with reasoning
	signed     int   // messages with a signed call
	toolBlocks int   // messages with calls or results
	itemRefs   int   // Responses item references
	lastUser   int32 // the last real user message, or -1
	barrier    int32 // Responses: the last output or user message, or -1
}

// newRuleScreen returns the screen of a guarded body: its input's
// violations counted, its messages indexed.
func newRuleScreen(g *Guarded) *ruleScreen {
	rs := &ruleScreen{b: g.src, seq: g.seq, in: map[string]int{}, cur: map[string]int{},
		at:      g.base,
		stubbed: func(i int32) (*facts, bool) { return g.stubFacts(int(i)) },
	}
	for _, v := range g.inputV {
		rs.in[violationKey(v)]++
		rs.cur[violationKey(v)]++
	}
	rs.glob.lastUser, rs.glob.barrier = -1, -1
	rs.indexKeys()
	for i := range g.src.facts {
		rs.added(int32(i))
	}
	return rs
}

// indexKeys sets up the indexes of the calls, outputs and items that pair
// by kind and id, for a provider whose table pairs them so.
func (rs *ruleScreen) indexKeys() {
	if rs.b.provider().pairKeys != nil {
		rs.byKey = map[[2]string][]int32{}
		rs.byID = map[string][]int32{}
	}
}

// added counts message i, the last of the body, in the globals and the
// indexes.
func (rs *ruleScreen) added(i int32) {
	f := rs.at(i)
	rs.gmask = append(rs.gmask, globalsMask(f))
	rs.glob.add(f, 1)
	if rs.b.provider().realUser(f) {
		rs.glob.lastUser = i
	}
	if f.nresults > 0 || isUserMessage(f) {
		rs.glob.barrier = i
	}
	if len(f.refs) > 0 {
		rs.refs = append(rs.refs, i)
	}
	if rs.byKey != nil {
		for _, k := range rs.b.provider().pairKeys(f) {
			rs.byKey[k] = append(rs.byKey[k], i)
		}
		if f.id != "" {
			rs.byID[f.id] = append(rs.byID[f.id], i)
		}
	}
}

// The facts of a message the globals count, as bits of a mask.
const (
	gThinking uint8 = 1 << iota
	gSigned
	gToolBlock
	gItemRef
)

// globalsMask returns what message f counts in the globals.
func globalsMask(f *facts) uint8 {
	var m uint8
	if f.reasoning {
		m |= gThinking
	}
	if f.signedCall() {
		m |= gSigned
	}
	if f.ncalls > 0 || f.nresults > 0 {
		m |= gToolBlock
	}
	if f.typ == "item_reference" {
		m |= gItemRef
	}
	return m
}

// add counts (or, with n = -1, uncounts) message f in the globals.
func (gl *globals) add(f *facts, n int) { gl.addMask(globalsMask(f), n) }

// addMask counts (or, with n = -1, uncounts) a message of mask m in the
// globals.
func (gl *globals) addMask(m uint8, n int) {
	if m == 0 {
		return
	}
	if m&gThinking != 0 {
		gl.thinking += n
	}
	if m&gSigned != 0 {
		gl.signed += n
	}
	if m&gToolBlock != 0 {
		gl.toolBlocks += n
	}
	if m&gItemRef != 0 {
		gl.itemRefs += n
	}
}

// factsIn returns message i as view v shows it.
func (rs *ruleScreen) factsIn(v view, i int32) *facts {
	if f := v.rewritten(i); f != nil {
		return f
	}
	if v.isStubbed(i) {
		if f, ok := rs.stubbed(i); ok {
			return f
		}
	}
	return rs.at(i)
}

// removedGlobals returns the counts of the globals that the messages
// edits e removes (and the applied edits keep) carry, summing only what
// was added to e since the last call.
func (rs *ruleScreen) removedGlobals(e *edits) globals {
	for ; e.glN < len(e.rm); e.glN++ {
		if i := e.rm[e.glN]; !e.marks.removed[i] {
			e.gl.addMask(rs.gmask[i], 1)
		}
	}
	if e.sub != nil && !e.sub.counted {
		// The message rewritten counts as what it is written as.
		e.gl.addMask(rs.gmask[e.sub.i], 1)
		e.gl.addMask(globalsMask(e.sub.f), -1)
		e.sub.counted = true
	}
	return e.gl
}

// globalsOf returns the globals of the body view v shows. It costs in
// proportion to v.b and to what v.a gained since it was last asked.
func (rs *ruleScreen) globalsOf(v view) globals {
	gl := rs.glob
	p := rs.b.provider()
	// The two sets of a view are disjoint: a message belongs to one set
	// at a time.
	if v.a != nil {
		r := rs.removedGlobals(v.a)
		gl.thinking -= r.thinking
		gl.signed -= r.signed
		gl.toolBlocks -= r.toolBlocks
		gl.itemRefs -= r.itemRefs
	}
	if v.b != nil {
		for _, i := range v.b.rm {
			if !v.s.removed[i] {
				gl.addMask(rs.gmask[i], -1)
			}
		}
		if v.b.sub != nil {
			gl.addMask(rs.gmask[v.b.sub.i], -1)
			gl.addMask(globalsMask(v.b.sub.f), 1)
		}
	}
	walk := func(j int32, ok func(f *facts) bool) int32 {
		for j >= 0 && (v.isRemoved(j) || !ok(rs.factsIn(v, j))) {
			j = v.s.prev[j]
			for j >= 0 && v.s.removed[j] {
				j = v.s.prev[j]
			}
		}
		return j
	}
	gl.lastUser = walk(gl.lastUser, func(f *facts) bool { return p.realUser(f) })
	if p.pairKeys != nil {
		gl.barrier = walk(gl.barrier, func(f *facts) bool { return f.nresults > 0 || isUserMessage(f) })
	}
	return gl
}

// whole reports whether an edit from view b to view a changes a fact of
// the whole body that some rule depends on, so that the whole body must
// be checked again.
func (rs *ruleScreen) whole(b, a view, gb, ga globals, ts *toolState) bool {
	if a.kept() == 0 || b.kept() == 0 {
		return true
	}
	if whole := rs.b.provider().screenWhole; whole != nil {
		return whole(rs.b, gb, ga, ts)
	}
	return false
}

// windowShape is how far around an edited run of messages a provider's
// history rules read: the message on each side, whole blocks of tool
// messages (Chat), or whole turns and one more each side (Anthropic).
type windowShape uint8

const (
	windowMessages windowShape = iota
	windowToolBlocks
	windowTurns
)

// widenToToolBlocks widens window w to whole blocks of tool messages (a
// block starts at the message before it). The window is open at its end,
// so that it never ends inside a block (see provider.cleanWindows).
func (rs *ruleScreen) widenToToolBlocks(a view, w window) window {
	for w.lo >= 0 && rs.factsIn(a, w.lo).role == "tool" {
		w.lo = a.prev(w.lo)
	}
	for w.hi >= 0 && rs.factsIn(a, w.hi).role == "tool" {
		w.hi = a.next(w.hi)
	}
	w.open = true
	return w
}

// widenToTurns widens window w to the turn of each end, and one more
// turn beyond it.
func (rs *ruleScreen) widenToTurns(a view, w window) window {
	if w.lo >= 0 {
		w.lo = rs.turnStart(a, w.lo)
		if p := a.prev(w.lo); p >= 0 {
			w.lo = rs.turnStart(a, p)
		}
	}
	if w.hi >= 0 {
		w.hi = rs.turnEnd(a, w.hi)
		if n := a.next(w.hi); n >= 0 {
			w.hi = rs.turnEnd(a, n)
		}
	}
	return w
}

// window is a stretch of kept messages, from lo to hi (body indexes; -1
// for the body's start or end). hi is excluded when open is set.
type window struct {
	lo, hi int32
	open   bool
}

// delta returns how the violation counts change, by key, when the edits
// e are made on top of view b with the tools state ts, and the
// violations the edited body has in the places it looks at, as
// [Validate] would word them.
func (rs *ruleScreen) delta(b view, e *edits, ts *toolState) (map[string]int, []RuleViolation) {
	a := view{s: b.s, a: b.a, b: e}
	if b.a == nil {
		a = view{s: b.s, a: e}
	}
	delta := map[string]int{}
	gb, ga := rs.globalsOf(b), rs.globalsOf(a)
	wins, whole := rs.windows(a, e)
	if whole || rs.whole(b, a, gb, ga, ts) {
		before := rs.all(b, ts)
		after := rs.all(a, ts)
		for _, v := range before {
			delta[violationKey(v)]--
		}
		for _, v := range after {
			delta[violationKey(v)]++
		}
		return delta, after
	}
	var after []RuleViolation
	before := !rs.cleanBefore(b)
	for _, w := range wins {
		if before {
			for _, v := range rs.check(b, w, gb, ts) {
				delta[violationKey(v)]--
			}
		}
		for _, v := range rs.check(a, w, ga, ts) {
			delta[violationKey(v)]++
			after = append(after, v)
		}
	}
	if rs.b.provider().pairKeys != nil {
		for _, v := range screenKeyedPairs(rs, b, e, gb) {
			delta[violationKey(v)]--
		}
		for _, v := range screenKeyedPairs(rs, a, e, ga) {
			delta[violationKey(v)]++
			after = append(after, v)
		}
	}
	return delta, after
}

// cleanBefore reports that no window of view b can break a rule: b is
// the applied state of a Chat body that breaks none. The violations a
// Chat window has are those of the whole body within it, since a window
// neither starts nor ends inside a block of tool messages (see windows)
// and validateChat reads nothing outside the messages it is given; the
// counts of the applied state are kept against an input (not for a
// session's history, judged relative to itself).
func (rs *ruleScreen) cleanBefore(b view) bool {
	return rs.b.provider().cleanWindows && !rs.relative && !rs.checkBefore && b.a == nil && b.b == nil && len(rs.cur) == 0
}

// all returns the violations of the whole body view v shows.
func (rs *ruleScreen) all(v view, ts *toolState) []RuleViolation {
	var ms []*facts
	for j := v.first(); j >= 0; j = v.next(j) {
		ms = append(ms, rs.factsIn(v, j))
	}
	return validateAll(rs.b, ms, ts)
}

// windows returns the windows around the runs of edited messages of e,
// in view a (the edited body), merged where they overlap. whole is set
// when a window spans the whole body.
func (rs *ruleScreen) windows(a view, e *edits) ([]window, bool) {
	// The edited messages in order: the removals the applied edits keep
	// are e.live, sorted already; removals of messages removed already
	// (which a window passes over anyway) and stubs need a copy.
	pos := e.live
	if len(e.st) > 0 || len(e.live) != len(e.rm) || e.sub != nil {
		pos = make([]int32, 0, len(e.rm)+len(e.st)+1)
		pos = append(pos, e.rm...)
		for _, i := range e.st {
			if !e.removes(i) {
				pos = append(pos, i)
			}
		}
		if e.sub != nil {
			pos = append(pos, e.sub.i)
		}
		slices.Sort(pos)
	}
	shape := rs.b.provider().window
	var out []window
	for k := 0; k < len(pos); {
		// A cluster: edited messages with nothing kept between them, walked
		// along the applied list once.
		x := a.prev(pos[k])
		y := a.walk(a.s.next[pos[k]], true)
		for y >= 0 && (e.stubs(y) || e.rewrites(y)) {
			y = a.next(y)
		}
		for k < len(pos) && (y < 0 || pos[k] < y) {
			k++
		}
		w := window{lo: x, hi: y}
		switch shape {
		case windowToolBlocks:
			w = rs.widenToToolBlocks(a, w)
		case windowTurns:
			w = rs.widenToTurns(a, w)
		}
		if n := len(out); n > 0 && overlaps(out[n-1], w) {
			out[n-1].hi = w.hi
			w = out[n-1]
		} else {
			out = append(out, w)
		}
		if (w.lo < 0 || a.prev(w.lo) < 0) && (w.hi < 0 || (!w.open && a.next(w.hi) < 0)) {
			return nil, true
		}
	}
	return out, false
}

// turnStart and turnEnd extend i to the first and last message of its
// turn, in view a.
func (rs *ruleScreen) turnStart(a view, i int32) int32 {
	if i < 0 {
		return i
	}
	r := rs.factsIn(a, i).role
	for p := a.prev(i); p >= 0 && rs.factsIn(a, p).role == r; p = a.prev(i) {
		i = p
	}
	return i
}

func (rs *ruleScreen) turnEnd(a view, i int32) int32 {
	if i < 0 {
		return i
	}
	r := rs.factsIn(a, i).role
	for n := a.next(i); n >= 0 && rs.factsIn(a, n).role == r; n = a.next(i) {
		i = n
	}
	return i
}

// overlaps reports whether window w starts before window p ends.
func overlaps(p, w window) bool {
	if p.hi < 0 || w.lo < 0 {
		return true
	}
	if p.open {
		return w.lo < p.hi
	}
	return w.lo <= p.hi
}

// check validates window w of the body view v shows.
func (rs *ruleScreen) check(v view, w window, gl globals, ts *toolState) []RuleViolation {
	start := w.lo
	if start < 0 {
		start = v.first()
	}
	ms := rs.buf[:0]
	defer func() { rs.buf = ms[:0] }()
	end := start
	for j := start; j >= 0; j = v.next(j) {
		if w.open && j == w.hi {
			break
		}
		ms = append(ms, rs.factsIn(v, j))
		end = j
		if !w.open && j == w.hi {
			break
		}
	}
	if len(ms) == 0 {
		return nil
	}
	sc := scope{
		off: v.rank(start), atStart: v.prev(start) < 0, atEnd: v.next(end) < 0,
		anyThinking: gl.thinking > 0, signedBody: gl.signed > 0, lastUser: -1, barrier: -1,
		continues: rs.b.continues || gl.itemRefs > 0, tools: ts,
	}
	if gl.lastUser >= 0 {
		sc.lastUser = v.rank(gl.lastUser)
	}
	var out violations
	out = validateMessages(rs.b, ms, sc, out)
	return out
}

// sortedKeys returns the keys of a set in order, so that the screen's
// findings do not depend on map order.
func sortedKeys[K interface{ ~string | ~[2]string }](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b K) int {
		return strings.Compare(keyString(a), keyString(b))
	})
	return out
}

func keyString[K interface{ ~string | ~[2]string }](k K) string {
	switch x := any(k).(type) {
	case string:
		return x
	case [2]string:
		return x[0] + "\x00" + x[1]
	}
	return ""
}

// fresh returns the keys that delta, on top of the counts base (the
// applied state's and what was taken since), would raise above the
// input's, and the first violation of each in after.
func (rs *ruleScreen) fresh(base map[string]int, delta map[string]int, after []RuleViolation) []RuleViolation {
	var out []RuleViolation
	over := map[string]int{}
	for k, n := range delta {
		if n <= 0 {
			continue
		}
		extra := base[k] + n
		if !rs.relative {
			extra += rs.cur[k] - rs.in[k]
		}
		if extra > 0 {
			over[k] = extra
		}
	}
	if len(over) == 0 {
		return nil
	}
	sortViolations(after)
	// The instances beyond the input's count are the last ones, as
	// NewViolations finds them.
	for i := len(after) - 1; i >= 0; i-- {
		k := violationKey(after[i])
		if over[k] > 0 {
			over[k]--
			out = append(out, after[i])
		}
	}
	slices.Reverse(out)
	sortViolations(out)
	return out
}

// greedy takes, in the order given (transcript order), each candidate
// that keeps the body no worse together with those already taken, on
// top of base (the counts the decision's schema edits change, by key),
// and refuses the others with gate "wire", the first rule each would
// break and the provider's wording. It costs in proportion to the
// candidates and the messages around them, not to the body: what is
// taken is kept in a set whose ranks and globals are found without
// walking it again.
func (rs *ruleScreen) greedy(cands []candidate, ts *toolState, base map[string]int) (kept []candidate, refused []Refusal) {
	taken := rs.seq.newEdits()
	e := rs.seq.newEdits() // each candidate's, in turn
	for k, c := range cands {
		if k > 0 {
			rs.seq.reuse(e)
		}
		for _, i := range c.rm {
			e.remove(i)
		}
		for _, i := range c.st {
			e.stub(i)
		}
		delta, after := rs.delta(view{s: rs.seq, a: taken}, e, ts)
		if nv := rs.fresh(base, delta, after); len(nv) > 0 {
			refused = append(refused, Refusal{Gate: "wire", Code: nv[0].Rule, Units: []pruneguard.UnitID{c.unit},
				Messages: c.ids, Indexes: c.idx, Detail: nv[0].Message})
			continue
		}
		for _, i := range c.rm {
			taken.remove(i)
		}
		for _, i := range c.st {
			taken.stub(i)
		}
		for k, n := range delta {
			base[k] += n
		}
		kept = append(kept, c)
	}
	return kept, refused
}

// ---- the tools arrays --------------------------------------------------------

// toolRules returns, in view v, the violations that depend on the tools
// state ts: those of the top-level fields, tool blocks without tools,
// and tool references to tools not declared.
func (rs *ruleScreen) toolRules(v view, ts *toolState) []RuleViolation {
	var out violations
	out = append(out, ts.top...)
	p := rs.b.provider()
	if ts.emptyTools && p.toolBlocks != nil {
		for j := v.first(); j >= 0; j = v.next(j) {
			if f := rs.factsIn(v, j); f.ncalls > 0 || f.nresults > 0 {
				out = p.toolBlocks(v.rank(j), out)
				break
			}
		}
	}
	if p.toolRefs != nil {
		for _, i := range rs.refs {
			if !v.isRemoved(i) {
				out = p.toolRefs(ts, v.rank(i), rs.factsIn(v, i).refs, out)
			}
		}
	}
	return out
}

// toolDelta returns how the counts change, by key, when the tools state
// goes from ts to next in view v, and the violations under next.
func (rs *ruleScreen) toolDelta(v view, ts, next *toolState) (map[string]int, []RuleViolation) {
	delta := map[string]int{}
	if v.kept() == 0 {
		return delta, nil // an empty body has its emptiness only
	}
	for _, x := range rs.toolRules(v, ts) {
		delta[violationKey(x)]--
	}
	after := rs.toolRules(v, next)
	for _, x := range after {
		delta[violationKey(x)]++
	}
	return delta, after
}

// commit adds a delta to the applied counts.
func (rs *ruleScreen) commit(delta map[string]int) {
	for k, n := range delta {
		if rs.cur[k] += n; rs.cur[k] == 0 {
			delete(rs.cur, k)
		}
	}
}

// applyEdits carries edits out on the applied state and, with undo set,
// returns the messages it removed, in order, and stubbed.
func (rs *ruleScreen) applyEdits(e *edits, undo bool) (removed, stubbed []int32) {
	s := rs.seq
	v := view{s: s, a: e}
	gl := rs.globalsOf(v)
	for _, i := range e.st {
		if !e.removes(i) && !s.stubbed[i] {
			s.stubbed[i] = true
			s.version++
			stubbed = append(stubbed, i)
		}
	}
	if undo {
		s.removeAll(e.rm, &removed)
	} else {
		s.removeAll(e.rm, nil)
	}
	rs.glob = gl
	return removed, stubbed
}

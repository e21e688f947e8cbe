package pruneguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The propHarness drives a Context with random events and plans drawn from a
// choiceSource (rapid, a seeded PRNG, or fuzz bytes), keeps a naive reference
// model of the transcript beside it, and checks after every step that the
// two agree and, after every applied prune, the invariants of the seeds.

// choiceSource draws the propHarness's choices.
type choiceSource interface {
	intn(n int) int // in [0, n)
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return s.r.IntN(n)
}

type rapidSource struct{ t *rapid.T }

func (s rapidSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return rapid.IntRange(0, n-1).Draw(s.t, "n")
}

// byteSource reads choices from fuzz bytes; once they run out every
// choice is 0.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	if s.i >= len(s.b) {
		s.i++
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	if n > 256 && s.i < len(s.b) {
		v = v<<8 | int(s.b[s.i])
		s.i++
	}
	return v % n
}

func (s *byteSource) done() bool { return s.i >= len(s.b) }

// The tools the model calls, and the schemas they may carry.
var (
	toolPool = []string{"read_file", "grep", "update_incident", "submit_payment", "fetch"}
	schemaV1 = `{"type":"object","description":"d","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2"],"description":"s"},"notify":{"type":"boolean"}},"required":["severity","notify"]}`
	schemaV2 = `{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`
	// Compressions: lossless of v1 (lossy against v2), lossless of v2
	// (lossless against v1 too), lossy against both, and invalid JSON.
	compressions = []string{
		`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2"]},"notify":{"type":"boolean"}},"required":["severity","notify"]}`,
		`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`,
		`{"type":"object"}`,
		`{"type":`,
	}
	registerSchemas = []string{"", schemaV1, schemaV2, schemaV1, `{"bad"`}
)

type smsg struct {
	m       Message // the reference copy: what the Context should hold
	open    bool
	present bool
	seq     int
	calls   []*scall
}

type scall struct {
	id     CallID
	tool   string
	caller *smsg
	result *smsg
	done   bool
	gone   bool
}

// opSet weighs the events of a run.
type opSet struct {
	weights [nOps]int
}

const (
	opText = iota
	opCalls
	opResult
	opOpenResult
	opWrite
	opClose
	opCouple
	opPin
	opMark
	opSpill
	opResolver
	opPlanStep
	opCompleteStep
	opSeal
	opRegister
	opRequest
	opPrune
	opInvalid
	nOps
)

var (
	defaultOps = opSet{[nOps]int{8, 8, 10, 3, 5, 4, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1, 10, 4}}
	invalidOps = opSet{[nOps]int{5, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 3, 20}}
	pruneOps   = opSet{[nOps]int{6, 8, 10, 2, 3, 3, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1, 20, 2}}
	eventOps   = opSet{[nOps]int{8, 8, 10, 3, 5, 4, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1, 0, 8}}
	// Events that may land between a Prune and its Apply. The resolver is
	// external to the Context and is left alone there.
	betweenOps = opSet{[nOps]int{3, 4, 4, 1, 2, 2, 2, 1, 1, 1, 0, 1, 1, 1, 2, 1, 0, 1}}
)

func (o opSet) pick(s choiceSource) int {
	total := 0
	for _, w := range o.weights {
		total += w
	}
	n := s.intn(total)
	for i, w := range o.weights {
		if n < w {
			return i
		}
		n -= w
	}
	return 0
}

type propHarness struct {
	c     *Context
	src   choiceSource
	ops   opSet
	gates gateMask
	// invariantsOnly: a gate is off; check only what checkPrune checks
	// after each Apply, since the reference model cannot follow a Context
	// that no longer keeps its guarantees.
	invariantsOnly bool

	msgs   []*smsg
	byID   map[MessageID]*smsg // present messages
	calls  map[CallID]*scall   // the latest call of each id
	known  map[string]bool     // tools registered or called
	live   map[Pointer]bool    // the resolver's answers
	steps  map[StepID][]MessageID
	parent map[MessageID]MessageID
	rec    *invRecord
	next   int
	log    []string

	prunes, applied, refused, deferred, stale int
}

func newPropHarness(src choiceSource, ops opSet, gates gateMask) *propHarness {
	h := &propHarness{
		src: src, ops: ops, gates: gates, invariantsOnly: gates != 0,
		byID: map[MessageID]*smsg{}, calls: map[CallID]*scall{}, known: map[string]bool{},
		live: map[Pointer]bool{}, steps: map[StepID][]MessageID{}, parent: map[MessageID]MessageID{},
	}
	cfg := Config{
		Boundary:     BoundaryMode(src.intn(2)),
		Regen:        RegenMode(src.intn(2)),
		NoTombstones: src.intn(4) == 0,
	}
	if src.intn(6) == 0 {
		cfg.TextClass = Irreducible
	}
	if src.intn(4) != 0 {
		cfg.Resolver = ResolverFunc(func(p Pointer) bool { return h.live[p] })
	}
	if src.intn(3) == 0 {
		cfg.StubTokens = 1 + src.intn(20)
	}
	if src.intn(4) == 0 {
		cfg.HoardTokens = 100
	}
	h.c = NewContext(cfg)
	h.c.disabled = gates
	h.rec = &invRecord{
		Cfg: cfg, Facts: map[MessageID]Facts{}, Class: map[MessageID]Class{}, Pointer: map[MessageID]Pointer{},
		Live: func(p Pointer) bool { return h.live[p] }, Refs: map[MessageID]int{}, Tools: map[string]Tool{},
		CallerOf: map[callKey]MessageID{}, ResultOf: map[callKey]MessageID{}, CallTool: map[callKey]string{},
		Unit: h.find,
	}
	h.logf("config %+v gates %b", cfg, gates)
	return h
}

func (h *propHarness) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

// fail wraps a finding with the event log that led to it.
func (h *propHarness) fail(err error) error {
	tail := h.log
	if len(tail) > 60 {
		tail = tail[len(tail)-60:]
	}
	return fmt.Errorf("%w\n--- events ---\n%s", err, strings.Join(tail, "\n"))
}

func modelErr(format string, args ...any) error {
	return &invariantError{Kind: kindModel, Msg: fmt.Sprintf(format, args...)}
}

func (h *propHarness) find(id MessageID) MessageID {
	p, ok := h.parent[id]
	if !ok || p == id {
		return id
	}
	r := h.find(p)
	h.parent[id] = r
	return r
}

func (h *propHarness) union(a, b MessageID) {
	ra, rb := h.find(a), h.find(b)
	if ra != rb {
		h.parent[rb] = ra
	}
}

// run performs n steps, or until the choiceSource runs out.
func (h *propHarness) run(n int) error {
	for i := 0; i < n; i++ {
		if bs, ok := h.src.(*byteSource); ok && bs.done() {
			return nil
		}
		if err := h.step(h.ops); err != nil {
			return h.fail(err)
		}
	}
	return nil
}

func (h *propHarness) step(ops opSet) error {
	switch ops.pick(h.src) {
	case opText:
		return h.add(h.textMessage(), false)
	case opCalls:
		return h.add(h.callMessage(), h.src.intn(8) == 0)
	case opResult:
		return h.result(false)
	case opOpenResult:
		return h.result(true)
	case opWrite:
		if x := h.pickOpen(); x != nil {
			return h.write(x.m.ID, []byte(fmt.Sprintf("w%d;", h.src.intn(100))), h.src.intn(50))
		}
	case opClose:
		if x := h.pickOpen(); x != nil {
			var calls []Call
			if h.src.intn(6) == 0 {
				calls = []Call{h.newCall()}
			}
			return h.close(x.m.ID, calls)
		}
	case opCouple:
		var ids []MessageID
		for range 2 + h.src.intn(2) {
			if x := h.pickPresent(); x != nil {
				ids = append(ids, x.m.ID)
			}
		}
		return h.couple(ids)
	case opPin:
		if x := h.pickPresent(); x != nil {
			return h.pin(x.m.ID)
		}
	case opMark:
		if x := h.pickPresent(); x != nil {
			return h.mark(x.m.ID, Facts(1<<h.src.intn(4)))
		}
	case opSpill:
		if x := h.pickPresent(); x != nil {
			p := h.pointer()
			if h.src.intn(6) == 0 {
				p = Pointer{}
			}
			return h.spill(x.m.ID, p)
		}
	case opResolver:
		p := h.pointer()
		h.live[p] = !h.live[p]
		h.logf("resolver %v -> %v", p, h.live[p])
	case opPlanStep:
		var ids []MessageID
		for range 1 + h.src.intn(2) {
			if x := h.pickPresent(); x != nil {
				ids = append(ids, x.m.ID)
			}
		}
		return h.planStep(StepID(fmt.Sprintf("s%d", h.src.intn(3))), ids)
	case opCompleteStep:
		return h.completeStep(StepID(fmt.Sprintf("s%d", h.src.intn(3))))
	case opSeal:
		return h.seal(h.src.intn(2) == 0)
	case opRegister:
		return h.register(h.randomTool())
	case opRequest:
		return h.request(toolPool[h.src.intn(len(toolPool))])
	case opPrune:
		return h.prune(h.randomPlan())
	case opInvalid:
		return h.invalid()
	}
	return nil
}

func (h *propHarness) newID() MessageID {
	h.next++
	return MessageID(fmt.Sprintf("m%d", h.next))
}

func (h *propHarness) pointer() Pointer {
	return Pointer{Store: "scratch", Key: fmt.Sprintf("p%d", h.src.intn(4))}
}

func (h *propHarness) present() []*smsg {
	var out []*smsg
	for _, x := range h.msgs {
		if x.present {
			out = append(out, x)
		}
	}
	return out
}

func (h *propHarness) pickPresent() *smsg {
	xs := h.present()
	if len(xs) == 0 {
		return nil
	}
	return xs[h.src.intn(len(xs))]
}

func (h *propHarness) pickOpen() *smsg {
	var xs []*smsg
	for _, x := range h.msgs {
		if x.present && x.open {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	return xs[h.src.intn(len(xs))]
}

var propRoles = []Role{RoleUser, RoleAssistant, RoleSystem, RoleReasoning}

func (h *propHarness) decorate(m *Message) {
	if h.src.intn(5) == 0 {
		m.Facts = Facts(1 << h.src.intn(4))
	}
	if h.src.intn(5) == 0 {
		m.Class = Class(1 + h.src.intn(3))
	}
	if h.src.intn(20) == 0 {
		m.Pinned = true
	}
	if h.src.intn(8) == 0 {
		m.Pointer = h.pointer()
	}
}

func (h *propHarness) textMessage() Message {
	id := h.newID()
	m := Message{ID: id, Role: propRoles[h.src.intn(len(propRoles))], Tokens: h.src.intn(200), Content: []byte("text " + string(id))}
	h.decorate(&m)
	return m
}

func (h *propHarness) newCall() Call {
	// Reuse the id of an answered call now and then: that is allowed.
	if h.src.intn(6) == 0 {
		var ids []CallID
		for id, k := range h.calls {
			if k.done && !k.gone {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		if len(ids) > 0 {
			id := ids[h.src.intn(len(ids))]
			return Call{ID: id, Tool: toolPool[h.src.intn(len(toolPool))], Args: json.RawMessage(`{"reused":true}`)}
		}
	}
	h.next++
	return Call{ID: CallID(fmt.Sprintf("k%d", h.next)), Tool: toolPool[h.src.intn(len(toolPool))], Args: json.RawMessage(`{"severity":"SEV-2","notify":true}`)}
}

func (h *propHarness) callMessage() Message {
	m := Message{ID: h.newID(), Role: RoleAssistant, Tokens: h.src.intn(100)}
	for range 1 + h.src.intn(4) {
		m.Calls = append(m.Calls, h.newCall())
	}
	h.decorate(&m)
	return m
}

// unanswered lists the calls that wait for a result, in call order.
func (h *propHarness) unanswered() []*scall {
	var out []*scall
	for _, x := range h.msgs {
		if !x.present {
			continue
		}
		for _, k := range x.calls {
			if !k.done && !k.gone && k.result == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

func (h *propHarness) result(open bool) error {
	ks := h.unanswered()
	if len(ks) == 0 {
		return h.add(h.textMessage(), open)
	}
	m := Message{ID: h.newID(), Role: RoleTool, Tokens: h.src.intn(400)}
	m.Content = []byte("result " + string(m.ID))
	k := ks[h.src.intn(len(ks))]
	m.Answers = []CallID{k.id}
	if h.src.intn(5) == 0 {
		if k2 := ks[h.src.intn(len(ks))]; k2 != k {
			m.Answers = append(m.Answers, k2.id)
		}
	}
	h.decorate(&m)
	return h.add(m, open)
}

// predictAdd says which input error Append or Open must return, or nil.
func (h *propHarness) predictAdd(m Message) error {
	if m.ID == "" {
		return ErrEmptyID
	}
	if _, dup := h.byID[m.ID]; dup {
		return ErrDuplicateMessage
	}
	if m.Tokens < 0 {
		return ErrNegativeTokens
	}
	seen := map[CallID]bool{}
	for _, k := range m.Calls {
		if k.ID == "" {
			return ErrEmptyID
		}
		if h.busy(k.ID) || seen[k.ID] {
			return ErrDuplicateCall
		}
		seen[k.ID] = true
	}
	ans := map[CallID]bool{}
	for _, id := range m.Answers {
		if ans[id] {
			return ErrDuplicateResult
		}
		ans[id] = true
		k := h.calls[id]
		if k != nil && !k.done && !k.gone {
			if k.result != nil {
				return ErrDuplicateResult
			}
			continue
		}
		switch {
		case seen[id]:
			return ErrUnknownCall
		case k == nil:
			return ErrUnknownCall
		case k.gone:
			return ErrPrunedCall
		default:
			return ErrDuplicateResult
		}
	}
	return nil
}

func (h *propHarness) busy(id CallID) bool {
	k := h.calls[id]
	return k != nil && !k.done && !k.gone
}

// event sends one event. want is the input error it must fail with, or
// nil; ok updates the reference model after a success.
func (h *propHarness) event(name string, want error, do func() error, ok func()) error {
	h.logf("%s (want %v)", name, want)
	before := capture(h.c)
	err := do()
	if want != nil {
		if err == nil {
			return modelErr("%s succeeded, want %v", name, want)
		}
		if !errors.Is(err, ErrInvalidInput) || !errors.Is(err, want) {
			return modelErr("%s: got %v, want %v matching ErrInvalidInput", name, err, want)
		}
		if d := diffState(before, capture(h.c)); d != nil {
			return modelErr("failed %s changed the context: %v", name, d)
		}
		return nil
	}
	if err != nil {
		return modelErr("%s: unexpected error %v", name, err)
	}
	ok()
	return h.consistent()
}

func (h *propHarness) add(m Message, open bool) error {
	op := "append"
	if open {
		op = "open"
	}
	name := fmt.Sprintf("%s %s role=%s tok=%d calls=%v answers=%v facts=%b class=%v pin=%v ptr=%v", op, m.ID, m.Role, m.Tokens, m.Calls, m.Answers, m.Facts, m.Class, m.Pinned, m.Pointer)
	return h.event(name, h.predictAdd(m), func() error {
		if open {
			return h.c.Open(m)
		}
		return h.c.Append(m)
	}, func() {
		x := &smsg{m: m, open: open, present: true, seq: len(h.msgs)}
		x.m.Content = slices.Clone(m.Content)
		x.m.Calls = slices.Clone(m.Calls)
		x.m.Answers = slices.Clone(m.Answers)
		h.msgs = append(h.msgs, x)
		h.byID[m.ID] = x
		for _, id := range m.Answers {
			k := h.calls[id]
			k.result = x
			k.done = !open
			h.union(k.caller.m.ID, m.ID)
			h.rec.CallerOf[callKey{m.ID, id}] = k.caller.m.ID
			h.rec.ResultOf[callKey{k.caller.m.ID, id}] = m.ID
		}
		for _, k := range m.Calls {
			h.addCall(x, k)
		}
		h.rec.Facts[m.ID] = m.Facts
		h.rec.Class[m.ID] = m.Class
		h.rec.Pointer[m.ID] = m.Pointer
	})
}

func (h *propHarness) addCall(x *smsg, k Call) {
	sc := &scall{id: k.ID, tool: k.Tool, caller: x}
	x.calls = append(x.calls, sc)
	h.calls[k.ID] = sc
	h.known[k.Tool] = true
	h.rec.CallTool[callKey{x.m.ID, k.ID}] = k.Tool
}

func (h *propHarness) write(id MessageID, chunk []byte, tokens int) error {
	var want error
	x := h.byID[id]
	switch {
	case x == nil:
		want = ErrUnknownMessage
	case !x.open:
		want = ErrClosedMessage
	case tokens < 0:
		want = ErrNegativeTokens
	}
	return h.event(fmt.Sprintf("write %s %q %d", id, chunk, tokens), want, func() error {
		return h.c.Write(id, chunk, tokens)
	}, func() {
		x.m.Content = append(x.m.Content, chunk...)
		x.m.Tokens += tokens
	})
}

func (h *propHarness) close(id MessageID, calls []Call) error {
	var want error
	x := h.byID[id]
	switch {
	case x == nil:
		want = ErrUnknownMessage
	case !x.open:
		want = ErrClosedMessage
	default:
		seen := map[CallID]bool{}
		for _, k := range calls {
			if k.ID == "" {
				want = ErrEmptyID
				break
			}
			if h.busy(k.ID) || seen[k.ID] || slices.ContainsFunc(x.m.Calls, func(c Call) bool { return c.ID == k.ID }) {
				want = ErrDuplicateCall
				break
			}
			seen[k.ID] = true
		}
	}
	return h.event(fmt.Sprintf("close %s %v", id, calls), want, func() error {
		return h.c.Close(id, calls...)
	}, func() {
		x.open = false
		for _, k := range calls {
			x.m.Calls = append(x.m.Calls, k)
			h.addCall(x, k)
		}
		for _, k := range h.calls {
			if k.result == x {
				k.done = true
			}
		}
		// Older calls of reused ids are no longer in h.calls.
		for _, y := range h.msgs {
			for _, k := range y.calls {
				if k.result == x {
					k.done = true
				}
			}
		}
	})
}

func (h *propHarness) couple(ids []MessageID) error {
	var want error
	for _, id := range ids {
		if h.byID[id] == nil {
			want = ErrUnknownMessage
			break
		}
	}
	return h.event(fmt.Sprintf("couple %v", ids), want, func() error { return h.c.Couple(ids...) }, func() {
		for _, id := range ids[min(1, len(ids)):] {
			h.union(ids[0], id)
		}
	})
}

func (h *propHarness) pin(id MessageID) error {
	var want error
	if h.byID[id] == nil {
		want = ErrUnknownMessage
	}
	return h.event("pin "+string(id), want, func() error { return h.c.Pin(id) }, func() { h.byID[id].m.Pinned = true })
}

func (h *propHarness) mark(id MessageID, f Facts) error {
	var want error
	if h.byID[id] == nil {
		want = ErrUnknownMessage
	}
	return h.event(fmt.Sprintf("mark %s %b", id, f), want, func() error { return h.c.Mark(id, f) }, func() {
		h.byID[id].m.Facts |= f
		h.rec.Facts[id] |= f
	})
}

func (h *propHarness) spill(id MessageID, p Pointer) error {
	var want error
	if h.byID[id] == nil {
		want = ErrUnknownMessage
	}
	return h.event(fmt.Sprintf("spill %s %v", id, p), want, func() error { return h.c.Spill(id, p) }, func() {
		h.byID[id].m.Pointer = p
		h.rec.Pointer[id] = p
	})
}

func (h *propHarness) planStep(step StepID, ids []MessageID) error {
	var want error
	if step == "" {
		want = ErrEmptyID
	} else {
		for _, id := range ids {
			if h.byID[id] == nil {
				want = ErrUnknownMessage
				break
			}
		}
	}
	return h.event(fmt.Sprintf("plan step %s %v", step, ids), want, func() error { return h.c.PlanStep(step, ids...) }, func() {
		h.steps[step] = append(h.steps[step], ids...)
		for _, id := range ids {
			h.rec.Refs[id]++
		}
	})
}

func (h *propHarness) completeStep(step StepID) error {
	var want error
	if _, ok := h.steps[step]; !ok {
		want = ErrUnknownStep
	}
	return h.event("complete step "+string(step), want, func() error { return h.c.CompleteStep(step) }, func() {
		for _, id := range h.steps[step] {
			h.rec.Refs[id]--
		}
		delete(h.steps, step)
	})
}

func (h *propHarness) seal(b bool) error {
	return h.event(fmt.Sprintf("seal %v", b), nil, func() error { h.c.SealSteps(b); return nil }, func() { h.rec.Sealed = b })
}

func (h *propHarness) randomTool() Tool {
	hint := func() *bool {
		switch h.src.intn(3) {
		case 0:
			return nil
		case 1:
			return Bool(true)
		}
		return Bool(false)
	}
	t := Tool{
		Name:        toolPool[h.src.intn(len(toolPool))],
		Annotations: Annotations{ReadOnlyHint: hint(), DestructiveHint: hint(), IdempotentHint: hint(), OpenWorldHint: hint()},
		Version:     []string{"", "v1", "v2"}[h.src.intn(3)],
		NoTombstone: h.src.intn(5) == 0,
	}
	if s := registerSchemas[h.src.intn(len(registerSchemas))]; s != "" {
		t.Schema = json.RawMessage(s)
	}
	if h.src.intn(4) == 0 {
		t.Output = Class(1 + h.src.intn(3))
	}
	return t
}

func (h *propHarness) register(t Tool) error {
	var want error
	switch {
	case t.Name == "":
		want = ErrEmptyID
	case len(t.Schema) > 0 && !json.Valid(t.Schema):
		want = ErrBadSchema
	}
	name := fmt.Sprintf("register %s v=%q schema=%s ann=%s out=%v notomb=%v", t.Name, t.Version, t.Schema, annString(t.Annotations), t.Output, t.NoTombstone)
	return h.event(name, want, func() error { return h.c.RegisterTool(t) }, func() {
		h.rec.Tools[t.Name] = t
		h.known[t.Name] = true
	})
}

func annString(a Annotations) string {
	f := func(p *bool) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("ro=%s de=%s id=%s ow=%s", f(a.ReadOnlyHint), f(a.DestructiveHint), f(a.IdempotentHint), f(a.OpenWorldHint))
}

func (h *propHarness) request(name string) error {
	var want error
	if !h.known[name] {
		want = ErrUnknownTool
	}
	return h.event("request tool "+name, want, func() error { _, err := h.c.RequestTool(name); return err }, func() {})
}

// invalid sends a malformed event; the propHarness predicts its error.
func (h *propHarness) invalid() error {
	x := h.pickPresent()
	switch h.src.intn(14) {
	case 0:
		if x != nil {
			m := h.textMessage()
			m.ID = x.m.ID
			return h.add(m, h.src.intn(2) == 0)
		}
	case 1:
		m := h.textMessage()
		m.ID = ""
		return h.add(m, false)
	case 2:
		m := h.textMessage()
		m.Tokens = -1 - h.src.intn(5)
		return h.add(m, false)
	case 3:
		m := h.textMessage()
		m.Answers = []CallID{"nope"}
		return h.add(m, false)
	case 4:
		// A result for a call that already has one, or that was pruned.
		var ids []CallID
		for _, y := range h.msgs {
			for _, k := range y.calls {
				if k.done || k.gone || k.result != nil {
					ids = append(ids, k.id)
				}
			}
		}
		if len(ids) > 0 {
			m := h.textMessage()
			m.Answers = []CallID{ids[h.src.intn(len(ids))]}
			return h.add(m, h.src.intn(2) == 0)
		}
	case 5:
		if ks := h.unanswered(); len(ks) > 0 {
			m := h.callMessage()
			m.Calls[0].ID = ks[h.src.intn(len(ks))].id
			return h.add(m, false)
		}
	case 6:
		m := h.callMessage()
		m.Calls = append(m.Calls, m.Calls[0])
		return h.add(m, false)
	case 7:
		if x != nil {
			return h.write(x.m.ID, []byte("late"), h.src.intn(3)-1)
		}
	case 8:
		if x != nil {
			return h.close(x.m.ID, []Call{{ID: ""}})
		}
	case 9:
		return h.write("ghost", []byte("x"), 1)
	case 10:
		ids := []MessageID{"ghost"}
		if x != nil {
			ids = append([]MessageID{x.m.ID}, ids...)
		}
		return h.couple(ids)
	case 11:
		return h.planStep(StepID([]string{"", "s9"}[h.src.intn(2)]), []MessageID{"ghost"})
	case 12:
		return h.register(Tool{Name: []string{"", "fetch"}[h.src.intn(2)], Schema: json.RawMessage(`{"x":`)})
	case 13:
		return h.request("no_such_tool")
	}
	return nil
}

// consistent compares the Context with the reference model.
func (h *propHarness) consistent() error {
	if h.invariantsOnly {
		return nil
	}
	s := capture(h.c)
	want := h.present()
	if len(s.Messages) != len(want) {
		return modelErr("context holds %d messages, model %d", len(s.Messages), len(want))
	}
	total := 0
	for i, m := range s.Messages {
		w := want[i].m
		if m.ID != w.ID || m.Role != w.Role || m.Tokens != w.Tokens || !bytes.Equal(m.Content, w.Content) ||
			!reflect.DeepEqual(normCalls(m.Calls), normCalls(w.Calls)) || !slices.Equal(m.Answers, w.Answers) ||
			m.Pinned != w.Pinned || m.Class != w.Class || m.Facts != w.Facts || m.Pointer != w.Pointer {
			return modelErr("message %d differs:\ncontext %+v\nmodel   %+v", i, m, w)
		}
		total += m.Tokens
		if k, _ := h.c.ClassOf(m.ID); k != h.rec.class(m) {
			return modelErr("class of %s: context %v, model %v", m.ID, k, h.rec.class(m))
		}
	}
	if s.Tokens != total {
		return modelErr("Tokens() = %d, sum of messages %d", s.Tokens, total)
	}
	var open []MessageID
	var pending []CallID
	for _, x := range want {
		if x.open {
			open = append(open, x.m.ID)
		}
		for _, k := range x.calls {
			if !k.done {
				pending = append(pending, k.id)
			}
		}
	}
	if !slices.Equal(s.Open, open) {
		return modelErr("open messages: context %v, model %v", s.Open, open)
	}
	if !slices.Equal(s.Pending, pending) {
		return modelErr("pending calls: context %v, model %v", s.Pending, pending)
	}
	// Units, as the model groups them.
	var units []Unit
	idx := map[MessageID]int{}
	for _, x := range want {
		rep := h.find(x.m.ID)
		i, ok := idx[rep]
		if !ok {
			i = len(units)
			idx[rep] = i
			units = append(units, Unit{ID: UnitID(x.m.ID)})
		}
		u := &units[i]
		u.Messages = append(u.Messages, x.m.ID)
		u.Tokens += x.m.Tokens
		u.Open = u.Open || x.open
		u.Pinned = u.Pinned || x.m.Pinned
		for _, k := range x.calls {
			if !k.done {
				u.Pending = append(u.Pending, k.id)
			}
		}
	}
	if !reflect.DeepEqual(s.Units, units) {
		return modelErr("units:\ncontext %+v\nmodel   %+v", s.Units, units)
	}
	args := map[string]int{}
	for _, x := range want {
		for _, k := range x.m.Calls {
			args[k.Tool]++
		}
	}
	for _, t := range s.Tools {
		if !h.known[t.Tool.Name] {
			return modelErr("unknown tool %s in the registry", t.Tool.Name)
		}
		if t.Args != args[t.Tool.Name] {
			return modelErr("tool %s: Args = %d, model %d", t.Tool.Name, t.Args, args[t.Tool.Name])
		}
	}
	if len(s.Tools) != len(h.known) {
		return modelErr("registry holds %d tools, model %d", len(s.Tools), len(h.known))
	}
	return nil
}

func normCalls(cs []Call) []Call {
	out := make([]Call, len(cs))
	for i, c := range cs {
		out[i] = Call{ID: c.ID, Tool: c.Tool}
	}
	return out
}

func (h *propHarness) randomPlan() Plan {
	var p Plan
	xs := h.present()
	if len(xs) > 0 {
		if h.src.intn(10) == 0 {
			for _, x := range xs {
				p.Evict = append(p.Evict, x.m.ID)
			}
		} else {
			for range h.src.intn(4) {
				p.Evict = append(p.Evict, xs[h.src.intn(len(xs))].m.ID)
			}
		}
		var results []*smsg
		for _, x := range xs {
			if len(x.m.Answers) > 0 {
				results = append(results, x)
			}
		}
		if len(results) > 0 {
			for range h.src.intn(3) {
				p.Stub = append(p.Stub, results[h.src.intn(len(results))].m.ID)
			}
		}
	}
	for _, name := range toolPool {
		if _, ok := h.rec.Tools[name]; !ok {
			continue
		}
		if h.src.intn(4) == 0 {
			p.DropSchemas = append(p.DropSchemas, name)
		}
		if h.src.intn(4) == 0 {
			if p.CompressSchemas == nil {
				p.CompressSchemas = map[string]json.RawMessage{}
			}
			// Mostly valid compressions; invalid JSON now and then.
			n := len(compressions) - 1
			if h.src.intn(10) == 0 {
				n++
			}
			p.CompressSchemas[name] = json.RawMessage(compressions[h.src.intn(n)])
		}
	}
	if h.src.intn(25) == 0 {
		p.Evict = append(p.Evict, "ghost")
	}
	if h.src.intn(25) == 0 && len(xs) > 0 {
		p.Stub = append(p.Stub, xs[h.src.intn(len(xs))].m.ID)
	}
	if h.src.intn(30) == 0 {
		p.DropSchemas = append(p.DropSchemas, "no_such_tool")
	}
	p.Split = SplitMode(h.src.intn(3))
	return p
}

// planFault says whether a plan names what the Context does not hold.
func (h *propHarness) planFault(p Plan) bool {
	for _, id := range p.Evict {
		if h.byID[id] == nil {
			return true
		}
	}
	for _, id := range p.Stub {
		if x := h.byID[id]; x == nil || len(x.m.Answers) == 0 {
			return true
		}
	}
	for _, name := range p.DropSchemas {
		if _, ok := h.rec.Tools[name]; !ok {
			return true
		}
	}
	for name, s := range p.CompressSchemas {
		t, ok := h.rec.Tools[name]
		if !ok || !json.Valid(t.Schema) || !json.Valid(s) {
			return true
		}
	}
	return false
}

func planString(p Plan) string {
	var cs []string
	for name, s := range p.CompressSchemas {
		cs = append(cs, name+"="+string(s))
	}
	slices.Sort(cs)
	return fmt.Sprintf("evict=%v stub=%v drop=%v compress=%v split=%d", p.Evict, p.Stub, p.DropSchemas, cs, p.Split)
}

func (h *propHarness) settled() bool {
	for _, x := range h.present() {
		if x.open {
			return false
		}
		for _, k := range x.calls {
			if !k.done {
				return false
			}
		}
	}
	return true
}

// unitMembers lists the present members of the unit holding id.
func (h *propHarness) unitMembers(id MessageID) []*smsg {
	rep := h.find(id)
	var out []*smsg
	for _, x := range h.present() {
		if h.find(x.m.ID) == rep {
			out = append(out, x)
		}
	}
	return out
}

func (h *propHarness) prune(p Plan) error {
	h.prunes++
	h.logf("prune %s", planString(p))
	before := capture(h.c)
	d, err := h.c.Prune(p)
	if diff := diffState(before, capture(h.c)); diff != nil {
		return modelErr("Prune mutated the context: %v", diff)
	}
	fault := h.planFault(p)
	if err != nil {
		h.logf("  refused: %v", err)
		return h.checkRefusal(p, err, fault)
	}
	if fault {
		return modelErr("Prune accepted a plan naming what the context does not hold")
	}
	if !h.invariantsOnly {
		if !h.settled() && h.c.cfg.Boundary == BoundaryStrict && h.gates&disableBoundary == 0 && !d.Empty() {
			return &invariantError{kindBoundary, "Prune returned a decision while the context is not at a commit boundary"}
		}
		if err := h.checkDecision(p, d); err != nil {
			return err
		}
	}
	h.logf("  decision evict=%v stub=%v drop=%v compress=%d tomb=%d retire=%v refused=%d", d.Evict, d.Stub, d.DropSchemas, len(d.Compress), len(d.Tombstones), d.Retire, len(d.Refused))

	between := 0
	if h.src.intn(4) == 0 {
		between = 1 + h.src.intn(3)
		for range between {
			if err := h.step(betweenOps); err != nil {
				return err
			}
		}
	}
	pre := capture(h.c)
	if err := h.c.Apply(d); err != nil {
		h.logf("  apply: %v", err)
		if !errors.Is(err, ErrStaleDecision) {
			return modelErr("Apply failed with %v, want a stale decision", err)
		}
		if between == 0 {
			return modelErr("Apply refused a fresh decision: %v", err)
		}
		if diff := diffState(pre, capture(h.c)); diff != nil {
			return modelErr("refused Apply changed the context: %v", diff)
		}
		h.stale++
		return nil
	}
	h.applied++
	// The reference model applies the decision.
	for _, id := range d.Evict {
		x := h.byID[id]
		if x == nil {
			return modelErr("decision evicts %s, which the model does not hold", id)
		}
		x.present = false
		delete(h.byID, id)
		for _, k := range x.calls {
			k.gone = true
		}
	}
	text, n := h.c.cfg.stub()
	for _, id := range d.Stub {
		x := h.byID[id]
		x.m.Content = slices.Clone(text)
		x.m.Tokens = n
	}
	post := capture(h.c)
	if err := checkPrune(pre, post, h.rec); err != nil {
		return err
	}
	if err := h.c.Apply(d); !errors.Is(err, ErrForeignDecision) {
		return modelErr("second Apply of one decision: %v", err)
	}
	return h.consistent()
}

// checkRefusal checks a refused Prune: the right sentinel, no mutation,
// the same text twice, sorted and justified violations.
func (h *propHarness) checkRefusal(p Plan, err error, fault bool) error {
	if fault != errors.Is(err, ErrInvalidInput) {
		return modelErr("plan fault %v, but Prune returned %v", fault, err)
	}
	_, err2 := h.c.Prune(p)
	if err2 == nil || err2.Error() != err.Error() {
		return modelErr("same plan, different answers:\n%v\n%v", err, err2)
	}
	if fault {
		return nil
	}
	h.refused++
	if !errors.Is(err, ErrBoundary) && !errors.Is(err, ErrSchema) && !errors.Is(err, ErrRegen) && !errors.Is(err, ErrDeferred) {
		return modelErr("refusal matches no gate sentinel: %v", err)
	}
	var de *DeferredError
	if errors.As(err, &de) {
		h.deferred++
		if h.settled() && !h.invariantsOnly {
			return &invariantError{kindBoundary, fmt.Sprintf("deferred at a commit boundary: %v", err)}
		}
		return nil
	}
	var pe *PruneError
	if !errors.As(err, &pe) || len(pe.Violations) == 0 {
		return modelErr("refusal is neither deferred nor a PruneError with violations: %v", err)
	}
	if h.invariantsOnly {
		return nil
	}
	if !slices.IsSortedFunc(pe.Violations, func(a, b *Violation) int {
		if a.Gate != b.Gate {
			return int(a.Gate) - int(b.Gate)
		}
		if a.pos != b.pos {
			return cmpSeq(a.pos, b.pos)
		}
		return strings.Compare(string(a.Code), string(b.Code))
	}) {
		return modelErr("violations not sorted: %v", err)
	}
	return h.justified(p, pe.Violations)
}

// justified checks that each violation has a reason in the model.
func (h *propHarness) justified(p Plan, vs []*Violation) error {
	for _, v := range vs {
		if !errors.Is(v, v.Gate.sentinel()) {
			return modelErr("violation %v does not match its gate", v)
		}
		switch v.Gate {
		case GateBoundary:
			if len(v.Units) == 0 {
				return modelErr("boundary violation without a unit: %v", v)
			}
			us := h.unitMembers(MessageID(v.Units[0]))
			var why bool
			switch v.Code {
			case CodeOpen:
				why = slices.ContainsFunc(us, func(x *smsg) bool { return x.open })
			case CodePending:
				why = slices.ContainsFunc(us, func(x *smsg) bool {
					return slices.ContainsFunc(x.calls, func(k *scall) bool { return !k.done })
				})
			case CodePinned:
				why = slices.ContainsFunc(us, func(x *smsg) bool { return x.m.Pinned })
			case CodeSplit:
				why = slices.ContainsFunc(us, func(x *smsg) bool { return !slices.Contains(p.Evict, x.m.ID) })
			}
			if !why {
				return modelErr("unjustified boundary violation %v", v)
			}
		case GateRegen:
			x := h.byID[v.Messages[0]]
			if x == nil {
				return modelErr("regen violation names an unknown message: %v", v)
			}
			if ok, _ := h.rec.regenSafe(x.m); ok {
				return modelErr("unjustified regen violation %v", v)
			}
			if (v.Code == CodeReferenced) != (h.rec.Refs[x.m.ID] > 0) {
				return modelErr("regen violation %v: step references %d", v, h.rec.Refs[x.m.ID])
			}
		case GateSchema:
			t := h.rec.Tools[v.Tools[0]]
			if readOnly(t) || !(h.c.cfg.NoTombstones || t.NoTombstone) || len(v.Calls) == 0 {
				return modelErr("unjustified schema violation %v (tool %+v)", v, t)
			}
		}
	}
	return nil
}

// checkDecision checks the shape of a decision against the plan and the
// model, before it is applied.
func (h *propHarness) checkDecision(p Plan, d *Decision) error {
	d2, err := h.c.Prune(p)
	if err != nil {
		return modelErr("same plan, second Prune refused: %v", err)
	}
	if !reflect.DeepEqual(decisionFields(d), decisionFields(d2)) {
		return modelErr("same plan, different decisions:\n%+v\n%+v", decisionFields(d), decisionFields(d2))
	}
	evict := map[MessageID]bool{}
	freed := 0
	for _, id := range d.Evict {
		evict[id] = true
		x := h.byID[id]
		if x == nil {
			return modelErr("decision evicts unknown %s", id)
		}
		freed += x.m.Tokens
	}
	for _, id := range d.Evict {
		named := false
		for _, x := range h.unitMembers(id) {
			if !evict[x.m.ID] {
				return &invariantError{kindBoundary, fmt.Sprintf("decision cuts the unit of %s: %s stays", id, x.m.ID)}
			}
			if slices.Contains(p.Evict, x.m.ID) {
				named = true
			} else if p.Split != SplitGrow {
				return &invariantError{kindBoundary, fmt.Sprintf("split mode %d grew the plan to %s", p.Split, x.m.ID)}
			}
		}
		if !named {
			return modelErr("decision evicts the unit of %s, which the plan does not name", id)
		}
		if ok, why := h.rec.regenSafe(h.byID[id].m); !ok {
			return &invariantError{kindRegen, fmt.Sprintf("decision evicts %s: %s", id, why)}
		}
	}
	_, n := h.c.cfg.stub()
	for _, id := range d.Stub {
		if !slices.Contains(p.Stub, id) || evict[id] {
			return modelErr("decision stubs %s, not in the plan or evicted too", id)
		}
		x := h.byID[id]
		freed += max(0, x.m.Tokens-n)
		if ok, why := h.rec.regenSafe(x.m); !ok {
			return &invariantError{kindRegen, fmt.Sprintf("decision stubs %s: %s", id, why)}
		}
	}
	if d.Freed != freed {
		return modelErr("Freed = %d, model %d", d.Freed, freed)
	}
	if err := h.justified(p, d.Refused); err != nil {
		return err
	}
	return nil
}

// exported returns the exported fields of a decision, for comparison.
func decisionFields(d *Decision) any {
	var refused []string
	for _, v := range d.Refused {
		refused = append(refused, v.Error())
	}
	return []any{d.Evict, d.Units, d.Stub, d.Freed, d.DropSchemas, d.Compress, d.Lossy, d.Tombstones, d.Retire, d.Pointers, refused, d.Hoarded}
}

// --- Properties ---

// rapidRun runs the propHarness under rapid for up to steps events.
func rapidRun(t *testing.T, ops opSet, steps int) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newPropHarness(rapidSource{rt}, ops, 0)
		if err := h.run(rapid.IntRange(1, steps).Draw(rt, "steps")); err != nil {
			rt.Fatal(err)
		}
	})
}

// Random event sequences interleaved with random plans: every Prune is
// pure and deterministic, every refusal matches a gate sentinel and is
// justified, every applied decision keeps the invariants, and the
// reference model agrees with the Context after every step.
func TestPropertyPruneKeepsInvariants(t *testing.T) {
	rapidRun(t, defaultOps, 120)
}

// The same with plans on most steps.
func TestPropertyPruneHeavy(t *testing.T) {
	rapidRun(t, pruneOps, 120)
}

// Bad events fail with ErrInvalidInput (and the predicted sentinel) and
// leave the Context exactly as it was.
func TestPropertyBadEventsChangeNothing(t *testing.T) {
	rapidRun(t, invalidOps, 80)
}

// seedRun runs the propHarness with a fixed PRNG seed.
func seedRun(seed uint64, gates gateMask, steps int) (*propHarness, error) {
	src := randSource{rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	h := newPropHarness(src, defaultOps, gates)
	return h, h.run(steps)
}

// Mutation check: with any one gate switched off, the invariant checker
// finds violations of that gate's invariants over fixed seeds; with all
// gates on it finds none over the same seeds.
func TestGatesOffAreCaught(t *testing.T) {
	const seeds = 300
	gates := []struct {
		name string
		mask gateMask
		kind invKind
	}{
		{"boundary", disableBoundary, kindBoundary},
		{"schema", disableSchema, kindSchema},
		{"regen", disableRegen, kindRegen},
	}
	for _, g := range gates {
		t.Run(g.name+" off", func(t *testing.T) {
			caught := 0
			for seed := range uint64(seeds) {
				_, err := seedRun(seed, g.mask, 80)
				if slices.Contains(kindsOf(err), g.kind) {
					caught++
				}
			}
			t.Logf("%d of %d runs caught the %s gate switched off", caught, seeds, g.name)
			assert.Positive(t, caught, "the invariants do not notice the %s gate switched off", g.name)
		})
	}
	t.Run("all on", func(t *testing.T) {
		var stats [5]int
		for seed := range uint64(seeds) {
			h, err := seedRun(seed, 0, 80)
			require.NoError(t, err, "seed %d", seed)
			stats[0] += h.prunes
			stats[1] += h.applied
			stats[2] += h.refused
			stats[3] += h.deferred
			stats[4] += h.stale
		}
		t.Logf("prunes %d, applied %d, refused %d (deferred %d), stale %d", stats[0], stats[1], stats[2], stats[3], stats[4])
		// The generator must exercise both outcomes, or it proves little.
		assert.Positive(t, stats[1])
		assert.Positive(t, stats[2]-stats[3])
		assert.Positive(t, stats[3])
		assert.Positive(t, stats[4])
	})
}

// --- Regressions the properties found ---

// Couple given one unit twice merged an absorbed unit again and counted
// its tokens twice.
func TestRegressionCoupleRepeatedID(t *testing.T) {
	c := NewContext(Config{})
	require.NoError(t, c.Append(Message{ID: "m1", Tokens: 1}))
	require.NoError(t, c.Append(Message{ID: "m2", Tokens: 2}))
	require.NoError(t, c.Couple("m1", "m2", "m2"))
	us := c.Units()
	require.Len(t, us, 1)
	assert.Equal(t, 3, us[0].Tokens)
	assert.Equal(t, c.Tokens(), us[0].Tokens)
}

// A schema withdrawn while its tool had no arguments, applied after a
// call to the tool arrived, left a ghost tool without a tombstone.
func TestRegressionSchemaDropThenCallBeforeApply(t *testing.T) {
	for _, mode := range []BoundaryMode{BoundaryStrict, BoundaryRelaxed} {
		c := NewContext(Config{Boundary: mode, NoTombstones: true})
		require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: json.RawMessage(schemaV1)}))
		require.NoError(t, c.Append(Message{ID: "u", Tokens: 1}))
		d, err := c.Prune(Plan{DropSchemas: []string{"update_incident"}})
		require.NoError(t, err)
		require.NoError(t, c.Append(Message{ID: "a", Calls: []Call{{ID: "k", Tool: "update_incident"}}}))
		require.NoError(t, c.Append(Message{ID: "r", Answers: []CallID{"k"}}))
		require.ErrorIs(t, c.Apply(d), ErrStaleDecision, "mode %d", mode)
		st, _ := c.Tool("update_incident")
		assert.True(t, st.Resident)
	}
}

// Two bad compressions in one plan gave different errors from one call
// to the next (map order).
func TestRegressionPlanErrorsDeterministic(t *testing.T) {
	c := NewContext(Config{})
	for _, name := range toolPool {
		require.NoError(t, c.RegisterTool(Tool{Name: name, Schema: json.RawMessage(schemaV1)}))
	}
	p := Plan{CompressSchemas: map[string]json.RawMessage{}}
	for _, name := range toolPool {
		p.CompressSchemas[name] = json.RawMessage(`{"type":`)
	}
	_, first := c.Prune(p)
	require.ErrorIs(t, first, ErrInvalidInput)
	for range 20 {
		_, err := c.Prune(p)
		require.EqualError(t, err, first.Error())
	}
}

package pruneguard

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"pgregory.net/rapid"
)

// The propHarness drives a Context with random events and plans drawn from a
// choiceSource (rapid, a seeded PRNG, or fuzz bytes), keeps a naive reference
// model of the transcript beside it (prop_model_test.go), and checks after
// every step that the two agree and, after every applied prune, the
// invariants of the seeds (checker_test.go). The properties themselves
// are in property_test.go.

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
	// (lossy against v1: it admits SEV-3), lossy against both, and invalid
	// JSON.
	compressions = []string{
		`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2"]},"notify":{"type":"boolean"}},"required":["severity","notify"]}`,
		`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`,
		`{"type":"object"}`,
		`{"type":`,
	}
	registerSchemas = []string{"", schemaV1, schemaV2, schemaV1, `{"bad"`}
)

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
	opReport
	opAbandon    // abandon calls, valid or not
	opSpillStore // spill messages through a Spiller over a failing store
	opForget     // a spilled segment stops resolving
	nOps
)

var (
	defaultOps = opSet{[nOps]int{8, 8, 10, 3, 5, 4, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1, 10, 4, 1, 2, 3, 1}}
	invalidOps = opSet{[nOps]int{5, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 3, 20, 1, 3, 1, 1}}
	pruneOps   = opSet{[nOps]int{6, 8, 10, 2, 3, 3, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1, 20, 2, 1, 2, 3, 1}}
	eventOps   = opSet{[nOps]int{8, 8, 10, 3, 5, 4, 2, 1, 2, 2, 1, 2, 2, 1, 3, 1, 0, 8, 1, 2, 2, 1}}
	// Spills, resolver changes and prunes, for the pointer lifetime.
	spillOps = opSet{[nOps]int{4, 4, 6, 8, 10, 5, 1, 0, 1, 8, 4, 1, 1, 0, 1, 0, 14, 0, 0, 1, 3, 1}}
	// Events that may land between a Prune and its Apply, the resolver
	// changing its mind among them: Apply asks it again.
	betweenOps = opSet{[nOps]int{3, 4, 4, 1, 2, 2, 2, 1, 1, 1, 3, 1, 1, 1, 2, 1, 0, 1, 1, 1, 1, 3}}
)

// PropSpiller is what the harness needs of a spill.Spiller. Package spill
// imports this package, so the tests of this package cannot import it;
// spill_bridge_test.go, in package pruneguard_test, sets NewPropSpiller.
type PropSpiller interface {
	// Spill stores the messages and records the pointer on each; an open
	// message fails with an error matching ErrOpenMessage.
	Spill(c *Context, ids ...MessageID) (Pointer, error)
	Resolvable(p Pointer) bool
	Forget(p Pointer)
	// Recall reads back what the store holds under p.
	Recall(p Pointer) ([]Message, error)
	// Failed reports whether the store failed a write since the last call.
	Failed() bool
}

// NewPropSpiller makes a PropSpiller whose store fails a write when
// intn(3) answers 0, and then keeps the content when intn(2) answers 0.
var NewPropSpiller func(intn func(int) int) PropSpiller

// propStore is the store name of the harness's Spiller.
const propStore = "prop"

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
	c   *Context
	src choiceSource
	ops opSet
	off Gate // the gate switched off, or 0
	// invariantsOnly: a gate is off; check only what checkPrune checks
	// after each Apply, since the reference model cannot follow a Context
	// that no longer keeps its guarantees.
	invariantsOnly bool

	spiller PropSpiller
	spilled []Pointer                        // pointers the Spiller handed out
	stored  map[Pointer]map[MessageID][]byte // scratch pointers: what they hold
	goneAb  map[CallID]bool                  // the Context's memory of pruned calls

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

	// The refetch model: what the decisions applied pruned, by the
	// signature of the call, and the alerts the Context owes.
	pruned map[string]prunedModel
	// lines are the pointers of the messages evicted, whose lines the
	// Context counts with Config.PointerTokens set.
	lines     map[Pointer]bool
	alerts    []RefetchAlert
	refetches int
	repairs   int // tombstones decisions added for tools their plans left alone
	// What the runs exercised beside prunes: spills through the store and
	// the writes it failed, abandoned calls, decisions refused for a lost
	// pointer, and applied decisions that relied on pointers.
	spills, storeFails, abandons, lost, relied int

	// Weakenings of the Context the harness can make, to show the checker
	// notices them: Apply without asking the Resolver again, pointers
	// recorded on streaming messages, and a Context that takes every
	// message for read.
	noRecheck, looseSpill, allRead bool
}

func newPropHarness(src choiceSource, ops opSet, off Gate) *propHarness {
	h := &propHarness{
		src: src, ops: ops, off: off, invariantsOnly: off != 0,
		byID: map[MessageID]*smsg{}, calls: map[CallID]*scall{}, known: map[string]bool{},
		live: map[Pointer]bool{}, steps: map[StepID][]MessageID{}, parent: map[MessageID]MessageID{},
		stored: map[Pointer]map[MessageID][]byte{}, goneAb: map[CallID]bool{},
	}
	if NewPropSpiller != nil {
		h.spiller = NewPropSpiller(src.intn)
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
		cfg.Resolver = ResolverFunc(h.resolvable)
	}
	if src.intn(3) == 0 {
		cfg.StubTokens = 1 + src.intn(20)
	}
	if src.intn(4) == 0 {
		cfg.HoardTokens = 100
	}
	if src.intn(3) == 0 {
		cfg.PointerTokens = 1 + src.intn(30)
	}
	h.c = NewContext(cfg)
	if off != 0 {
		withoutGates(h.c, off)
	}
	h.rec = &invRecord{
		Cfg: cfg, Facts: map[MessageID]Facts{}, Class: map[MessageID]Class{}, Pointer: map[MessageID]Pointer{},
		Live: h.resolvable, Refs: map[MessageID]int{}, Tools: map[string]Tool{},
		CallerOf: map[callKey]MessageID{}, ResultOf: map[callKey]MessageID{}, CallTool: map[callKey]string{},
		Unit: h.find, Requires: map[MessageID][]string{},
		Abandoned: map[callKey]bool{}, Stored: h.storedContent, Original: map[MessageID][]byte{},
		Seq: map[MessageID]int{},
	}
	h.pruned = map[string]prunedModel{}
	h.lines = map[Pointer]bool{}
	h.logf("config %+v gate off %v", cfg, off)
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
	case opReport:
		id := CallID("nope")
		if ks := h.present(); len(ks) > 0 {
			if x := ks[h.src.intn(len(ks))]; len(x.calls) > 0 {
				id = x.calls[h.src.intn(len(x.calls))].id
			}
		}
		return h.report(id, []string{"notify", "severity", ""}[:h.src.intn(4)])
	case opAbandon:
		return h.abandon(h.abandonIDs())
	case opSpillStore:
		var ids []MessageID
		for range 1 + h.src.intn(3) {
			if x := h.pickPresent(); x != nil {
				ids = append(ids, x.m.ID)
			}
		}
		return h.spillStore(ids)
	case opForget:
		if len(h.spilled) > 0 && h.spiller != nil {
			p := h.spilled[h.src.intn(len(h.spilled))]
			h.spiller.Forget(p)
			h.logf("forget %v", p)
		}
	}
	return nil
}

// resolvable is the harness's Resolver: the Spiller for its pointers,
// the harness's own answers for the others.
func (h *propHarness) resolvable(p Pointer) bool {
	if p.Store == propStore {
		return h.spiller != nil && h.spiller.Resolvable(p)
	}
	return h.live[p]
}

// storedContent returns what pointer p holds for message id.
func (h *propHarness) storedContent(p Pointer, id MessageID) ([]byte, bool) {
	if p.Store != propStore {
		b, ok := h.stored[p][id]
		return b, ok
	}
	if h.spiller == nil {
		return nil, false
	}
	ms, err := h.spiller.Recall(p)
	if err != nil {
		return nil, false
	}
	for _, m := range ms {
		if m.ID == id {
			return m.Content, true
		}
	}
	return nil, false
}

// abandonIDs picks calls to abandon: mostly calls waiting for a result,
// now and then one that cannot be abandoned.
func (h *propHarness) abandonIDs() []CallID {
	var ids []CallID
	if ks := h.unanswered(); len(ks) > 0 {
		for range 1 + h.src.intn(2) {
			ids = append(ids, ks[h.src.intn(len(ks))].id)
		}
	}
	if h.src.intn(4) == 0 {
		var others []CallID
		for _, x := range h.msgs {
			for _, k := range x.calls {
				others = append(others, k.id)
			}
		}
		others = append(others, "nope", "")
		ids = append(ids, others[h.src.intn(len(others))])
	}
	return ids
}

func (h *propHarness) newID() MessageID {
	h.next++
	return MessageID(fmt.Sprintf("m%d", h.next))
}

func (h *propHarness) pointer() Pointer {
	return Pointer{Store: "scratch", Key: fmt.Sprintf("p%d", h.src.intn(4))}
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
	h.requires(&m)
	return m
}

// requires now and then makes m require a tool's schema, as a
// tool_reference block would.
func (h *propHarness) requires(m *Message) {
	if h.src.intn(12) == 0 {
		m.Requires = []string{toolPool[h.src.intn(len(toolPool))]}
	}
}

// callArgs are the arguments the model sends: the same call with its keys
// in another order (one signature), a subset of it, a variant with an
// assignee, and the reuse marker.
var callArgs = []string{
	`{"severity":"SEV-2","notify":true}`,
	`{ "notify": true, "severity": "SEV-2" }`,
	`{"severity":"SEV-1"}`,
	`{"severity":"SEV-2","notify":true,"assignee_id":"u-17"}`,
	`{"reused":true}`,
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
			return Call{ID: id, Tool: toolPool[h.src.intn(len(toolPool))], Args: json.RawMessage(callArgs[len(callArgs)-1])}
		}
	}
	h.next++
	return Call{ID: CallID(fmt.Sprintf("k%d", h.next)), Tool: toolPool[h.src.intn(len(toolPool))], Args: json.RawMessage(callArgs[h.src.intn(len(callArgs)-1)]),
		Server: h.src.intn(8) == 0}
}

func (h *propHarness) callMessage() Message {
	m := Message{ID: h.newID(), Role: RoleAssistant, Tokens: h.src.intn(100)}
	for range 1 + h.src.intn(4) {
		m.Calls = append(m.Calls, h.newCall())
	}
	h.decorate(&m)
	return m
}

func (h *propHarness) result(open bool) error {
	ks := h.unanswered()
	if len(ks) == 0 {
		return h.add(h.textMessage(), open)
	}
	m := Message{ID: h.newID(), Role: RoleTool, Tokens: h.src.intn(400)}
	// The content of a result repeats now and then, so that a refetch
	// may match what was pruned or not.
	m.Content = []byte(fmt.Sprintf("result %d", h.src.intn(3)))
	if h.src.intn(6) == 0 {
		m.IsError = true
		m.Content = []byte([]string{"notify: required", "severity must be one of SEV-1, SEV-2", "failed"}[h.src.intn(3)])
	}
	h.requires(&m)
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
	t.Scope = []string{"", "fs", "db"}[h.src.intn(3)]
	return t
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

func planString(p Plan) string {
	var cs []string
	for name, s := range p.CompressSchemas {
		cs = append(cs, name+"="+string(s))
	}
	slices.Sort(cs)
	return fmt.Sprintf("evict=%v stub=%v drop=%v compress=%v split=%d", p.Evict, p.Stub, p.DropSchemas, cs, p.Split)
}

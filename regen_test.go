package pruneguard

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// regenContext: one call to tool "t" (annotated by ann) answered by r,
// whose fields come from m, under the regenerability gate alone: a plan
// evicts exactly what it names.
func regenContext(t *testing.T, cfg Config, tool Tool, m Message) *Context {
	t.Helper()
	c := NewContext(cfg)
	onlyGate(c, GateRegen)
	tool.Name = "t"
	require.NoError(t, c.RegisterTool(tool))
	mustAppend(t, c, Message{ID: "a", Role: RoleAssistant, Tokens: 10, Calls: []Call{{ID: "k", Tool: "t"}}})
	m.ID, m.Answers, m.Role = "r", []CallID{"k"}, RoleTool
	mustAppend(t, c, m)
	return c
}

var closedWorld = Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}

func TestRegenClasses(t *testing.T) {
	yes := ResolverFunc(func(Pointer) bool { return true })
	no := ResolverFunc(func(Pointer) bool { return false })
	ptr := Pointer{Store: "scratch", Key: "r"}
	tests := []struct {
		name  string
		cfg   Config
		tool  Tool
		m     Message
		codes []Code // nil: safe
	}{
		{"reconstructible tool", Config{}, Tool{Annotations: closedWorld}, Message{}, nil},
		{"unannotated tool", Config{}, Tool{}, Message{}, []Code{CodeIrreducible}},
		{"open-world read", Config{}, Tool{Annotations: Annotations{ReadOnlyHint: Bool(true)}}, Message{}, []Code{CodeIrreducible}},
		{"explicit class wins over tool", Config{}, Tool{}, Message{Class: Reconstructible}, nil},
		{"explicit irreducible", Config{}, Tool{Annotations: closedWorld}, Message{Class: Irreducible}, []Code{CodeIrreducible}},
		{"negative result whatever its class", Config{}, Tool{Annotations: closedWorld}, Message{Class: Reconstructible, Facts: NegativeResult}, []Code{CodeNegative}},
		{"transient state", Config{}, Tool{Annotations: closedWorld}, Message{Facts: TransientState}, []Code{CodeTransient}},
		{"one-time secret", Config{}, Tool{Annotations: closedWorld}, Message{Facts: OneTimeSecret}, []Code{CodeSecret}},
		{"user constraint", Config{}, Tool{Annotations: closedWorld}, Message{Facts: UserConstraint}, []Code{CodeUserConstraint}},
		{"two facts", Config{}, Tool{Annotations: closedWorld}, Message{Facts: NegativeResult | OneTimeSecret}, []Code{CodeNegative, CodeSecret}},
		{"a fact no name is given for", Config{}, Tool{Annotations: closedWorld}, Message{Class: Reconstructible, Facts: Facts(1 << 6)}, []Code{CodeIrreducible}},
		{"durable without pointer", Config{}, Tool{Output: Durable}, Message{}, []Code{CodePointerLost}},
		{"durable pointer without resolver", Config{}, Tool{Output: Durable}, Message{Pointer: ptr}, []Code{CodePointerLost}},
		{"durable pointer unresolvable", Config{Resolver: no}, Tool{Output: Durable}, Message{Pointer: ptr}, []Code{CodePointerLost}},
		{"durable pointer resolvable", Config{Resolver: yes}, Tool{Output: Durable}, Message{Pointer: ptr}, nil},
		{"irreducible spilled", Config{Resolver: yes}, Tool{}, Message{Pointer: ptr}, nil},
		{"secret spilled", Config{Resolver: yes}, Tool{}, Message{Pointer: ptr, Facts: OneTimeSecret}, nil},
		{"secret with a dead pointer", Config{Resolver: no}, Tool{}, Message{Pointer: ptr, Facts: OneTimeSecret}, []Code{CodeSecret}},
		{"zero pointer never resolves", Config{Resolver: yes}, Tool{}, Message{}, []Code{CodeIrreducible}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := regenContext(t, tt.cfg, tt.tool, tt.m)
			d, err := c.Prune(Plan{Evict: []MessageID{"r"}})
			if tt.codes == nil {
				require.NoError(t, err)
				assert.Equal(t, []MessageID{"r"}, d.Evict)
				if !tt.m.Pointer.IsZero() {
					assert.Equal(t, []SpillNote{{"r", tt.m.Pointer}}, d.Pointers)
				}
				return
			}
			var pe *PruneError
			require.ErrorAs(t, err, &pe)
			var codes []Code
			for _, v := range pe.Violations {
				codes = append(codes, v.Code)
				assert.Equal(t, GateRegen, v.Gate)
				assert.Equal(t, []MessageID{"r"}, v.Messages)
				assert.Equal(t, []UnitID{"a"}, v.Units)
			}
			assert.Equal(t, tt.codes, codes)
			assert.ErrorIs(t, err, ErrRegen)
			assert.NotErrorIs(t, err, ErrBoundary)
		})
	}
}

func TestClassOf(t *testing.T) {
	c := regenContext(t, Config{}, Tool{Annotations: closedWorld}, Message{})
	mustAppend(t, c, Message{ID: "u", Role: RoleUser})
	k, ok := c.ClassOf("r")
	assert.True(t, ok)
	assert.Equal(t, Reconstructible, k)
	k, _ = c.ClassOf("u")
	assert.Equal(t, Irreducible, k, "text defaults to irreducible")
	require.NoError(t, c.Mark("r", TransientState))
	k, _ = c.ClassOf("r")
	assert.Equal(t, Irreducible, k)
	_, ok = c.ClassOf("nope")
	assert.False(t, ok)

	c = NewContext(Config{TextClass: Reconstructible})
	mustAppend(t, c, Message{ID: "u", Role: RoleUser})
	k, _ = c.ClassOf("u")
	assert.Equal(t, Reconstructible, k, "the runtime accepts losing text")
}

func TestOracle(t *testing.T) {
	calls := 0
	oracle := OracleFunc(func(m Message) Class {
		calls++
		if string(m.Content) == "keep" {
			return Irreducible
		}
		if string(m.Content) == "free" {
			return Reconstructible
		}
		return ClassUnset
	})
	c := NewContext(Config{Oracle: oracle})
	// Irreducible results (it mutates), which an Oracle may lift: not
	// destructive, idempotent.
	require.NoError(t, c.RegisterTool(Tool{Name: "t", Annotations: Annotations{DestructiveHint: Bool(false), IdempotentHint: Bool(true)}}))
	mustAppend(t, c,
		Message{ID: "a", Role: RoleAssistant, Calls: []Call{{ID: "k1", Tool: "t"}, {ID: "k2", Tool: "t"}, {ID: "k3", Tool: "t"}, {ID: "k4", Tool: "t"}}},
		Message{ID: "free", Content: []byte("free"), Answers: []CallID{"k1"}},
		Message{ID: "fallback", Content: []byte("?"), Answers: []CallID{"k2"}},
		Message{ID: "negative", Content: []byte("free"), Facts: NegativeResult, Answers: []CallID{"k3"}},
		Message{ID: "explicit", Content: []byte("keep"), Class: Reconstructible, Answers: []CallID{"k4"}},
	)
	modelReads(t, c, "read")
	_, err := c.Prune(Plan{Evict: []MessageID{"a"}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	var got []MessageID
	for _, v := range pe.Violations {
		got = append(got, v.Messages...)
	}
	// a: the oracle abstains, its calls' tool is unannotated. free: the
	// oracle frees it. fallback: the oracle abstains, the tool is
	// unannotated. negative: the oracle cannot lift a fact. explicit: the
	// message's own class is not the oracle's to change.
	assert.Equal(t, []MessageID{"a", "fallback", "negative"}, got)
	assert.Positive(t, calls)
}

func TestPlannedStepsHoldMessages(t *testing.T) {
	c := regenContext(t, Config{}, Tool{Annotations: closedWorld}, Message{})
	require.NoError(t, c.PlanStep("verify", "r"))
	require.NoError(t, c.PlanStep("report", "r", "a"))
	_, err := c.Prune(Plan{Evict: []MessageID{"r", "a"}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Violations, 2)
	assert.Equal(t, CodeReferenced, pe.Violations[0].Code)
	assert.Equal(t, []MessageID{"a"}, pe.Violations[0].Messages)
	assert.Equal(t, []StepID{"report"}, pe.Violations[0].Steps)
	assert.Equal(t, []StepID{"report", "verify"}, pe.Violations[1].Steps)
	assert.Contains(t, err.Error(), "steps report,verify")

	// A spilled, sealed or reconstructible message is still held.
	c.SealSteps(true)
	_, err = c.Prune(Plan{Evict: []MessageID{"r"}})
	assert.ErrorIs(t, err, ErrRegen)

	require.NoError(t, c.CompleteStep("verify"))
	require.NoError(t, c.CompleteStep("report"))
	_, err = c.Prune(Plan{Evict: []MessageID{"r"}})
	require.NoError(t, err)
}

func TestNeededByAtAppend(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c, Message{ID: "u", Role: RoleUser, Class: Reconstructible, NeededBy: []StepID{"answer"}})
	modelReads(t, c, "read")
	m, _ := c.Message("u")
	assert.Equal(t, []StepID{"answer"}, m.NeededBy)
	_, err := c.Prune(Plan{Evict: []MessageID{"u"}})
	var v *Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, CodeReferenced, v.Code)
	require.NoError(t, c.CompleteStep("answer"))
	_, err = c.Prune(Plan{Evict: []MessageID{"u"}})
	require.NoError(t, err)
	assert.ErrorIs(t, c.Append(Message{ID: "v", NeededBy: []StepID{""}}), ErrEmptyID)
}

func TestSealedPlanReleasesUnreferenced(t *testing.T) {
	c := regenContext(t, Config{}, Tool{}, Message{Facts: NegativeResult})
	mustAppend(t, c, Message{ID: "u", Role: RoleUser, Facts: UserConstraint})
	require.NoError(t, c.PlanStep("final", "u"))
	_, err := c.Prune(Plan{Evict: []MessageID{"r"}})
	require.ErrorIs(t, err, ErrRegen)
	c.SealSteps(true)
	d, err := c.Prune(Plan{Evict: []MessageID{"r"}})
	require.NoError(t, err, "no remaining step needs r")
	assert.Equal(t, []MessageID{"r"}, d.Evict)
	_, err = c.Prune(Plan{Evict: []MessageID{"u"}})
	require.ErrorIs(t, err, ErrRegen, "the final step needs u")
	c.SealSteps(false)
	_, err = c.Prune(Plan{Evict: []MessageID{"r"}})
	require.ErrorIs(t, err, ErrRegen)
}

func TestRegenDropUnsafe(t *testing.T) {
	c := NewContext(Config{Regen: RegenDropUnsafe})
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "u1", Role: RoleUser, Tokens: 5, Class: Reconstructible},
		Message{ID: "a1", Role: RoleAssistant, Calls: []Call{{ID: "c1", Tool: "x"}, {ID: "c2", Tool: "x"}}},
		Message{ID: "r1", Tokens: 50, Answers: []CallID{"c1"}},
		Message{ID: "r2", Tokens: 50, Facts: NegativeResult, Answers: []CallID{"c2"}},
		Message{ID: "a2", Role: RoleAssistant, Calls: []Call{{ID: "c3", Tool: "x"}}},
		Message{ID: "r3", Tokens: 50, Facts: OneTimeSecret, Answers: []CallID{"c3"}},
		Message{ID: "a4", Role: RoleAssistant, Calls: []Call{{ID: "c4", Tool: "x"}}},
		Message{ID: "r4", Tokens: 70, Answers: []CallID{"c4"}},
	)
	modelReads(t, c, "read")
	d, err := c.Prune(Plan{Evict: []MessageID{"u1", "r1", "a2"}, Stub: []MessageID{"r4", "r3"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"u1"}, d.Evict, "the batch with the negative result stays whole")
	assert.Equal(t, []MessageID{"r4"}, d.Stub)
	var codes []Code
	for _, v := range d.Refused {
		codes = append(codes, v.Code)
	}
	assert.Equal(t, []Code{CodeNegative, CodeSecret}, codes, "r3 is refused once, as part of its unit")
	require.NoError(t, c.Apply(d))
	u, _ := c.UnitOf("r1")
	assert.Equal(t, []MessageID{"a1", "r1", "r2"}, u.Messages)
}

func TestHoardedReport(t *testing.T) {
	c := NewContext(Config{HoardTokens: 100, TextClass: Reconstructible})
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "big", Role: RoleUser, Tokens: 500},
		Message{ID: "small", Role: RoleUser, Tokens: 10},
		Message{ID: "secret", Role: RoleUser, Tokens: 900, Facts: OneTimeSecret},
		Message{ID: "pinned", Role: RoleSystem, Tokens: 900, Pinned: true},
		Message{ID: "a1", Role: RoleAssistant, Calls: []Call{{ID: "c1", Tool: "x"}}},
		Message{ID: "r1", Tokens: 300, Answers: []CallID{"c1"}},
	)
	// The model's answer streams: it has read r1.
	require.NoError(t, c.Open(Message{ID: "s", Role: RoleAssistant, Tokens: 0}))
	require.NoError(t, c.Write("s", []byte("..."), 400))
	d, err := c.Prune(Plan{})
	require.ErrorIs(t, err, ErrDeferred)
	assert.Nil(t, d)
	require.NoError(t, c.Close("s"))
	d, err = c.Prune(Plan{Evict: []MessageID{"small"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"big", "r1", "s"}, d.Hoarded)
	d, err = c.Prune(Plan{Evict: []MessageID{"big"}, Stub: []MessageID{"r1"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"r1", "s"}, d.Hoarded, "r1 is still large until the stub is applied")
	require.NoError(t, c.Apply(d))
	d, err = c.Prune(Plan{})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"s"}, d.Hoarded)
}

func TestEveryViolationAtOnce(t *testing.T) {
	c := NewContext(Config{NoTombstones: true})
	require.NoError(t, c.RegisterTool(Tool{Name: "update", Annotations: Annotations{ReadOnlyHint: Bool(false)}, Output: Reconstructible}))
	mustAppend(t, c,
		Message{ID: "sys", Role: RoleSystem, Pinned: true},
		Message{ID: "note", Role: RoleAssistant, Facts: NegativeResult},
		Message{ID: "a1", Role: RoleAssistant, Calls: []Call{{ID: "c1", Tool: "update"}}},
		Message{ID: "r1", Answers: []CallID{"c1"}},
		Message{ID: "key", Role: RoleUser, Facts: OneTimeSecret},
		Message{ID: "a2", Role: RoleAssistant},
		Message{ID: "late", Role: RoleUser, Class: Reconstructible}, // not read yet
	)
	p := Plan{Evict: []MessageID{"key", "sys", "note", "late"}, DropSchemas: []string{"update"}, Split: SplitStrict}
	_, err := c.Prune(p)
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	var got []string
	for _, v := range pe.Violations {
		got = append(got, v.Gate.String()+"/"+string(v.Code))
	}
	assert.Equal(t, []string{"boundary/pinned", "boundary/unread", "schema/ghost-tool", "regen/negative-result", "regen/one-time-secret"}, got)
	for _, sentinel := range []error{ErrBoundary, ErrSchema, ErrRegen} {
		assert.ErrorIs(t, err, sentinel)
	}
	_, again := c.Prune(p)
	assert.Equal(t, err.Error(), again.Error(), "stable order")
	assert.Regexp(t, `^pruneguard: prune refused \(5 violations\): boundary gate: pinned`, err.Error())
	assert.True(t, errors.Is(err, ErrSchema))
}

// The regenerability gate alone judges the messages a plan names, one by
// one, whatever their units and calls in flight.
func TestRegenGateAlone(t *testing.T) {
	c := NewContext(Config{Regen: RegenDropUnsafe})
	onlyGate(c, GateRegen)
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "a1", Calls: []Call{{ID: "c1", Tool: "x"}, {ID: "c2", Tool: "x"}, {ID: "c3", Tool: "x"}}},
		Message{ID: "r1", Tokens: 50, Answers: []CallID{"c1"}},
		Message{ID: "r2", Tokens: 50, Facts: NegativeResult, Answers: []CallID{"c2"}},
		Message{ID: "u1", Tokens: 5, Class: Reconstructible},
	)
	// c3 is pending: the boundary gate would defer; alone, regen judges.
	d, err := c.Prune(Plan{Evict: []MessageID{"r1", "u1"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"r1", "u1"}, d.Evict, "no unit grows")
	assert.Nil(t, d.Units, "the closing set is not known to be whole units")
	assert.Empty(t, d.Refused)

	// An unsafe member drops what the plan named of its unit.
	d, err = c.Prune(Plan{Evict: []MessageID{"r1", "r2", "u1"}, Stub: []MessageID{"r2"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"u1"}, d.Evict)
	assert.Empty(t, d.Stub)
	require.Len(t, d.Refused, 1, "r2 named twice, refused once as part of its unit's eviction")
	assert.Equal(t, CodeNegative, d.Refused[0].Code)
	require.NoError(t, c.Apply(d))

	// RegenRefuse: the same plan is refused.
	c = NewContext(Config{})
	onlyGate(c, GateRegen)
	mustAppend(t, c, Message{ID: "n", Facts: TransientState}, Message{ID: "m", Class: Reconstructible})
	_, err = c.Prune(Plan{Evict: []MessageID{"m", "n"}})
	var v *Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, CodeTransient, v.Code)
	assert.Equal(t, []MessageID{"n"}, v.Messages)
}

// A class worked out by one prune is not taken for the next: the result
// of a tool declared open-world after a decision found it reconstructible
// is irreducible to the next prune.
func TestPruneClassifiesAgain(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "a0", Role: RoleAssistant, Calls: []Call{{ID: "k0", Tool: "x"}}},
		Message{ID: "r0", Answers: []CallID{"k0"}, Content: []byte("42 results")},
	)
	modelReads(t, c, "read")
	d, err := c.Prune(Plan{Evict: []MessageID{"a0"}})
	require.NoError(t, err)
	require.Equal(t, []MessageID{"a0", "r0"}, d.Evict)
	require.NoError(t, c.RegisterTool(Tool{Name: "x", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(true)}}))
	_, err = c.Prune(Plan{Evict: []MessageID{"a0"}})
	var v *Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, CodeIrreducible, v.Code)
}

package pruneguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closedTools registers read-only, closed-world tools so that the
// regenerability gate lets their results go and boundary tests see only
// the boundary gate.
func closedTools(t *testing.T, c *Context, names ...string) {
	t.Helper()
	for _, n := range names {
		require.NoError(t, c.RegisterTool(Tool{Name: n, Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
	}
}

// batchContext: u1 | a1(c1,c2) r1 r2 | u2 | a2(c3) [r3 pending unless done],
// with every gate and x a read-only, closed-world tool. The user turns are
// tagged reconstructible, as a runtime does for text it can give again.
func batchContext(t *testing.T, cfg Config, pending bool) *Context {
	t.Helper()
	c := NewContext(cfg)
	closedTools(t, c, "x")
	batchTranscript(t, c, pending)
	return c
}

// boundaryAlone is the transcript of batchContext under the boundary gate
// alone. Tool x is unannotated: its results are irreducible and it
// mutates without a tombstone, so the other gates would refuse what the
// boundary tests prune.
func boundaryAlone(t *testing.T, cfg Config, pending bool) *Context {
	t.Helper()
	cfg.NoTombstones = true
	c := NewContext(cfg)
	onlyGate(c, GateBoundary)
	require.NoError(t, c.RegisterTool(Tool{Name: "x", Schema: []byte(`{"type":"object"}`)}))
	batchTranscript(t, c, pending)
	return c
}

func batchTranscript(t *testing.T, c *Context, pending bool) {
	t.Helper()
	mustAppend(t, c,
		Message{ID: "u1", Role: RoleUser, Tokens: 10, Class: Reconstructible},
		Message{ID: "a1", Role: RoleAssistant, Tokens: 20, Calls: []Call{{ID: "c1", Tool: "x"}, {ID: "c2", Tool: "x"}}},
		Message{ID: "r1", Role: RoleTool, Tokens: 100, Answers: []CallID{"c1"}},
		Message{ID: "r2", Role: RoleTool, Tokens: 200, Answers: []CallID{"c2"}},
		Message{ID: "u2", Role: RoleUser, Tokens: 10, Class: Reconstructible},
		Message{ID: "a2", Role: RoleAssistant, Tokens: 20, Calls: []Call{{ID: "c3", Tool: "x"}}},
	)
	if !pending {
		mustAppend(t, c, Message{ID: "r3", Role: RoleTool, Tokens: 50, Answers: []CallID{"c3"}})
	}
}

// The boundary gate alone lets irreducible results and a mutation tool's
// schema go: it judges units and flight, nothing else.
func TestBoundaryGateAlone(t *testing.T) {
	c := boundaryAlone(t, Config{}, false)
	d, err := c.Prune(Plan{Evict: []MessageID{"r1"}, DropSchemas: []string{"x"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"a1", "r1", "r2"}, d.Evict)
	assert.Equal(t, []UnitID{"a1"}, d.Units)
	assert.Equal(t, []string{"x"}, d.DropSchemas)
	assert.Empty(t, d.Tombstones)
	recs := d.Records()
	require.Len(t, recs, 3)
	assert.Equal(t, Irreducible, recs[1].Class, "classified for the audit log all the same")

	// With the full pipeline the same plan is refused.
	allGates(c)
	_, err = c.Prune(Plan{Evict: []MessageID{"r1"}, DropSchemas: []string{"x"}})
	assert.ErrorIs(t, err, ErrRegen)
}

func TestStrictBoundaryDefers(t *testing.T) {
	c := boundaryAlone(t, Config{}, true)
	require.NoError(t, c.Open(Message{ID: "s", Role: RoleAssistant}))
	_, err := c.Prune(Plan{Evict: []MessageID{"u1"}})
	var de *DeferredError
	require.ErrorAs(t, err, &de)
	assert.ErrorIs(t, err, ErrDeferred)
	assert.NotErrorIs(t, err, ErrBoundary, "deferral is a state of its own")
	assert.Equal(t, []CallID{"c3"}, de.Pending)
	assert.Equal(t, []MessageID{"s"}, de.Open)
	assert.Contains(t, err.Error(), "c3")

	// A schema-only plan defers too: nothing is pruned mid-flight.
	_, err = c.Prune(Plan{})
	assert.ErrorIs(t, err, ErrDeferred)
}

func TestRelaxedBoundaryPrunesClosedUnits(t *testing.T) {
	c := boundaryAlone(t, Config{Boundary: BoundaryRelaxed}, true)
	d, err := c.Prune(Plan{Evict: []MessageID{"r1", "a2"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"a1", "r1", "r2"}, d.Evict, "grown to the whole batch")
	assert.Equal(t, []UnitID{"a1"}, d.Units)
	assert.Equal(t, 320, d.Freed)
	require.Len(t, d.Refused, 1)
	assert.Equal(t, CodePending, d.Refused[0].Code)
	assert.Equal(t, []UnitID{"a2"}, d.Refused[0].Units)
	assert.Equal(t, []CallID{"c3"}, d.Refused[0].Calls)
	assert.Equal(t, []MessageID{"a2"}, d.Refused[0].Messages)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 40, c.Tokens())

	// Only in-flight units named: the relaxed reading defers too.
	_, err = c.Prune(Plan{Evict: []MessageID{"a2"}})
	var de *DeferredError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, []UnitID{"a2"}, de.Units)

	// With the strict split mode, naming an in-flight unit is a violation.
	_, err = c.Prune(Plan{Evict: []MessageID{"a2"}, Split: SplitStrict})
	var v *Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, CodePending, v.Code)
	assert.ErrorIs(t, err, ErrBoundary)
}

func TestRelaxedBoundaryHoldsOpenUnits(t *testing.T) {
	c := NewContext(Config{Boundary: BoundaryRelaxed})
	onlyGate(c, GateBoundary)
	mustAppend(t, c, Message{ID: "u1", Tokens: 1})
	// The model's answer streams: it has read u1.
	require.NoError(t, c.Open(Message{ID: "s", Role: RoleAssistant, Tokens: 1}))
	d, err := c.Prune(Plan{Evict: []MessageID{"u1", "s"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"u1"}, d.Evict)
	require.Len(t, d.Refused, 1)
	assert.Equal(t, CodeOpen, d.Refused[0].Code)
	assert.Equal(t, []MessageID{"s"}, d.Refused[0].Messages)
}

func TestSplitModes(t *testing.T) {
	plan := func(s SplitMode) Plan { return Plan{Evict: []MessageID{"u1", "r1"}, Split: s} }
	t.Run("grow", func(t *testing.T) {
		c := boundaryAlone(t, Config{}, false)
		d, err := c.Prune(plan(SplitGrow))
		require.NoError(t, err)
		assert.Equal(t, []MessageID{"u1", "a1", "r1", "r2"}, d.Evict)
		assert.Empty(t, d.Refused)
	})
	t.Run("shrink", func(t *testing.T) {
		c := boundaryAlone(t, Config{}, false)
		d, err := c.Prune(plan(SplitShrink))
		require.NoError(t, err)
		assert.Equal(t, []MessageID{"u1"}, d.Evict)
		require.Len(t, d.Refused, 1)
		assert.Equal(t, CodeSplit, d.Refused[0].Code)
		assert.Equal(t, []MessageID{"a1", "r2"}, d.Refused[0].Messages, "the members the plan left out")
	})
	t.Run("strict", func(t *testing.T) {
		c := boundaryAlone(t, Config{}, false)
		_, err := c.Prune(plan(SplitStrict))
		var pe *PruneError
		require.ErrorAs(t, err, &pe)
		require.Len(t, pe.Violations, 1)
		v := pe.Violations[0]
		assert.Equal(t, GateBoundary, v.Gate)
		assert.Equal(t, CodeSplit, v.Code)
		assert.Equal(t, []UnitID{"a1"}, v.Units)
		assert.Equal(t, []MessageID{"a1", "r2"}, v.Messages)
	})
	t.Run("strict with whole units", func(t *testing.T) {
		c := boundaryAlone(t, Config{}, false)
		d, err := c.Prune(Plan{Evict: []MessageID{"r2", "a1", "r1", "r1"}, Split: SplitStrict})
		require.NoError(t, err)
		assert.Equal(t, []MessageID{"a1", "r1", "r2"}, d.Evict, "transcript order, duplicates ignored")
	})
}

func TestPinnedUnitsStay(t *testing.T) {
	c := boundaryAlone(t, Config{}, false)
	require.NoError(t, c.Pin("r2"))
	d, err := c.Prune(Plan{Evict: []MessageID{"u1", "r1"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"u1"}, d.Evict)
	require.Len(t, d.Refused, 1)
	assert.Equal(t, CodePinned, d.Refused[0].Code)

	_, err = c.Prune(Plan{Evict: []MessageID{"a1", "r1", "r2"}, Split: SplitStrict})
	var v *Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, CodePinned, v.Code)
}

func TestStubs(t *testing.T) {
	c := boundaryAlone(t, Config{StubText: "[gone]", StubTokens: 2}, false)
	_, err := c.Prune(Plan{Stub: []MessageID{"a1"}})
	assert.ErrorIs(t, err, ErrNotResult)
	_, err = c.Prune(Plan{Stub: []MessageID{"nope"}})
	assert.ErrorIs(t, err, ErrUnknownMessage)

	d, err := c.Prune(Plan{Stub: []MessageID{"r2", "r1", "r2"}, Evict: []MessageID{"u2"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"r1", "r2"}, d.Stub)
	assert.Equal(t, []MessageID{"u2"}, d.Evict)
	assert.Equal(t, 10+98+198, d.Freed)
	require.NoError(t, c.Apply(d))
	m, _ := c.Message("r1")
	assert.Equal(t, "[gone]", string(m.Content))
	assert.Equal(t, 2, m.Tokens)
	u, _ := c.UnitOf("r1")
	assert.Equal(t, []MessageID{"a1", "r1", "r2"}, u.Messages, "stubbing keeps the pair")
	e := c.Snapshot()[2]
	assert.True(t, e.Stubbed)

	// A stub of a message whose unit is evicted is dropped.
	d, err = c.Prune(Plan{Stub: []MessageID{"r1"}, Evict: []MessageID{"a1"}})
	require.NoError(t, err)
	assert.Empty(t, d.Stub)
}

func TestStubInFlightIsRefused(t *testing.T) {
	c := NewContext(Config{Boundary: BoundaryRelaxed})
	onlyGate(c, GateBoundary)
	mustAppend(t, c,
		Message{ID: "a1", Calls: []Call{{ID: "c1", Tool: "x"}, {ID: "c2", Tool: "x"}}},
		Message{ID: "r1", Tokens: 50, Answers: []CallID{"c1"}},
	)
	_, err := c.Prune(Plan{Stub: []MessageID{"r1"}})
	var de *DeferredError
	require.ErrorAs(t, err, &de)
	_, err = c.Prune(Plan{Stub: []MessageID{"r1"}, Split: SplitStrict})
	var v *Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, CodePending, v.Code)
	assert.Equal(t, []MessageID{"r1"}, v.Messages)
}

func TestRefusalsAreSorted(t *testing.T) {
	c := boundaryAlone(t, Config{Boundary: BoundaryRelaxed}, true)
	require.NoError(t, c.Pin("u1"))
	d, err := c.Prune(Plan{Evict: []MessageID{"a2", "u2", "u1"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"u2"}, d.Evict)
	require.Len(t, d.Refused, 2)
	assert.Equal(t, []UnitID{"u1"}, d.Refused[0].Units, "transcript order, not plan order")
	assert.Equal(t, []UnitID{"a2"}, d.Refused[1].Units)
}

package pruneguard_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// The evict-or-tombstone gate per tool and per turn: arguments that come
// to stand behind no schema without a plan asking for it are repaired by
// the next decision, or every Prune refuses until they are.

var (
	incidentV1  = json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"string"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`)
	incidentV2  = json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`)
	closedWorld = pg.Annotations{ReadOnlyHint: pg.Bool(true), OpenWorldHint: pg.Bool(false)}
)

func appendAll(t *testing.T, c *pg.Context, ms ...pg.Message) {
	t.Helper()
	for _, m := range ms {
		require.NoError(t, c.Append(m))
	}
}

func prune(t *testing.T, c *pg.Context, p pg.Plan) *pg.Decision {
	t.Helper()
	d, err := c.Prune(p)
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	return d
}

// withdrawnIncident: update_incident (a mutation tool) registered and
// withdrawn while no call to it was in the prompt; a read-only lookup
// called once.
func withdrawnIncident(t *testing.T, cfg pg.Config) *pg.Context {
	t.Helper()
	c := pg.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup", Annotations: closedWorld}))
	appendAll(t, c, pg.Message{ID: "u1", Role: pg.RoleUser, Tokens: 10})
	modelRead(t, c, "seen")
	d := prune(t, c, pg.Plan{DropSchemas: []string{"update_incident"}})
	require.Empty(t, d.Tombstones, "no arguments: the schema goes freely")
	return c
}

// ghostCall appends a call to update_incident, made while its schema is
// withdrawn, and its result, which the model then reads. The runtime
// keeps the incident in its tracker: the call and its result can be had
// again.
func ghostCall(t *testing.T, c *pg.Context, n string) {
	t.Helper()
	appendAll(t, c,
		pg.Message{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Tokens: 20, Class: pg.Reconstructible, Calls: []pg.Call{{ID: pg.CallID("k" + n), Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-1"}`)}}},
		pg.Message{ID: pg.MessageID("r" + n), Role: pg.RoleTool, Tokens: 5, Answers: []pg.CallID{pg.CallID("k" + n)}, Class: pg.Reconstructible},
	)
	modelRead(t, c, pg.MessageID("t"+n))
}

func TestGhostCallIsRepairedByTheNextDecision(t *testing.T) {
	c := withdrawnIncident(t, pg.Config{})
	assert.Empty(t, c.Unsound())
	ghostCall(t, c, "1")
	assert.Equal(t, []string{"update_incident"}, c.Unsound())
	st, _ := c.Tool("update_incident")
	assert.True(t, st.Ghost)
	assert.Equal(t, 1, st.GhostCalls)

	// Any decision repairs it, even one of an empty plan.
	d, err := c.Prune(pg.Plan{})
	require.NoError(t, err)
	require.Len(t, d.Tombstones, 1)
	assert.Equal(t, "update_incident", d.Tombstones[0].Tool)
	assert.True(t, d.Tombstones[0].Mutating)
	assert.Contains(t, d.Tombstones[0].Text, "update_incident")
	assert.False(t, d.Empty(), "a decision that adds a tombstone changes the prompt")
	assert.Empty(t, d.DropSchemas)
	require.NoError(t, c.Apply(d))

	st, _ = c.Tool("update_incident")
	assert.True(t, st.Tombstoned)
	assert.False(t, st.Ghost)
	assert.Empty(t, c.Unsound())
	d, err = c.Prune(pg.Plan{})
	require.NoError(t, err)
	assert.True(t, d.Empty(), "repaired once")

	// The tombstone goes with the last arguments.
	d = prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}})
	assert.Equal(t, []string{"update_incident"}, d.Retire)
	st, _ = c.Tool("update_incident")
	assert.False(t, st.Tombstoned)
}

func TestGhostCallOfAMutationToolWithoutTombstonesRefusesEveryPrune(t *testing.T) {
	// Text may go: the plans evict u1.
	for _, cfg := range []pg.Config{{NoTombstones: true, TextClass: pg.Reconstructible}, {TextClass: pg.Reconstructible}} {
		c := pg.NewContext(cfg)
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1, NoTombstone: true}))
		appendAll(t, c, pg.Message{ID: "u1", Tokens: 10}, pg.Message{ID: "u2", Tokens: 10})
		prune(t, c, pg.Plan{DropSchemas: []string{"update_incident"}})
		ghostCall(t, c, "1")
		for _, p := range []pg.Plan{{}, {Evict: []pg.MessageID{"u1"}}} {
			_, err := c.Prune(p)
			require.ErrorIs(t, err, pg.ErrSchema)
			var v *pg.Violation
			require.ErrorAs(t, err, &v)
			assert.Equal(t, pg.GateSchema, v.Gate)
			assert.Equal(t, pg.CodeGhostTool, v.Code)
			assert.Equal(t, []string{"update_incident"}, v.Tools)
			assert.Equal(t, []pg.CallID{"k1"}, v.Calls)
		}
		// A plan that takes the ghost arguments repairs it, with no
		// tombstone.
		d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"a1"}})
		require.NoError(t, err)
		assert.Empty(t, d.Tombstones)
		// So does giving the schema back.
		_, err = c.RequestTool("update_incident")
		require.NoError(t, err)
		assert.Empty(t, c.Unsound())
		d, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"u1"}})
		require.NoError(t, err)
		assert.Equal(t, []pg.MessageID{"u1"}, d.Evict)
	}
}

func TestReadOnlyGhostWithoutTombstonesFailsClosed(t *testing.T) {
	c := pg.NewContext(pg.Config{NoTombstones: true, TextClass: pg.Reconstructible})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup", Schema: json.RawMessage(`{"type":"object"}`), Annotations: closedWorld}))
	appendAll(t, c, pg.Message{ID: "u1", Tokens: 10})
	prune(t, c, pg.Plan{DropSchemas: []string{"lookup"}})
	appendAll(t, c,
		pg.Message{ID: "a1", Calls: []pg.Call{{ID: "k1", Tool: "lookup", Args: json.RawMessage(`{}`)}}},
		pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}},
	)
	assert.Equal(t, []string{"lookup"}, c.Unsound())
	d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"u1"}})
	require.NoError(t, err, "a read-only tool fails closed: neither tombstone nor refusal")
	assert.Empty(t, d.Tombstones)
}

func TestGhostCallAfterALossyCompression(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	appendAll(t, c, pg.Message{ID: "u1", Tokens: 10})
	d := prune(t, c, pg.Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": json.RawMessage(`{"type":"object"}`)}})
	require.Len(t, d.Lossy, 1)
	require.Empty(t, d.Tombstones, "no arguments yet")
	st, _ := c.Tool("update_incident")
	require.True(t, st.Resident)

	ghostCall(t, c, "1")
	st, _ = c.Tool("update_incident")
	assert.Equal(t, 1, st.GhostCalls, "a schema compressed with losses is not shown")
	assert.True(t, st.Ghost)
	d = prune(t, c, pg.Plan{})
	require.Len(t, d.Tombstones, 1)

	// A lossless compression is no ghost.
	c = pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	appendAll(t, c, pg.Message{ID: "u1", Tokens: 10})
	prune(t, c, pg.Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": incidentV1}})
	ghostCall(t, c, "1")
	st, _ = c.Tool("update_incident")
	assert.Equal(t, 0, st.GhostCalls)
	assert.False(t, st.Ghost)
}

func TestDecisionBeforeAGhostCallGoesStale(t *testing.T) {
	c := withdrawnIncident(t, pg.Config{Boundary: pg.BoundaryRelaxed, TextClass: pg.Reconstructible})
	d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"u1"}})
	require.NoError(t, err)
	ghostCall(t, c, "1")
	require.ErrorIs(t, c.Apply(d), pg.ErrStaleDecision, "the decision did not see the ghost")
	_, ok := c.Message("u1")
	assert.True(t, ok)

	// And one made while the ghost's arguments were being evicted, when a
	// new call to it arrives before Apply.
	d, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"a1"}})
	require.NoError(t, err)
	require.Empty(t, d.Tombstones, "its arguments leave")
	ghostCall(t, c, "2")
	require.ErrorIs(t, c.Apply(d), pg.ErrStaleDecision)
}

// Seed 001's budget arbitration order: the schema is decided on the
// arguments that really leave, after the other gates narrowed the
// closing set, in the same decision.
func TestArgumentEvictionCascadesToTheSchemaDecision(t *testing.T) {
	setup := func(cfg pg.Config) *pg.Context {
		c := pg.NewContext(cfg)
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
		appendAll(t, c,
			pg.Message{ID: "a1", Class: pg.Reconstructible, Calls: []pg.Call{{ID: "k1", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2"}`)}}},
			pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Class: pg.Reconstructible},
			pg.Message{ID: "a2", Calls: []pg.Call{{ID: "k2", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-3"}`)}}},
			pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}, Facts: pg.NegativeResult},
		)
		return c
	}
	plan := pg.Plan{Evict: []pg.MessageID{"a1", "a2"}, DropSchemas: []string{"update_incident"}}

	// Every argument leaves: the schema goes with them, no tombstone.
	c := setup(pg.Config{Regen: pg.RegenDropUnsafe})
	d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"a1"}, DropSchemas: []string{"update_incident"}})
	require.NoError(t, err)
	assert.Len(t, d.Tombstones, 1, "a2's arguments stay")

	// The regenerability gate holds a2's unit back: its arguments stay,
	// so the drop needs a tombstone, in the same decision.
	d, err = c.Prune(plan)
	require.NoError(t, err)
	assert.Equal(t, []pg.MessageID{"a1", "r1"}, d.Evict)
	require.Len(t, d.Tombstones, 1)
	assert.Equal(t, "update_incident", d.Tombstones[0].Tool)

	// Without tombstones the drop is refused instead.
	c = setup(pg.Config{Regen: pg.RegenDropUnsafe, NoTombstones: true})
	_, err = c.Prune(plan)
	require.ErrorIs(t, err, pg.ErrSchema)

	// Once every argument has left, a tombstone standing for the tool is
	// retired in the decision that took the last of them.
	c2 := pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(pg.Pointer) bool { return true })})
	require.NoError(t, c2.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	appendAll(t, c2,
		pg.Message{ID: "a1", Calls: []pg.Call{{ID: "k1", Tool: "update_incident"}}, Pointer: pg.Pointer{Store: "s", Key: "a1"}},
		pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Pointer: pg.Pointer{Store: "s", Key: "r1"}},
	)
	modelRead(t, c2, "seen")
	prune(t, c2, pg.Plan{DropSchemas: []string{"update_incident"}})
	d = prune(t, c2, pg.Plan{Evict: []pg.MessageID{"r1"}})
	assert.Equal(t, []string{"update_incident"}, d.Retire)
}

func TestUnsoundDoesNotAllocateWhenEmpty(t *testing.T) {
	c := withdrawnIncident(t, pg.Config{})
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = c.Unsound() }))
}

// A message that requires a tool's schema (a tool_reference block) keeps
// the schema in the prompt: a provider refuses the message without it.
func TestRequiredSchemaStays(t *testing.T) {
	setup := func(cfg pg.Config) *pg.Context {
		c := pg.NewContext(cfg)
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "tool_search", Annotations: closedWorld}))
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
		appendAll(t, c,
			pg.Message{ID: "a1", Calls: []pg.Call{{ID: "s1", Tool: "tool_search", Args: json.RawMessage(`{"q":"incident"}`)}}},
			pg.Message{ID: "r1", Answers: []pg.CallID{"s1"}, Content: []byte(`[{"type":"tool_reference","tool_name":"update_incident"}]`),
				Requires: []string{"update_incident", "update_incident"}},
			pg.Message{ID: "u1", Tokens: 10},
		)
		modelRead(t, c, "seen")
		return c
	}
	for _, cfg := range []pg.Config{{}, {NoTombstones: true}} {
		c := setup(cfg)
		m, _ := c.Message("r1")
		assert.Equal(t, []string{"update_incident"}, m.Requires, "a name given twice counts once")
		st, _ := c.Tool("update_incident")
		assert.Equal(t, 1, st.Required)

		for _, p := range []pg.Plan{
			{DropSchemas: []string{"update_incident"}},
			{CompressSchemas: map[string]json.RawMessage{"update_incident": json.RawMessage(`{"type":"object"}`)}},
			{Evict: []pg.MessageID{"u1"}, DropSchemas: []string{"update_incident"}},
		} {
			_, err := c.Prune(p)
			require.ErrorIs(t, err, pg.ErrSchema, "tombstones or not")
			var v *pg.Violation
			require.ErrorAs(t, err, &v)
			assert.Equal(t, pg.CodeRequiredTool, v.Code)
			assert.Equal(t, []string{"update_incident"}, v.Tools)
			assert.Equal(t, []pg.MessageID{"r1"}, v.Messages)
			assert.Contains(t, err.Error(), "required-tool")
		}
		// A compression that keeps every constraint is fine.
		_, err := c.Prune(pg.Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": incidentV1}})
		require.NoError(t, err)
		// Evicting the requiring message frees the schema in the same
		// decision.
		d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"r1"}, DropSchemas: []string{"update_incident"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"update_incident"}, d.DropSchemas)
		assert.Empty(t, d.Tombstones, "no arguments of update_incident")
	}

	// Stubbing it too: the stub replaces the content and its references.
	c := setup(pg.Config{})
	d := prune(t, c, pg.Plan{Stub: []pg.MessageID{"r1"}, DropSchemas: []string{"update_incident"}})
	assert.Equal(t, []pg.MessageID{"r1"}, d.Stub)
	m, _ := c.Message("r1")
	assert.Empty(t, m.Requires)
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 0, st.Required)
	assert.False(t, st.Resident)
}

func TestRequirementOfAWithdrawnSchemaRefusesEveryPrune(t *testing.T) {
	c := withdrawnIncident(t, pg.Config{Boundary: pg.BoundaryRelaxed, TextClass: pg.Reconstructible})
	d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"u1"}})
	require.NoError(t, err)
	appendAll(t, c, pg.Message{ID: "r9", Role: pg.RoleTool, Requires: []string{"update_incident"}}, pg.Message{ID: "u2", Tokens: 3})
	modelRead(t, c, "seen2")
	assert.ErrorIs(t, c.Apply(d), pg.ErrStaleDecision)
	assert.Equal(t, []string{"update_incident"}, c.Unsound())
	st, _ := c.Tool("update_incident")
	assert.True(t, st.Ghost)

	_, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"u2"}})
	var v *pg.Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, pg.CodeRequiredTool, v.Code)
	assert.Equal(t, []pg.MessageID{"r9"}, v.Messages)

	// Evicting it is a repair; so is giving the schema back.
	_, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"r9"}})
	require.NoError(t, err)
	_, err = c.RequestTool("update_incident")
	require.NoError(t, err)
	assert.Empty(t, c.Unsound())
	_, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"u2"}})
	require.NoError(t, err)
}

func TestRequiresAndIsErrorInput(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	err := c.Append(pg.Message{ID: "m1", Requires: []string{"a", ""}})
	require.ErrorIs(t, err, pg.ErrEmptyID)
	require.ErrorIs(t, err, pg.ErrInvalidInput)
	assert.Zero(t, c.Len())
	assert.Empty(t, c.Tools(), "nothing changed")

	require.NoError(t, c.Open(pg.Message{ID: "m2", IsError: true, Requires: []string{"search"}}))
	require.NoError(t, c.Close("m2"))
	m, _ := c.Message("m2")
	assert.True(t, m.IsError)
	assert.Equal(t, []string{"search"}, m.Requires)
	st, ok := c.Tool("search")
	require.True(t, ok, "a tool named only by a requirement is known, as one named only by a call")
	assert.False(t, st.Registered)
	assert.Equal(t, 1, st.Required)
	assert.True(t, errors.Is(c.Append(pg.Message{ID: "m3", Requires: []string{""}}), pg.ErrEmptyID))
}

// The set of unsound tools stays true as tools join and leave it in any
// order.
func TestUnsoundToolsLeaveInAnyOrder(t *testing.T) {
	names := []string{"t0", "t1", "t2", "t3"}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}} {
		c := pg.NewContext(pg.Config{NoTombstones: true})
		appendAll(t, c, pg.Message{ID: "u", Tokens: 1})
		for _, n := range names {
			require.NoError(t, c.RegisterTool(pg.Tool{Name: n, Annotations: closedWorld}))
			prune(t, c, pg.Plan{DropSchemas: []string{n}})
			appendAll(t, c,
				pg.Message{ID: pg.MessageID("a" + n), Calls: []pg.Call{call("k"+n, n, `{}`)}},
				pg.Message{ID: pg.MessageID("r" + n), Answers: []pg.CallID{pg.CallID("k" + n)}},
			)
		}
		want := append([]string(nil), names...)
		assert.Equal(t, want, c.Unsound())
		for _, i := range order {
			_, err := c.RequestTool(names[i])
			require.NoError(t, err)
			for j, n := range want {
				if n == names[i] {
					want = append(want[:j:j], want[j+1:]...)
					break
				}
			}
			if len(want) == 0 {
				want = nil
			}
			assert.Equal(t, want, c.Unsound(), "order %v", order)
		}
	}
}

// Registering a tool again under the same version keeps its compression,
// which may lose constraints of the new schema or not.
func TestReRegistrationWeighsTheCompressionAgain(t *testing.T) {
	base := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string"}},"required":["severity"]}`)
	annotated := json.RawMessage(`{"type":"object","description":"set fields","properties":{"severity":{"type":"string"}},"required":["severity"]}`)
	stricter := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string"},"notify":{"type":"boolean"}},"required":["severity","notify"]}`)
	setup := func() *pg.Context {
		c := pg.NewContext(pg.Config{})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Version: "v1", Schema: base}))
		appendAll(t, c,
			pg.Message{ID: "a1", Calls: []pg.Call{call("k1", "update_incident", `{"severity":"SEV-2"}`)}},
			pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}},
		)
		d := prune(t, c, pg.Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": base}})
		require.Empty(t, d.Tombstones)
		return c
	}
	c := setup()
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Version: "v1", Schema: annotated}))
	st, _ := c.Tool("update_incident")
	require.NotNil(t, st.Compressed, "the same version: the compression stays")
	assert.False(t, st.Ghost, "it keeps every constraint of the new schema")

	c = setup()
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Version: "v1", Schema: stricter}))
	st, _ = c.Tool("update_incident")
	require.NotNil(t, st.Compressed)
	assert.True(t, st.Ghost, "it drops notify, which the new schema requires")
	d := prune(t, c, pg.Plan{})
	require.Len(t, d.Tombstones, 1)
}

// A repairing tombstone lists the calls made under an older schema, as a
// plan's does.
func TestRepairingTombstoneListsStaleCalls(t *testing.T) {
	c := withdrawnIncident(t, pg.Config{})
	ghostCall(t, c, "1")
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV2}))
	ghostCall(t, c, "2")
	d := prune(t, c, pg.Plan{})
	require.Len(t, d.Tombstones, 1)
	assert.Equal(t, []pg.CallID{"k1"}, d.Tombstones[0].Stale)

	c = withdrawnIncident(t, pg.Config{})
	ghostCall(t, c, "1")
	d = prune(t, c, pg.Plan{})
	require.Len(t, d.Tombstones, 1)
	assert.Empty(t, d.Tombstones[0].Stale, "no migration")
}

// A server call's arguments stand behind no schema: evicting one frees no
// argument of its tool, and the calls the model made to it still need
// the schema or a tombstone.
func TestServerCallLeavingIsNoArgumentLeaving(t *testing.T) {
	c := pg.NewContext(pg.Config{TextClass: pg.Reconstructible})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "search", Schema: incidentV1, Annotations: closedWorld}))
	appendAll(t, c,
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Content: []byte("searched"), Calls: []pg.Call{{ID: "s1", Tool: "search", Args: json.RawMessage(`{"q":"a"}`), Server: true}}},
		pg.Message{ID: "a2", Role: pg.RoleAssistant, Calls: []pg.Call{call("k2", "search", `{"q":"b"}`)}},
		pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}},
	)
	st, _ := c.Tool("search")
	require.Equal(t, 1, st.Args)
	d := prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}, DropSchemas: []string{"search"}})
	assert.Equal(t, []pg.MessageID{"a1"}, d.Evict)
	require.Len(t, d.Tombstones, 1, "k2's arguments stay")
	assert.Empty(t, d.Retire)
	assert.Empty(t, c.Unsound())

	// Nor does it retire a tombstone.
	appendAll(t, c, pg.Message{ID: "a3", Content: []byte("searched"), Calls: []pg.Call{{ID: "s3", Tool: "search", Args: json.RawMessage(`{"q":"c"}`), Server: true}}})
	d = prune(t, c, pg.Plan{Evict: []pg.MessageID{"a3"}})
	assert.Empty(t, d.Retire)
	st, _ = c.Tool("search")
	assert.True(t, st.Tombstoned)
}

// A refusal for the state of a tool (a mutating tool's call standing
// behind a withdrawn schema that may not be tombstoned) holds up every
// plan. A guard does not burn its rounds on it: it tries once with the
// units of the calls behind it, which repairs the tool when they may go,
// and otherwise stops, reporting the refusal.
func TestGuardMeetsAStandingRefusal(t *testing.T) {
	setup := func(cfg pg.Config) *pg.Context {
		c := pg.NewContext(cfg)
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1, NoTombstone: true}))
		appendAll(t, c, pg.Message{ID: "u1", Tokens: 100}, pg.Message{ID: "u2", Tokens: 100})
		prune(t, c, pg.Plan{DropSchemas: []string{"update_incident"}})
		ghostCall(t, c, "1")
		appendAll(t, c, pg.Message{ID: "u3", Tokens: 100})
		require.Equal(t, []string{"update_incident"}, c.Unsound())
		return c
	}
	// The ghost call may go: the guard takes it with its plan, the tool is
	// sound again, and the check reaches the budget.
	c := setup(pg.Config{TextClass: pg.Reconstructible})
	res, err := pg.Guard{Budget: 150}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pg.Pruned, res.Outcome)
	_, held := c.Message("a1")
	assert.False(t, held, "the call behind the refusal went")
	assert.Empty(t, c.Unsound())
	assert.LessOrEqual(t, c.Tokens(), 150)

	// The ghost call is pinned: nothing passes, and the check stops at
	// once with the refusal as its reason.
	c = setup(pg.Config{TextClass: pg.Reconstructible})
	require.NoError(t, c.Pin("a1"))
	screened := 0
	res, err = pg.Guard{Budget: 150, Screen: pg.ScreenFunc(func(*pg.Decision) []*pg.Violation { screened++; return nil })}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pg.Deferred, res.Outcome)
	assert.ErrorIs(t, res.Reason, pg.ErrSchema)
	assert.Zero(t, screened, "no decision passed the gates")
	assert.Empty(t, res.Decisions)
	assert.Equal(t, 6, c.Len(), "nothing went: u1, u2, a1, r1, the model's answer and u3 are held")
}

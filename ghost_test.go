package pruneguard_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// The ghost-tool triad of seed 001, as the Context sees it.

func call(id, tool, args string) pg.Call {
	return pg.Call{ID: pg.CallID(id), Tool: tool, Args: json.RawMessage(args)}
}

// incidentSession plays seed 001 up to turn 8: update_incident called at
// turn 2, search_logs at turns 3 to 6, update_incident's schema withdrawn
// behind a tombstone, then migrated (assignee_id becomes an object).
func incidentSession(t *testing.T) *pg.Context {
	t.Helper()
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "create_incident", Schema: incidentV1}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "search_logs", Annotations: closedWorld}))
	appendAll(t, c,
		pg.Message{ID: "u1", Role: pg.RoleUser, Tokens: 40},
		pg.Message{ID: "a2", Role: pg.RoleAssistant, Calls: []pg.Call{call("k2", "update_incident", `{"severity":"SEV-2","assignee_id":"u-17","notify":true}`)}},
		pg.Message{ID: "r2", Role: pg.RoleTool, Answers: []pg.CallID{"k2"}, Content: []byte("ok")},
	)
	for _, n := range []string{"3", "4", "5", "6"} {
		appendAll(t, c,
			pg.Message{ID: pg.MessageID("a" + n), Calls: []pg.Call{call("k"+n, "search_logs", `{"q":"sev"}`)}},
			pg.Message{ID: pg.MessageID("r" + n), Answers: []pg.CallID{pg.CallID("k" + n)}},
		)
	}
	d := prune(t, c, pg.Plan{DropSchemas: []string{"update_incident"}})
	require.Len(t, d.Tombstones, 1)
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV2}))
	return c
}

func TestGhostTriad(t *testing.T) {
	c := incidentSession(t)
	assert.Empty(t, c.Ghosts())

	// Turn 9: "bump the incident to SEV-1 and re-notify", rebuilt from
	// turn 2's arguments without the schema.
	appendAll(t, c, pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", `{"severity":"SEV-1","assignee_id":"u-17"}`)}})
	gs := c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, pg.GhostEvidence{Tool: "update_incident", Call: "k9", Copied: "k2", Missing: []string{"notify"}, Stale: []string{"assignee_id"}}, gs[0])
	assert.Equal(t, 1, gs[0].Legs())

	// Another rebuilt call counts, but the evidence keeps the first.
	appendAll(t, c, pg.Message{ID: "a9b", Calls: []pg.Call{call("k9b", "update_incident", `{"severity":"SEV-1"}`)}},
		pg.Message{ID: "r9b", Answers: []pg.CallID{"k9b"}})
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 2, st.GhostCopies)
	assert.Equal(t, pg.CallID("k9"), c.Ghosts()[0].Call)

	appendAll(t, c, pg.Message{ID: "r9", Role: pg.RoleTool, Answers: []pg.CallID{"k9"}, IsError: true,
		Content: []byte(`validation failed: "notify" is required; assignee_id: expected object, got string`)})
	gs = c.Ghosts()
	assert.Equal(t, pg.CallID("k9"), gs[0].Rejected)
	assert.Equal(t, []string{"assignee_id", "notify"}, gs[0].Fields)
	assert.False(t, gs[0].Triad())

	// The workaround: a duplicate incident.
	appendAll(t, c, pg.Message{ID: "a10", Calls: []pg.Call{call("k10", "create_incident", `{"severity":"SEV-1"}`)}})
	gs = c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, "create_incident", gs[0].Sibling)
	assert.Equal(t, pg.CallID("k10"), gs[0].SiblingCall)
	assert.True(t, gs[0].Triad())
	assert.False(t, gs[0].Reexpanded)

	st, _ = c.Tool("update_incident")
	assert.Equal(t, 2, st.GhostCopies)
	assert.Equal(t, 1, st.GhostRejections)
	assert.Equal(t, 1, st.GhostDetours)
	assert.Equal(t, 1, st.GhostTriads)
	assert.Equal(t, 2, st.GhostCalls)

	// The triad closed the episode: another sibling call is no detour.
	appendAll(t, c, pg.Message{ID: "r10", Answers: []pg.CallID{"k10"}}, pg.Message{ID: "a11", Calls: []pg.Call{call("k11", "create_incident", `{}`)}})
	st, _ = c.Tool("update_incident")
	assert.Equal(t, 1, st.GhostDetours)

	// Ghosts returns copies.
	gs[0].Missing[0] = "x"
	assert.Equal(t, []string{"notify"}, c.Ghosts()[0].Missing)
}

func TestGhostEpisodeEndsWhenTheModelAsksForTheSchema(t *testing.T) {
	c := incidentSession(t)
	appendAll(t, c, pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", `{"severity":"SEV-1"}`)}})
	was, err := c.RequestTool("update_incident")
	require.NoError(t, err)
	assert.True(t, was)
	appendAll(t, c, pg.Message{ID: "a10", Calls: []pg.Call{call("k10", "create_incident", `{}`)}})
	gs := c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, pg.GhostEvidence{Tool: "update_incident", Call: "k9", Copied: "k2", Missing: []string{"assignee_id", "notify"}, Reexpanded: true}, gs[0])
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 1, st.Reexpansions)
	assert.Equal(t, 0, st.GhostDetours)

	// With the schema back, a rebuilt call is no ghost.
	appendAll(t, c, pg.Message{ID: "r9", Answers: []pg.CallID{"k9"}}, pg.Message{ID: "r10", Answers: []pg.CallID{"k10"}},
		pg.Message{ID: "a11", Calls: []pg.Call{call("k11", "update_incident", `{"severity":"SEV-1"}`)}})
	assert.Len(t, c.Ghosts(), 1)
}

func TestGhostFirstLegNeedsACopy(t *testing.T) {
	tests := []struct {
		name, args string
		leg        bool
	}{
		{"strict subset", `{"severity":"SEV-1","notify":true}`, true},
		{"keys in another order", `{"notify":false,"severity":"SEV-1"}`, true},
		{"a key the earlier call lacks", `{"severity":"SEV-1","priority":1}`, false},
		{"the same keys, current kinds", `{"severity":"SEV-1","assignee_id":{"id":"u-17"},"notify":true}`, false},
		{"the same keys, a stale kind", `{"severity":"SEV-1","assignee_id":"u-18","notify":true}`, true},
		{"no keys", `{}`, false},
		{"not an object", `["SEV-1"]`, false},
		{"not JSON", `severity=SEV-1`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := incidentSession(t)
			appendAll(t, c, pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", tt.args)}})
			st, _ := c.Tool("update_incident")
			assert.Equal(t, 1, st.GhostCalls)
			if tt.leg {
				assert.Len(t, c.Ghosts(), 1)
				assert.Equal(t, 1, st.GhostCopies)
			} else {
				assert.Empty(t, c.Ghosts())
				assert.Equal(t, 0, st.GhostCopies)
			}
		})
	}
}

func TestGhostFirstLegNeedsTheSchemaMissingAndTheCopyInThePrompt(t *testing.T) {
	// The schema is shown: a subset is an ordinary call. The calls and
	// their results are tagged reconstructible: they leave below.
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	appendAll(t, c,
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Class: pg.Reconstructible, Calls: []pg.Call{call("k1", "update_incident", `{"severity":"SEV-2","notify":true}`)}},
		pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Class: pg.Reconstructible},
		pg.Message{ID: "a2", Role: pg.RoleAssistant, Class: pg.Reconstructible, Calls: []pg.Call{call("k2", "update_incident", `{"severity":"SEV-1"}`)}},
		pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}, Class: pg.Reconstructible},
		pg.Message{ID: "t2", Role: pg.RoleAssistant, Content: []byte("updated")},
	)
	assert.Empty(t, c.Ghosts())

	// Without a migration, a value of a kind the schema refuses is no
	// stale copy: the earlier call was made under the same schema.
	c2 := pg.NewContext(pg.Config{})
	require.NoError(t, c2.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	appendAll(t, c2,
		pg.Message{ID: "a1", Calls: []pg.Call{call("k1", "update_incident", `{"severity":"SEV-2","assignee_id":17}`)}},
		pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Class: pg.Reconstructible},
	)
	prune(t, c2, pg.Plan{DropSchemas: []string{"update_incident"}})
	appendAll(t, c2, pg.Message{ID: "a2", Calls: []pg.Call{call("k2", "update_incident", `{"severity":"SEV-1","assignee_id":18}`)}})
	assert.Empty(t, c2.Ghosts())

	// The earlier call left with the schema: nothing to copy from.
	prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1", "a2"}, DropSchemas: []string{"update_incident"}})
	appendAll(t, c, pg.Message{ID: "a3", Calls: []pg.Call{call("k3", "update_incident", `{"severity":"SEV-1"}`)}})
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 1, st.GhostCalls)
	assert.Empty(t, c.Ghosts())
}

func TestGhostSecondLeg(t *testing.T) {
	c := incidentSession(t)
	appendAll(t, c,
		pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", `{"severity":"SEV-1","urgent":true}`), call("k9b", "search_logs", `{}`)}},
		// Not reported as an error: no leg.
		pg.Message{ID: "r9", Answers: []pg.CallID{"k9"}, Content: []byte("notify is required")},
		// An error for a call whose schema was shown: no leg.
		pg.Message{ID: "r9b", Answers: []pg.CallID{"k9b"}, IsError: true, Content: []byte("notify is required")},
	)
	assert.Empty(t, c.Ghosts(), "k9 copies nothing: it has a key k2 lacks")

	appendAll(t, c,
		pg.Message{ID: "a10", Calls: []pg.Call{call("k10", "update_incident", `{"severity":"SEV-1","urgent":true}`)}},
		// An error naming no field of the schema (notify_all is not notify).
		pg.Message{ID: "r10", Answers: []pg.CallID{"k10"}, IsError: true, Content: []byte("notify_all: unknown; 500 internal error")},
		pg.Message{ID: "a11", Calls: []pg.Call{call("k11", "update_incident", `{"severity":"SEV-1","urgent":true}`)}},
	)
	assert.Empty(t, c.Ghosts())

	// A streamed error is read when it closes.
	require.NoError(t, c.Open(pg.Message{ID: "r11", Answers: []pg.CallID{"k11"}, IsError: true}))
	require.NoError(t, c.Write("r11", []byte("field severity: "), 0))
	assert.Empty(t, c.Ghosts())
	require.NoError(t, c.Write("r11", []byte("invalid"), 0))
	require.NoError(t, c.Close("r11"))
	gs := c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, pg.GhostEvidence{Tool: "update_incident", Rejected: "k11", Fields: []string{"severity"}}, gs[0])
	assert.Equal(t, 1, gs[0].Legs())
}

func TestReportValidationError(t *testing.T) {
	c := incidentSession(t)
	err := c.ReportValidationError("nope", "notify")
	require.ErrorIs(t, err, pg.ErrUnknownCall)
	require.ErrorIs(t, err, pg.ErrInvalidInput)

	// A call whose schema was shown: nothing.
	require.NoError(t, c.ReportValidationError("k2", "notify"))
	assert.Empty(t, c.Ghosts())

	appendAll(t, c, pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", `{"severity":"SEV-1","urgent":true}`)}})
	require.NoError(t, c.ReportValidationError("k9"), "no field: nothing")
	assert.Empty(t, c.Ghosts())
	require.NoError(t, c.ReportValidationError("k9", "notify", "", "assignee_id", "notify"))
	gs := c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, []string{"assignee_id", "notify"}, gs[0].Fields)
	assert.Equal(t, pg.CallID("k9"), gs[0].Rejected)
}

func TestGhostThirdLeg(t *testing.T) {
	c := incidentSession(t)
	// A sibling call with no open episode is no detour.
	appendAll(t, c, pg.Message{ID: "a8", Calls: []pg.Call{call("k8", "create_incident", `{}`)}}, pg.Message{ID: "r8", Answers: []pg.CallID{"k8"}})
	// Nor is one in the same message as the ghost call, nor a call to a
	// tool of another stem.
	appendAll(t, c,
		pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", `{"severity":"SEV-1"}`), call("k9b", "create_incident", `{}`)}},
		pg.Message{ID: "r9", Answers: []pg.CallID{"k9", "k9b"}},
		pg.Message{ID: "a10", Calls: []pg.Call{call("k10", "search_logs", `{}`)}},
		pg.Message{ID: "r10", Answers: []pg.CallID{"k10"}},
	)
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 0, st.GhostDetours)
	appendAll(t, c, pg.Message{ID: "a11", Calls: []pg.Call{call("k11", "create_incident", `{}`)}})
	gs := c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, pg.GhostEvidence{Tool: "update_incident", Call: "k9", Copied: "k2", Missing: []string{"assignee_id", "notify"},
		Sibling: "create_incident", SiblingCall: "k11"}, gs[0])
	assert.Equal(t, 2, gs[0].Legs())
}

func TestSiblingsByFamily(t *testing.T) {
	c := incidentSession(t)
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV2, Family: "tickets"}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "open_ticket", Family: "tickets"}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "create_incident", Schema: incidentV1, Family: "incidents"}))
	appendAll(t, c,
		pg.Message{ID: "a9", Calls: []pg.Call{call("k9", "update_incident", `{"severity":"SEV-1"}`)}},
		pg.Message{ID: "r9", Answers: []pg.CallID{"k9"}},
		pg.Message{ID: "a10", Calls: []pg.Call{call("k10", "create_incident", `{}`)}},
		pg.Message{ID: "r10", Answers: []pg.CallID{"k10"}},
		pg.Message{ID: "a11", Calls: []pg.Call{call("k11", "open_ticket", `{}`)}},
	)
	gs := c.Ghosts()
	require.Len(t, gs, 1)
	assert.Equal(t, "open_ticket", gs[0].Sibling, "both have a Family: the Families decide")
}

func TestSiblings(t *testing.T) {
	tests := []struct {
		a, b pg.Tool
		want bool
	}{
		{pg.Tool{Name: "update_incident"}, pg.Tool{Name: "create_incident"}, true},
		{pg.Tool{Name: "update_incident"}, pg.Tool{Name: "create-Incident"}, true},
		{pg.Tool{Name: "updateIncident"}, pg.Tool{Name: "close_incident"}, true},
		{pg.Tool{Name: "github.update_issue"}, pg.Tool{Name: "github.create_issue"}, true},
		{pg.Tool{Name: "update_incident"}, pg.Tool{Name: "update_incident"}, false},
		{pg.Tool{Name: "update_incident"}, pg.Tool{Name: "list_incidents"}, false},
		{pg.Tool{Name: "search"}, pg.Tool{Name: "search_logs"}, false},
		{pg.Tool{Name: "incident"}, pg.Tool{Name: "create_incident"}, false},
		{pg.Tool{Name: "_incident_"}, pg.Tool{Name: "create_incident"}, false},
		{pg.Tool{Name: "read_file"}, pg.Tool{Name: "write_file"}, true},
		{pg.Tool{Name: "a", Family: "x"}, pg.Tool{Name: "b", Family: "x"}, true},
		{pg.Tool{Name: "update_incident", Family: "x"}, pg.Tool{Name: "create_incident", Family: "y"}, false},
		{pg.Tool{Name: "update_incident", Family: "x"}, pg.Tool{Name: "create_incident"}, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, pg.Siblings(tt.a, tt.b), "%s/%s %s/%s", tt.a.Name, tt.a.Family, tt.b.Name, tt.b.Family)
		assert.Equal(t, tt.want, pg.Siblings(tt.b, tt.a), "symmetric")
	}
}

func TestGhostLogIsBounded(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	appendAll(t, c, pg.Message{ID: "u", Tokens: 1})
	for i := range 70 {
		name := fmt.Sprintf("tool%d", i)
		require.NoError(t, c.RegisterTool(pg.Tool{Name: name, Schema: json.RawMessage(`{"type":"object"}`)}))
		appendAll(t, c,
			pg.Message{ID: pg.MessageID(fmt.Sprintf("a%d", i)), Calls: []pg.Call{call(fmt.Sprintf("k%d", i), name, `{"x":1,"y":2}`)}},
			pg.Message{ID: pg.MessageID(fmt.Sprintf("r%d", i)), Answers: []pg.CallID{pg.CallID(fmt.Sprintf("k%d", i))}, Class: pg.Reconstructible},
		)
		prune(t, c, pg.Plan{DropSchemas: []string{name}})
		appendAll(t, c,
			pg.Message{ID: pg.MessageID(fmt.Sprintf("b%d", i)), Calls: []pg.Call{call(fmt.Sprintf("g%d", i), name, `{"x":1}`)}},
			pg.Message{ID: pg.MessageID(fmt.Sprintf("s%d", i)), Answers: []pg.CallID{pg.CallID(fmt.Sprintf("g%d", i))}, Class: pg.Reconstructible},
		)
	}
	gs := c.Ghosts()
	require.Len(t, gs, 64)
	assert.Equal(t, "tool6", gs[0].Tool, "the oldest go first")
	assert.Equal(t, "tool69", gs[63].Tool)
	st, _ := c.Tool("tool0")
	assert.Equal(t, 1, st.GhostCopies, "the counters keep counting")
}

// A ghost call rebuilt from an earlier call, rejected, then routed to a
// sibling tool: seed 001's triad, with its evidence.
func ExampleContext_Ghosts() {
	c := pg.NewContext(pg.Config{})
	v1 := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string"},"assignee_id":{"type":"string"},"notify":{"type":"boolean"}}}`)
	v2 := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string"},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}}}`)
	c.RegisterTool(pg.Tool{Name: "update_incident", Schema: v1})
	c.RegisterTool(pg.Tool{Name: "create_incident", Schema: v1})
	c.Append(pg.Message{ID: "a2", Calls: []pg.Call{{ID: "k2", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2","assignee_id":"u-17","notify":true}`)}}})
	c.Append(pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}})

	// A frequency pruner withdraws the schema; the tool's schema migrates.
	d, _ := c.Prune(pg.Plan{DropSchemas: []string{"update_incident"}})
	c.Apply(d)
	c.RegisterTool(pg.Tool{Name: "update_incident", Schema: v2})

	c.Append(pg.Message{ID: "a9", Calls: []pg.Call{{ID: "k9", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-1","assignee_id":"u-17"}`)}}})
	c.Append(pg.Message{ID: "r9", Answers: []pg.CallID{"k9"}, IsError: true, Content: []byte("notify: required")})
	c.Append(pg.Message{ID: "a10", Calls: []pg.Call{{ID: "k10", Tool: "create_incident", Args: json.RawMessage(`{"severity":"SEV-1"}`)}}})

	for _, g := range c.Ghosts() {
		fmt.Printf("%s: triad %v\n", g.Tool, g.Triad())
		fmt.Printf("  rebuilt %s from %s, missing %v, stale %v\n", g.Call, g.Copied, g.Missing, g.Stale)
		fmt.Printf("  rejected %s for %v\n", g.Rejected, g.Fields)
		fmt.Printf("  detour to %s in %s\n", g.Sibling, g.SiblingCall)
	}
	// Output:
	// update_incident: triad true
	//   rebuilt k9 from k2, missing [notify], stale [assignee_id]
	//   rejected k9 for [notify]
	//   detour to create_incident in k10
}

package pruneguard

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var incidentSchema = json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"],"description":"how bad"},"notify":{"type":"boolean"}},"required":["severity","notify"]}`)

func TestAnnotationDefaults(t *testing.T) {
	tests := []struct {
		name                                   string
		a                                      Annotations
		readOnly, destructive, idem, openWorld bool
		class                                  Class
	}{
		{"unannotated", Annotations{}, false, true, false, true, Irreducible},
		{"read-only closed world", Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}, true, false, true, false, Reconstructible},
		{"read-only open world", Annotations{ReadOnlyHint: Bool(true)}, true, false, true, true, Irreducible},
		{"read-only ignores destructive", Annotations{ReadOnlyHint: Bool(true), DestructiveHint: Bool(true), IdempotentHint: Bool(false), OpenWorldHint: Bool(false)}, true, false, true, false, Reconstructible},
		// Idempotent is not pure: what it wrote is there, what it returned may
		// not come back the same.
		{"idempotent additive closed", Annotations{ReadOnlyHint: Bool(false), DestructiveHint: Bool(false), IdempotentHint: Bool(true), OpenWorldHint: Bool(false)}, false, false, true, false, Irreducible},
		{"idempotent destructive closed", Annotations{DestructiveHint: Bool(true), IdempotentHint: Bool(true), OpenWorldHint: Bool(false)}, false, true, true, false, Irreducible},
		{"non-idempotent additive closed", Annotations{DestructiveHint: Bool(false), OpenWorldHint: Bool(false)}, false, false, false, false, Irreducible},
		{"idempotent additive open", Annotations{DestructiveHint: Bool(false), IdempotentHint: Bool(true)}, false, false, true, true, Irreducible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.readOnly, tt.a.ReadOnly())
			assert.Equal(t, tt.destructive, tt.a.Destructive())
			assert.Equal(t, tt.idem, tt.a.Idempotent())
			assert.Equal(t, tt.openWorld, tt.a.OpenWorld())
			tool := Tool{Name: "t", Annotations: tt.a}
			assert.Equal(t, !tt.readOnly, tool.Mutating())
			assert.Equal(t, tt.class, tool.OutputClass())
			tool.Output = Durable
			assert.Equal(t, Durable, tool.OutputClass(), "an explicit class wins")
		})
	}
}

// schemaContext: update_incident (mutating, irreducible results) called
// once; lookup (read-only) called once; both answered; under the
// evict-or-tombstone gate alone.
func schemaContext(t *testing.T, cfg Config) *Context {
	t.Helper()
	c := NewContext(cfg)
	onlyGate(c, GateSchema)
	require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: incidentSchema}))
	require.NoError(t, c.RegisterTool(Tool{Name: "lookup", Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
	require.NoError(t, c.RegisterTool(Tool{Name: "unused", Schema: json.RawMessage(`{}`)}))
	mustAppend(t, c,
		Message{ID: "a1", Calls: []Call{{ID: "k1", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2","notify":true}`)}}},
		Message{ID: "r1", Answers: []CallID{"k1"}},
		Message{ID: "a2", Calls: []Call{{ID: "k2", Tool: "lookup"}}},
		Message{ID: "r2", Answers: []CallID{"k2"}},
	)
	return c
}

func TestSchemaWithoutArgumentsGoesFreely(t *testing.T) {
	c := schemaContext(t, Config{NoTombstones: true})
	d, err := c.Prune(Plan{DropSchemas: []string{"unused", "unused"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"unused"}, d.DropSchemas)
	assert.Empty(t, d.Tombstones)
	require.NoError(t, c.Apply(d))
	st, _ := c.Tool("unused")
	assert.False(t, st.Resident)
	assert.False(t, st.Tombstoned)
	// Withdrawing it again is a no-op.
	d, err = c.Prune(Plan{DropSchemas: []string{"unused"}})
	require.NoError(t, err)
	assert.Empty(t, d.DropSchemas)
	assert.True(t, d.Empty())
}

func TestReadOnlyToolWithoutTombstoneFailsClosed(t *testing.T) {
	c := schemaContext(t, Config{NoTombstones: true})
	d, err := c.Prune(Plan{DropSchemas: []string{"lookup"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"lookup"}, d.DropSchemas)
	assert.Empty(t, d.Tombstones)
}

func TestPerToolNoTombstone(t *testing.T) {
	c := schemaContext(t, Config{})
	require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: incidentSchema, NoTombstone: true}))
	_, err := c.Prune(Plan{DropSchemas: []string{"update_incident", "lookup"}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Violations, 1)
	assert.Equal(t, CodeGhostTool, pe.Violations[0].Code)
	assert.Equal(t, []CallID{"k1"}, pe.Violations[0].Calls)
	assert.Contains(t, err.Error(), "update_incident")
}

// The tombstone tells the model what to do: the tool is still there, its
// schema is not, and it must ask for the schema before calling it; for a
// tool that changes state, not to rebuild a call from earlier arguments.
func TestTombstoneTellsTheModelToAskForTheSchema(t *testing.T) {
	c := schemaContext(t, Config{})
	d, err := c.Prune(Plan{DropSchemas: []string{"lookup", "update_incident"}})
	require.NoError(t, err)
	require.Len(t, d.Tombstones, 2)
	byTool := map[string]Tombstone{}
	for _, ts := range d.Tombstones {
		byTool[ts.Tool] = ts
	}
	for name, ts := range byTool {
		assert.Contains(t, ts.Text, strconv.Quote(name))
		assert.Contains(t, ts.Text, "still available", name)
		assert.Contains(t, ts.Text, "schema was withdrawn", name)
		assert.Contains(t, ts.Text, "ask for its schema before calling it", name)
		assert.NotContains(t, ts.Text, "\n", "one line")
	}
	ro, mut := byTool["lookup"], byTool["update_incident"]
	assert.False(t, ro.Mutating)
	assert.NotContains(t, ro.Text, "rebuild", "a read-only tool may be called again from its arguments")
	assert.True(t, mut.Mutating)
	assert.Contains(t, mut.Text, "changes state")
	assert.Contains(t, mut.Text, "do not rebuild a call from earlier arguments")
}

func TestTombstoneForReadOnlyTool(t *testing.T) {
	c := schemaContext(t, Config{})
	d, err := c.Prune(Plan{DropSchemas: []string{"lookup"}})
	require.NoError(t, err)
	require.Len(t, d.Tombstones, 1)
	ts := d.Tombstones[0]
	assert.False(t, ts.Mutating)
	assert.Contains(t, ts.Text, `"lookup"`)
	assert.NotContains(t, ts.Text, "\n", "one line")
	require.NoError(t, c.Apply(d))
	st, _ := c.Tool("lookup")
	assert.True(t, st.Tombstoned)
	assert.False(t, st.Resident)

	// A call made while the schema is withdrawn is a ghost call.
	mustAppend(t, c, Message{ID: "a3", Calls: []Call{{ID: "k3", Tool: "lookup"}}})
	st, _ = c.Tool("lookup")
	assert.Equal(t, 1, st.GhostCalls)

	was, err := c.RequestTool("lookup")
	require.NoError(t, err)
	assert.True(t, was)
	was, err = c.RequestTool("lookup")
	require.NoError(t, err)
	assert.False(t, was, "no longer tombstoned")
	st, _ = c.Tool("lookup")
	assert.Equal(t, 1, st.Reexpansions)
}

func TestTombstoneRetiresWithLastArguments(t *testing.T) {
	c := schemaContext(t, Config{})
	d, err := c.Prune(Plan{DropSchemas: []string{"update_incident"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	d, err = c.Prune(Plan{Evict: []MessageID{"a1"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"update_incident"}, d.Retire)
	require.NoError(t, c.Apply(d))
	st, _ := c.Tool("update_incident")
	assert.False(t, st.Tombstoned)
	assert.Equal(t, 0, st.Args)
}

func TestSchemaCompression(t *testing.T) {
	lossless := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"notify":{"type":"boolean"}},"required":["severity","notify"]}`)
	lossy := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string"}},"required":["severity"]}`)

	t.Run("lossless", func(t *testing.T) {
		c := schemaContext(t, Config{NoTombstones: true})
		d, err := c.Prune(Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": lossless}})
		require.NoError(t, err)
		require.Len(t, d.Compress, 1)
		assert.Empty(t, d.Lossy)
		assert.Empty(t, d.Tombstones)
		require.NoError(t, c.Apply(d))
		st, _ := c.Tool("update_incident")
		assert.True(t, st.Resident)
		assert.JSONEq(t, string(lossless), string(st.Compressed))
	})
	t.Run("lossy counts as withdrawn", func(t *testing.T) {
		c := schemaContext(t, Config{NoTombstones: true})
		_, err := c.Prune(Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": lossy}})
		var v *Violation
		require.ErrorAs(t, err, &v)
		assert.Equal(t, CodeGhostTool, v.Code)
	})
	t.Run("lossy with tombstone", func(t *testing.T) {
		c := schemaContext(t, Config{})
		d, err := c.Prune(Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": lossy}})
		require.NoError(t, err)
		require.Len(t, d.Lossy, 1)
		assert.Contains(t, d.Lossy[0].Losses, "/ required notify")
		assert.Contains(t, d.Lossy[0].Losses, `/properties/severity enum "SEV-3"`)
		require.Len(t, d.Tombstones, 1)
		assert.True(t, d.Tombstones[0].Mutating)
		require.NoError(t, c.Apply(d))
		st, _ := c.Tool("update_incident")
		assert.True(t, st.Tombstoned)
	})
	t.Run("lossy without arguments", func(t *testing.T) {
		c := schemaContext(t, Config{NoTombstones: true})
		d, err := c.Prune(Plan{Evict: []MessageID{"a1"}, CompressSchemas: map[string]json.RawMessage{"update_incident": lossy}})
		require.NoError(t, err)
		require.Len(t, d.Compress, 1)
		require.Len(t, d.Lossy, 1)
		assert.Empty(t, d.Tombstones)
	})
	t.Run("bad input", func(t *testing.T) {
		c := schemaContext(t, Config{})
		_, err := c.Prune(Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": json.RawMessage(`{`)}})
		assert.ErrorIs(t, err, ErrBadSchema)
		_, err = c.Prune(Plan{CompressSchemas: map[string]json.RawMessage{"nope": lossless}})
		assert.ErrorIs(t, err, ErrUnknownTool)
		_, err = c.Prune(Plan{DropSchemas: []string{"nope"}})
		assert.ErrorIs(t, err, ErrUnknownTool)
	})
}

func TestSchemaMigrationMakesArgumentsStale(t *testing.T) {
	c := schemaContext(t, Config{})
	assert.Empty(t, c.StaleCalls("update_incident"))
	// Same schema again: no migration.
	require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: incidentSchema, Output: Reconstructible}))
	assert.Empty(t, c.StaleCalls("update_incident"))
	// assignee_id becomes an object: a new schema is a migration.
	migrated := json.RawMessage(`{"type":"object","properties":{"assignee_id":{"type":"object"}}}`)
	require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: migrated, Output: Reconstructible}))
	assert.Equal(t, []CallID{"k1"}, c.StaleCalls("update_incident"))
	mustAppend(t, c,
		Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "update_incident"}}},
		Message{ID: "r9", Answers: []CallID{"k9"}},
	)
	assert.Equal(t, []CallID{"k1"}, c.StaleCalls("update_incident"), "calls after the migration are current")
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 1, st.Stale)
	assert.Equal(t, 2, st.Args)

	d, err := c.Prune(Plan{DropSchemas: []string{"update_incident"}})
	require.NoError(t, err)
	require.Len(t, d.Tombstones, 1)
	assert.Equal(t, []CallID{"k1"}, d.Tombstones[0].Stale)

	// Explicit versions decide over schema bytes.
	require.NoError(t, c.RegisterTool(Tool{Name: "search", Version: "v1"}))
	mustAppend(t, c,
		Message{ID: "a10", Calls: []Call{{ID: "k10", Tool: "search"}}},
		Message{ID: "r10", Answers: []CallID{"k10"}},
	)
	require.NoError(t, c.RegisterTool(Tool{Name: "search", Version: "v1", Schema: json.RawMessage(`{"x":1}`)}))
	assert.Empty(t, c.StaleCalls("search"))
	require.NoError(t, c.RegisterTool(Tool{Name: "search", Version: "v2", Schema: json.RawMessage(`{"x":1}`)}))
	assert.Equal(t, []CallID{"k10"}, c.StaleCalls("search"))
	assert.Empty(t, c.StaleCalls("nope"))
}

func TestToolsAreListedByName(t *testing.T) {
	c := schemaContext(t, Config{})
	mustAppend(t, c, Message{ID: "a5", Calls: []Call{{ID: "k5", Tool: "adhoc"}}})
	var names []string
	for _, st := range c.Tools() {
		names = append(names, st.Tool.Name)
	}
	assert.Equal(t, []string{"adhoc", "lookup", "unused", "update_incident"}, names)
	st, ok := c.Tool("adhoc")
	require.True(t, ok)
	assert.False(t, st.Registered)
	assert.Equal(t, 1, st.Args)
	_, ok = c.Tool("nope")
	assert.False(t, ok)
}

func TestRefetchesAreCounted(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "read")
	// fetch reads an open world: irreducible results, but no mutation.
	require.NoError(t, c.RegisterTool(Tool{Name: "fetch", Annotations: Annotations{ReadOnlyHint: Bool(true)}}))
	mustAppend(t, c,
		Message{ID: "a1", Role: RoleAssistant, Calls: []Call{{ID: "k1", Tool: "read", Args: json.RawMessage(`{"path": "a"}`)}}},
		Message{ID: "r1", Tokens: 10, Answers: []CallID{"k1"}},
		Message{ID: "a2", Role: RoleAssistant, Calls: []Call{{ID: "k2", Tool: "fetch", Args: json.RawMessage(`{"url":"u"}`)}}},
		Message{ID: "r2", Tokens: 10, Answers: []CallID{"k2"}},
		Message{ID: "a9", Role: RoleAssistant, Content: []byte("read both")},
	)
	withoutGates(c, GateRegen) // let the irreducible result go, to see the alarm
	d, err := c.Prune(Plan{Evict: []MessageID{"a1"}, Stub: []MessageID{"r2"}})
	require.NoError(t, err)
	recs := d.Records()
	require.Len(t, recs, 3)
	empty := hashOf(nil)
	assert.Equal(t, Record{Message: "a1", Unit: "a1", Class: Reconstructible}, recs[0], "not a result: no hash")
	assert.Equal(t, Record{Message: "r1", Unit: "a1", Class: Reconstructible, Tokens: 10, Hash: empty}, recs[1])
	assert.Equal(t, Record{Message: "r2", Unit: "a2", Class: Irreducible, Tokens: 10, Stubbed: true, Hash: empty}, recs[2])
	require.NoError(t, c.Apply(d))
	mustAppend(t, c,
		Message{ID: "a3", Calls: []Call{{ID: "k3", Tool: "read", Args: json.RawMessage(`{"path":"a"}`)}, {ID: "k4", Tool: "read", Args: json.RawMessage(`{"path":"b"}`)}}},
		Message{ID: "a4", Calls: []Call{{ID: "k5", Tool: "fetch", Args: json.RawMessage(`{"url":"u"}`)}}},
	)
	st, _ := c.Tool("read")
	assert.Equal(t, 0, st.Refetches, "counted when the result comes back")
	mustAppend(t, c,
		Message{ID: "r3", Answers: []CallID{"k3", "k4"}},
		Message{ID: "r5", Answers: []CallID{"k5"}},
	)
	st, _ = c.Tool("read")
	assert.Equal(t, 1, st.Refetches, "the same read again, whitespace aside")
	assert.Equal(t, 0, st.IrreducibleRefetches)
	st, _ = c.Tool("fetch")
	assert.Equal(t, 1, st.Refetches)
	assert.Equal(t, 1, st.IrreducibleRefetches)
}

func TestGhostCallsBehindTombstonesAndMigrations(t *testing.T) {
	lossy := json.RawMessage(`{"type":"object"}`)
	c := schemaContext(t, Config{})
	d, err := c.Prune(Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": lossy}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	mustAppend(t, c, Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "update_incident"}}})
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 1, st.GhostCalls, "a call behind a tombstone")
	assert.NotNil(t, st.Compressed)
	require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: json.RawMessage(`{"type":"object","required":["id"]}`)}))
	st, _ = c.Tool("update_incident")
	assert.Nil(t, st.Compressed, "a migration drops the old compression")
}

// The evict-or-tombstone gate alone counts the arguments that leave with
// exactly what the plan evicts: a call leaves with its caller, whatever
// its unit or its result.
func TestSchemaGateAlone(t *testing.T) {
	c := schemaContext(t, Config{NoTombstones: true})
	mustAppend(t, c, Message{ID: "a3", Calls: []Call{{ID: "k3", Tool: "update_incident"}}}) // pending
	_, err := c.Prune(Plan{Evict: []MessageID{"a1"}, DropSchemas: []string{"update_incident"}})
	var v *Violation
	require.ErrorAs(t, err, &v, "k3's arguments stay")
	assert.Equal(t, []CallID{"k3"}, v.Calls)

	d, err := c.Prune(Plan{Evict: []MessageID{"a1", "a3"}, DropSchemas: []string{"update_incident"}})
	require.NoError(t, err, "no deferral: the boundary gate is not asked")
	assert.Equal(t, []MessageID{"a1", "a3"}, d.Evict)
	assert.Equal(t, []string{"update_incident"}, d.DropSchemas)
	assert.Empty(t, d.Tombstones)

	// Evicting the result leaves the arguments in.
	_, err = c.Prune(Plan{Evict: []MessageID{"r1", "a3"}, DropSchemas: []string{"update_incident"}})
	assert.ErrorIs(t, err, ErrSchema)
}

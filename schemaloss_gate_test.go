package pruneguard_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// The seed's update_incident, with its constraints behind references: the
// severity levels and the assignee's shape live in $defs.
const incidentByRef = `{
 "type": "object",
 "description": "Update an incident.",
 "$defs": {
  "severity": {"type": "string", "enum": ["SEV-1", "SEV-2", "SEV-3"], "description": "How bad."},
  "assignee": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^u-[0-9]+$"}}, "required": ["id"], "additionalProperties": false}
 },
 "properties": {
  "severity": {"$ref": "#/$defs/severity"},
  "assignee_id": {"$ref": "#/$defs/assignee"},
  "notify": {"type": "boolean"}
 },
 "required": ["severity", "assignee_id", "notify"]
}`

// incidentContext holds one earlier call to update_incident whose
// arguments are still in the prompt.
func incidentContext(t *testing.T, cfg pruneguard.Config) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "update_incident", Schema: json.RawMessage(incidentByRef)}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 20}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 40, Calls: []pruneguard.Call{{
		ID: "k1", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2","assignee_id":{"id":"u-7"},"notify":true}`),
	}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 30, Answers: []pruneguard.CallID{"k1"}}))
	return c
}

func compress(s string) pruneguard.Plan {
	return pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": json.RawMessage(s)}}
}

// A compression that inlines the references and drops the descriptions
// keeps every constraint: it goes in, with no tombstone.
func TestSchemaLossGateLosslessThroughRef(t *testing.T) {
	lossless := `{"type":"object","properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string","pattern":"^u-[0-9]+$"}},"required":["id"],"additionalProperties":false},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`
	c := incidentContext(t, pruneguard.Config{NoTombstones: true})
	d, err := c.Prune(compress(lossless))
	require.NoError(t, err)
	assert.Empty(t, d.Lossy)
	assert.Empty(t, d.Tombstones)
	require.Len(t, d.Compress, 1)
	assert.JSONEq(t, lossless, string(d.Compress[0].Schema))
	require.NoError(t, c.Apply(d))
	st, _ := c.Tool("update_incident")
	assert.True(t, st.Resident)
	assert.False(t, st.Tombstoned)
	assert.JSONEq(t, lossless, string(st.Compressed))
}

// A compression that keeps the references but weakens what they point to
// loses constraints: the gate reports each one by the place it held, and
// treats the compression as a withdrawal, so the tool is tombstoned.
func TestSchemaLossGateLossyThroughRef(t *testing.T) {
	lossy := `{"type":"object",
 "$defs":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3","SEV-4"]},
  "assignee":{"type":"object","properties":{"id":{"type":"string"}}}
 },
 "properties":{"severity":{"$ref":"#/$defs/severity"},"assignee_id":{"$ref":"#/$defs/assignee"},"notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`
	c := incidentContext(t, pruneguard.Config{})
	d, err := c.Prune(compress(lossy))
	require.NoError(t, err)
	require.Len(t, d.Lossy, 1)
	assert.Equal(t, "update_incident", d.Lossy[0].Tool)
	assert.Equal(t, []string{
		"/properties/assignee_id/$ref additionalProperties",
		"/properties/assignee_id/$ref required id",
		`/properties/assignee_id/$ref/properties/id pattern "^u-[0-9]+$"`,
		`/properties/severity/$ref enum admits "SEV-4"`,
	}, d.Lossy[0].Losses)
	require.Len(t, d.Tombstones, 1, "arguments of k1 stay: a withdrawal needs a tombstone")
	assert.Equal(t, "update_incident", d.Tombstones[0].Tool)
	assert.True(t, d.Tombstones[0].Mutating)
	require.NoError(t, c.Apply(d))
	st, _ := c.Tool("update_incident")
	assert.True(t, st.Tombstoned)
}

// Without tombstones, a lossy compression of a mutation tool whose
// arguments stay is refused like any other withdrawal.
func TestSchemaLossGateLossyRefusedWithoutTombstones(t *testing.T) {
	c := incidentContext(t, pruneguard.Config{NoTombstones: true})
	// Only the $defs entry changed: the assignee may now be any string.
	weak := `{"type":"object","$defs":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee":{"type":"string"}},
 "properties":{"severity":{"$ref":"#/$defs/severity"},"assignee_id":{"$ref":"#/$defs/assignee"},"notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`
	_, err := c.Prune(compress(weak))
	require.ErrorIs(t, err, pruneguard.ErrSchema)
	var v *pruneguard.Violation
	require.True(t, errors.As(err, &v))
	assert.Equal(t, pruneguard.CodeGhostTool, v.Code)
	assert.Equal(t, []string{"update_incident"}, v.Tools)
	st, _ := c.Tool("update_incident")
	assert.True(t, st.Resident)
	assert.Nil(t, st.Compressed, "nothing applied")
}

// One lossy compression per keyword class the gate used to miss: each is
// reported and tombstoned; the same schema with its annotations dropped is
// not.
func TestSchemaLossGateKeywordClasses(t *testing.T) {
	for _, tt := range []struct{ name, orig, lossy, lossless string }{
		{"additionalProperties",
			`{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false,"title":"t"}`,
			`{"type":"object","properties":{"path":{"type":"string"}}}`,
			`{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`},
		{"pattern and length",
			`{"type":"object","properties":{"ticket":{"type":"string","pattern":"^[A-Z]+-[0-9]+$","maxLength":16,"description":"d"}}}`,
			`{"type":"object","properties":{"ticket":{"type":"string","maxLength":16}}}`,
			`{"type":"object","properties":{"ticket":{"type":"string","pattern":"^[A-Z]+-[0-9]+$","maxLength":16}}}`},
		{"range",
			`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"exclusiveMaximum":100}}}`,
			`{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`,
			`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"exclusiveMaximum":100,"examples":[5]}}}`},
		{"const",
			`{"type":"object","properties":{"v":{"const":"v2"}}}`,
			`{"type":"object","properties":{"v":{"type":"string"}}}`,
			`{"type":"object","properties":{"v":{"const":"v2","$comment":"c"}}}`},
		{"oneOf branch",
			`{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind","n"]}]}`,
			`{"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind"]}]}`,
			`{"oneOf":[{"type":"object","properties":{"kind":{"const":"a","title":"A"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind","n"]}]}`},
		{"tuple",
			`{"type":"object","properties":{"at":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"items":false}}}`,
			`{"type":"object","properties":{"at":{"type":"array","items":{"type":"number"}}}}`,
			`{"type":"object","properties":{"at":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"items":false,"description":"lat, lon"}}}`},
		{"recursive $ref",
			`{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string","minLength":1},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"$ref":"#/$defs/node"}`,
			`{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"$ref":"#/$defs/node"}`,
			`{"$defs":{"node":{"type":"object","title":"Node","properties":{"name":{"type":"string","minLength":1},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"$ref":"#/$defs/node"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setup := func() *pruneguard.Context {
				c := pruneguard.NewContext(pruneguard.Config{})
				require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "tool", Schema: json.RawMessage(tt.orig)}))
				require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k1", Tool: "tool", Args: json.RawMessage(`{}`)}}}))
				require.NoError(t, c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"k1"}}))
				return c
			}
			d, err := setup().Prune(pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{"tool": json.RawMessage(tt.lossy)}})
			require.NoError(t, err)
			require.Len(t, d.Lossy, 1)
			assert.NotEmpty(t, d.Lossy[0].Losses)
			require.Len(t, d.Tombstones, 1)

			d, err = setup().Prune(pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{"tool": json.RawMessage(tt.lossless)}})
			require.NoError(t, err)
			assert.Empty(t, d.Lossy)
			assert.Empty(t, d.Tombstones)
			require.Len(t, d.Compress, 1)
		})
	}
}

// Tightening is no loss: a narrower enum and a stricter limit go in as
// they are. A compression that accepts nothing at all withdraws the
// schema in all but name.
func TestSchemaLossGateTighteningAndNothing(t *testing.T) {
	narrower := `{"type":"object",
 "$defs":{"severity":{"type":"string","enum":["SEV-1","SEV-2"]},
  "assignee":{"type":"object","properties":{"id":{"type":"string","pattern":"^u-[0-9]+$","maxLength":12}},"required":["id"],"additionalProperties":false}},
 "properties":{"severity":{"$ref":"#/$defs/severity"},"assignee_id":{"$ref":"#/$defs/assignee"},"notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`
	c := incidentContext(t, pruneguard.Config{NoTombstones: true})
	d, err := c.Prune(compress(narrower))
	require.NoError(t, err)
	assert.Empty(t, d.Lossy)
	require.Len(t, d.Compress, 1)

	for _, nothing := range []string{`false`, `{"not":{}}`, `{"enum":[]}`} {
		c := incidentContext(t, pruneguard.Config{})
		d, err := c.Prune(compress(nothing))
		require.NoError(t, err, nothing)
		require.Len(t, d.Lossy, 1, nothing)
		assert.Equal(t, []string{"/ false compressed schema accepts nothing"}, d.Lossy[0].Losses, nothing)
		require.Len(t, d.Tombstones, 1, nothing)
	}
}

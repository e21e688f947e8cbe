package pruneguard_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// A compressed schema under which an argument still in the prompt is
// invalid (an enum member a surviving call used, dropped; a required
// field added; a type narrowed; reached directly or through $ref, $defs or
// definitions) is a withdrawal for those arguments: the schema gate
// tombstones it, or, for a mutation tool without tombstones, refuses. A
// narrowing no surviving argument contradicts is reported in
// Decision.Narrowed.

// narrowContext registers tool with schema and appends a call to it with
// args, its result and the model's answer; then a call with other
// arguments (k2), in a unit of its own.
func narrowContext(t *testing.T, cfg pruneguard.Config, schema, args, other string) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "set_mode", Schema: json.RawMessage(schema), Annotations: mutating}))
	for i, a := range []string{args, other} {
		k := pruneguard.CallID([]string{"k1", "k2"}[i])
		id := pruneguard.MessageID([]string{"a1", "a2"}[i])
		mustDo(t,
			c.Append(pruneguard.Message{ID: id, Role: pruneguard.RoleAssistant, Tokens: 5, Class: pruneguard.Reconstructible,
				Calls: []pruneguard.Call{{ID: k, Tool: "set_mode", Args: json.RawMessage(a)}}}),
			c.Append(pruneguard.Message{ID: id + "r", Role: pruneguard.RoleTool, Tokens: 5, Class: pruneguard.Reconstructible, Answers: []pruneguard.CallID{k}}),
		)
	}
	mustDo(t, c.Append(pruneguard.Message{ID: "end", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("done")}))
	return c
}

func TestNarrowedSchemaIsAWithdrawalForInvalidArguments(t *testing.T) {
	cases := []struct {
		name, schema, compressed, args string
	}{
		{"an enum member dropped",
			`{"type":"object","properties":{"mode":{"enum":["fast","safe","off"],"description":"how"}},"required":["mode"]}`,
			`{"type":"object","properties":{"mode":{"enum":["fast","safe"]}},"required":["mode"]}`,
			`{"mode":"off"}`},
		{"a required field added",
			`{"type":"object","properties":{"mode":{"type":"string"},"force":{"type":"boolean"}}}`,
			`{"type":"object","properties":{"mode":{"type":"string"},"force":{"type":"boolean"}},"required":["force"]}`,
			`{"mode":"fast"}`},
		{"a type narrowed",
			`{"type":"object","properties":{"count":{"type":["integer","string"]}}}`,
			`{"type":"object","properties":{"count":{"type":"integer"}}}`,
			`{"count":"3"}`},
		{"through $ref and $defs",
			`{"$defs":{"m":{"enum":["fast","safe","off"]}},"type":"object","properties":{"mode":{"$ref":"#/$defs/m"}}}`,
			`{"$defs":{"m":{"enum":["fast","safe"]}},"type":"object","properties":{"mode":{"$ref":"#/$defs/m"}}}`,
			`{"mode":"off"}`},
		{"through definitions",
			`{"definitions":{"m":{"enum":["fast","safe","off"]}},"type":"object","properties":{"mode":{"$ref":"#/definitions/m"}}}`,
			`{"definitions":{"m":{"enum":["fast","safe"]}},"type":"object","properties":{"mode":{"$ref":"#/definitions/m"}}}`,
			`{"mode":"off"}`},
		{"a keyword not checked (possibly invalid)",
			`{"type":"object","properties":{"day":{"type":"string"}}}`,
			`{"type":"object","properties":{"day":{"type":"string","format":"date"}}}`,
			`{"day":"tomorrow"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{"set_mode": json.RawMessage(tc.compressed)}}
			// The other call's arguments are valid under both.
			valid := `{"mode":"fast","count":1,"force":true,"day":"2026-12-01"}`
			c := narrowContext(t, pruneguard.Config{}, tc.schema, tc.args, valid)
			d, err := c.Prune(plan)
			require.NoError(t, err)
			require.Len(t, d.Lossy, 1, "treated as lossy")
			want := []pruneguard.CallID{"k1"}
			unchecked := tc.name == "a keyword not checked (possibly invalid)"
			if unchecked {
				want = append(want, "k2") // format is not checked: either may be invalid
			}
			assert.Equal(t, want, d.Lossy[0].Invalid)
			assert.NotEmpty(t, d.Lossy[0].Narrows)
			require.Len(t, d.Tombstones, 1, "a tombstone stands for the schema")
			assert.Equal(t, "set_mode", d.Tombstones[0].Tool)
			require.NoError(t, c.Apply(d))
			st, _ := c.Tool("set_mode")
			assert.True(t, st.Tombstoned)

			// A mutation tool that cannot be tombstoned keeps its schema.
			c = narrowContext(t, pruneguard.Config{NoTombstones: true}, tc.schema, tc.args, valid)
			_, err = c.Prune(plan)
			var pe *pruneguard.PruneError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, pruneguard.CodeGhostTool, pe.Violations[0].Code)

			if unchecked {
				return
			}
			// Evicting the call whose arguments it rejects leaves a
			// narrowing that contradicts nothing: accepted, and reported.
			plan.Evict = []pruneguard.MessageID{"a1"}
			d, err = c.Prune(plan)
			require.NoError(t, err)
			assert.Empty(t, d.Lossy)
			assert.Empty(t, d.Tombstones)
			require.Len(t, d.Narrowed, 1)
			assert.Equal(t, "set_mode", d.Narrowed[0].Tool)
		})
	}
}

// A narrowing that no surviving argument contradicts is reported, not
// silent; a compression that only drops descriptions narrows nothing.
func TestNarrowingNoArgumentContradicts(t *testing.T) {
	schema := `{"type":"object","properties":{"q":{"oneOf":[{"type":"string","description":"text"},{"type":"integer"}]}}}`
	c := narrowContext(t, pruneguard.Config{NoTombstones: true}, schema, `{"q":"x"}`, `{"q":"y"}`)
	d, err := c.Prune(pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{
		"set_mode": json.RawMessage(`{"type":"object","properties":{"q":{"oneOf":[{"type":"string"}]}}}`)}})
	require.NoError(t, err, "no argument is invalid under it")
	assert.Empty(t, d.Lossy)
	require.Len(t, d.Narrowed, 1, "a oneOf branch removed is reported")
	assert.NotEmpty(t, d.Narrowed[0].Narrows)
	require.NoError(t, c.Apply(d))
	st, _ := c.Tool("set_mode")
	assert.False(t, st.Ghost)

	d, err = c.Prune(pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{
		"set_mode": json.RawMessage(`{"type":"object","properties":{"q":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`)}})
	require.NoError(t, err)
	assert.Empty(t, d.Lossy)
	assert.Empty(t, d.Narrowed, "descriptions dropped: nothing narrowed")
}

// A schema registered again under the same version, against which a
// compression kept from before now narrows under arguments made, is not
// shown whole: the tool's arguments stand behind no schema.
func TestNarrowedOnRegistrationAgain(t *testing.T) {
	schema := `{"type":"object","properties":{"mode":{"enum":["fast","safe"]}}}`
	c := pruneguard.NewContext(pruneguard.Config{NoTombstones: true})
	tool := pruneguard.Tool{Name: "pick", Schema: json.RawMessage(schema), Version: "1", Annotations: pure}
	require.NoError(t, c.RegisterTool(tool))
	d, err := c.Prune(pruneguard.Plan{CompressSchemas: map[string]json.RawMessage{"pick": json.RawMessage(`{"type":"object","properties":{"mode":{"enum":["fast","safe"]}}}`)}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	mustDo(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{{ID: "k", Tool: "pick", Args: json.RawMessage(`{"mode":"off"}`)}}}))
	st, _ := c.Tool("pick")
	require.False(t, st.Ghost)
	tool.Schema = json.RawMessage(`{"type":"object","properties":{"mode":{"enum":["fast","safe","off"]}}}`)
	require.NoError(t, c.RegisterTool(tool))
	st, _ = c.Tool("pick")
	assert.True(t, st.Ghost, "the compression shown rejects a call in the prompt")
	assert.Equal(t, []string{"pick"}, c.Unsound())
}

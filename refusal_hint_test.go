package pruneguard_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// A refusal remembered of a unit stops holding when the unit changes,
// and the walks of a View, which cross runs of refused units in one
// step, show the unit again: here a unit in the middle of a run of
// refused units has its result stubbed, and the next check's policy
// sees it.
func TestChangedUnitLeavesRefusedRun(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup", Output: pg.Reconstructible}))
	for _, m := range []pg.Message{
		{ID: "sys", Role: pg.RoleSystem, Pinned: true, Tokens: 5},
		{ID: "u1", Role: pg.RoleUser, Content: []byte("first"), Tokens: 10},
		{ID: "a1", Role: pg.RoleAssistant, Content: []byte("looking"), Tokens: 10,
			Calls: []pg.Call{{ID: "c1", Tool: "lookup", Args: json.RawMessage(`{}`)}}},
		{ID: "r1", Role: pg.RoleTool, Answers: []pg.CallID{"c1"}, Content: []byte("a long answer"), Tokens: 200},
		{ID: "u2", Role: pg.RoleUser, Content: []byte("second"), Tokens: 10},
		{ID: "a2", Role: pg.RoleAssistant, Content: []byte("done"), Tokens: 10},
	} {
		require.NoError(t, c.Append(m))
	}
	g := pg.Guard{Budget: 20, Policy: pg.OldestFirst{}}
	res, _ := g.Check(c)
	require.Equal(t, pg.Deferred, res.Outcome, "%v", res.Reason)
	require.True(t, slices.ContainsFunc(c.Refusals(), func(v *pg.Violation) bool { return slices.Contains(v.Units, "a1") }),
		"the unit of the call is refused whole: %v", c.Refusals())

	d, err := c.Prune(pg.Plan{Stub: []pg.MessageID{"r1"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	assert.False(t, slices.ContainsFunc(c.Refusals(), func(v *pg.Violation) bool { return slices.Contains(v.Units, "a1") }),
		"the refusal of a changed unit no longer holds")

	var seen []pg.UnitID
	g.Policy = pg.ViewFunc(func(v *pg.View, need int) pg.Plan {
		for u := range v.Units() {
			seen = append(seen, u.ID)
		}
		return pg.Plan{}
	})
	_, _ = g.Check(c)
	assert.Contains(t, seen, pg.UnitID("a1"), "the walk passes over a unit whose refusal no longer holds")
}

package pruneguard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// pureRounds is a session of n rounds of a pure tool call and its
// 100-token result, each answered by the model, under cfg.
func pureRounds(t *testing.T, cfg pruneguard.Config, n int) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	for i := range n {
		id := string(rune('a' + i))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID("a" + id), Role: pruneguard.RoleAssistant, Tokens: 10,
			Calls: []pruneguard.Call{{ID: pruneguard.CallID("c" + id), Tool: "read"}}}))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID("r" + id), Role: pruneguard.RoleTool, Tokens: 100,
			Answers: []pruneguard.CallID{pruneguard.CallID("c" + id)}}))
	}
	require.NoError(t, c.Append(pruneguard.Message{ID: "seen", Role: pruneguard.RoleAssistant, Tokens: 1}))
	return c
}

// Under the relaxed boundary, a policy that names only a unit in flight
// does not end the check: the unit stays out of it, and the guard's own
// furthest safe prune reaches the budget.
func TestGuardGoesOnPastAPlanOfUnitsInFlight(t *testing.T) {
	c := pureRounds(t, pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed}, 4)
	require.NoError(t, c.Append(pruneguard.Message{ID: "pending", Role: pruneguard.RoleAssistant, Tokens: 10,
		Calls: []pruneguard.Call{{ID: "cp", Tool: "read"}}}))
	inFlight := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan {
		return pruneguard.Plan{Evict: []pruneguard.MessageID{"pending"}}
	})
	res, err := pruneguard.Guard{Budget: 250, Policy: inFlight}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome, "reason: %v", res.Reason)
	assert.LessOrEqual(t, res.After, 250)
	_, held := c.Message("pending")
	assert.True(t, held, "the unit in flight stays")
}

// A policy that keeps proposing stubs of results stubbed already gets no
// decision that frees nothing applied.
func TestGuardAppliesNoStubOfAStub(t *testing.T) {
	c := pureRounds(t, pruneguard.Config{}, 4)
	d, err := c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"ra", "rb", "rc", "rd"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	stubsAgain := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan {
		return pruneguard.Plan{Stub: []pruneguard.MessageID{"ra", "rb"}}
	})
	res, err := pruneguard.Guard{Budget: 10, Policy: stubsAgain}.Check(c)
	require.NoError(t, err)
	for _, d := range res.Decisions {
		assert.Empty(t, d.Stub, "a stub of a stub frees nothing")
	}
}

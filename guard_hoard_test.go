package pruneguard_test

import (
	"bytes"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

func TestHoardStubActsUnderBudget(t *testing.T) {
	c := loopContext(t, pruneguard.Config{HoardTokens: 500}, 1000, 100, 2000, 800)
	require.NoError(t, c.Mark("r2", pruneguard.TransientState)) // irreducible: not hoarded
	before := c.Tokens()
	g := pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardStub}
	res, err := g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome, "under budget, the hoarded results went")
	_, stubbed := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"r0"}, stubbed, "r3 is in the newest unit, r1 small, r2 irreducible")
	assert.Equal(t, before-1000+pruneguard.DefaultStubTokens, res.After)
	assert.NotEmpty(t, res.Compaction)

	// The next check finds nothing more to do, and the newest unit goes
	// once it is no longer the newest and the model has read it: a user
	// turn is not enough, the model's next message is.
	res, err = g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.UnderBudget, res.Outcome)
	assert.Empty(t, res.Decisions)
	require.NoError(t, c.Append(pruneguard.Message{ID: "u9", Role: pruneguard.RoleUser, Tokens: 5}))
	res, err = g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.UnderBudget, res.Outcome, "r3 is unread")
	assert.Empty(t, res.Decisions)
	require.NoError(t, c.Append(pruneguard.Message{ID: "a9", Role: pruneguard.RoleAssistant, Tokens: 5}))
	res, err = g.Check(c)
	require.NoError(t, err)
	_, stubbed = evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"r3"}, stubbed)

	// HoardKeep spares more of the newest units.
	c = loopContext(t, pruneguard.Config{HoardTokens: 500}, 1000, 1000, 1000)
	res, err = pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardStub, HoardKeep: 2}.Check(c)
	require.NoError(t, err)
	_, stubbed = evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"r0"}, stubbed)
}

func TestHoardEvictTakesWholeUnits(t *testing.T) {
	c := loopContext(t, pruneguard.Config{HoardTokens: 500}, 1000, 100, 900)
	res, err := pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardEvict}.Check(c)
	require.NoError(t, err)
	evicted, stubbed := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"a0", "r0"}, evicted)
	assert.Empty(t, stubbed)
	for _, d := range res.Decisions {
		assert.Equal(t, []pruneguard.MessageID{"r2"}, d.Hoarded, "the newest unit is spared, and reported")
	}
}

// HoardReport, the zero mode, acts on nothing: the report stays in the
// decisions, and an under-budget check returns at once.
func TestHoardReportOnly(t *testing.T) {
	c := loopContext(t, pruneguard.Config{HoardTokens: 500}, 1000, 100, 100)
	before := state(c)
	res, err := pruneguard.Guard{Budget: 1 << 20}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.UnderBudget, res.Outcome)
	assert.Equal(t, before, state(c))
	assert.Empty(t, res.Compaction)

	res, err = pruneguard.Guard{Budget: c.Tokens() - 5}.Check(c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Decisions)
	assert.Equal(t, []pruneguard.MessageID{"r0"}, res.Decisions[0].Hoarded)
}

// With the hoarding rule on but nothing hoarded, an under-budget check
// still returns at once without allocating.
func TestHoardNothingHoardedIsFree(t *testing.T) {
	c := loopContext(t, pruneguard.Config{HoardTokens: 500}, 100, 100)
	g := pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardStub}
	allocs := testing.AllocsPerRun(100, func() {
		if r, err := g.Check(c); err != nil || r.Outcome != pruneguard.UnderBudget {
			t.Fatal(r.Outcome, err)
		}
	})
	assert.Zero(t, allocs)
}

// The hoarding rule leaves what the policy keeps.
func TestHoardLeavesWhatThePolicyKeeps(t *testing.T) {
	c := loopContext(t, pruneguard.Config{HoardTokens: 500}, 1000, 1000, 1000, 100)
	res, err := pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardStub, Policy: pruneguard.KeepLastToolUses{Keep: 3}}.Check(c)
	require.NoError(t, err)
	_, stubbed := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"r0"}, stubbed, "r1, r2 and r3 are the three tool uses kept")

	c = loopContext(t, pruneguard.Config{HoardTokens: 500}, 1000, 1000, 1000, 100)
	require.NoError(t, c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Tokens: 5}))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"task"}}) // the Context has changed shape before
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	res, err = pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardStub, Policy: pruneguard.OldestFirst{Keep: 5}}.Check(c)
	require.NoError(t, err)
	_, stubbed = evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"r0", "r1"}, stubbed, "the last five messages are a2, r2, a3, r3 and u")
}

// The hoarding report follows the class a message has: a large result
// counts once its tool is registered as pure, not while the read is
// stale or marked with a fact, and again once a registration makes it
// fresh; a restored Context reports the same.
func TestHoardingFollowsTheClass(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{HoardTokens: 500})
	hoarded := func() []pruneguard.MessageID {
		t.Helper()
		d, err := c.Prune(pruneguard.Plan{})
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, c.Save(&buf))
		rc, err := pruneguard.Restore(&buf, pruneguard.Config{HoardTokens: 500})
		require.NoError(t, err)
		rd, err := rc.Prune(pruneguard.Plan{})
		require.NoError(t, err)
		assert.Equal(t, d.Hoarded, rd.Hoarded, "the restored Context reports the same")
		return d.Hoarded
	}
	pure := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	// A read beside a write in one batch is stale from the start.
	require.NoError(t, c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "k2", Tool: "cat"}, {ID: "w2", Tool: "write"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 1000, Answers: []pruneguard.CallID{"k2"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "w2r", Role: pruneguard.RoleTool, Tokens: 5, Answers: []pruneguard.CallID{"w2"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "k1", Tool: "read"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 1000, Answers: []pruneguard.CallID{"k1"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Tokens: 1000}))
	assert.Empty(t, hoarded(), "unknown tools are not pure; text is irreducible")

	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pure}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "cat", Annotations: pure}))
	assert.Equal(t, []pruneguard.MessageID{"r1"}, hoarded(), "r2 is stale: write is not read-only")

	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "write", Annotations: pure}))
	assert.Equal(t, []pruneguard.MessageID{"r2", "r1"}, hoarded(), "write no longer mutates")

	require.NoError(t, c.Mark("r1", pruneguard.NegativeResult))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "k3", Tool: "rm"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r3", Role: pruneguard.RoleTool, Tokens: 5, Answers: []pruneguard.CallID{"k3"}}))
	assert.Empty(t, hoarded(), "r1 carries a fact, and rm (unknown, so mutating) made r2 stale")
}

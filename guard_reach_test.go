package pruneguard_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// refusedUnits lists the unit each violation names, in order.
func refusedUnits(vs []*pruneguard.Violation) []pruneguard.UnitID {
	var out []pruneguard.UnitID
	for _, v := range vs {
		out = append(out, v.Units...)
	}
	return out
}

func evictedBy(res pruneguard.Result) (evicted, stubbed []pruneguard.MessageID) {
	for _, d := range res.Decisions {
		evicted = append(evicted, d.Evict...)
		stubbed = append(stubbed, d.Stub...)
	}
	return evicted, stubbed
}

// modelRead appends the model's answer, id: the model has read every
// message before it. It counts no token and is pinned, so that no plan
// proposes it and the numbers of a test stay as they were.
func modelRead(t testing.TB, c *pruneguard.Context, id pruneguard.MessageID) {
	t.Helper()
	require.NoError(t, c.Append(pruneguard.Message{ID: id, Role: pruneguard.RoleAssistant, Pinned: true}))
}

// batchOfThree is a parallel batch of three calls in one assistant turn:
// an irreducible result (post) and two reconstructible ones (read). The
// post writes elsewhere than the reads read, so it leaves them
// reconstructible.
func batchOfThree(t *testing.T, cfg pruneguard.Config) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "post", Scope: "outbox"}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Scope: "files", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 10, Pinned: true}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "p", Tool: "post"}, {ID: "q", Tool: "read"}, {ID: "s", Tool: "read"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "rp", Role: pruneguard.RoleTool, Tokens: 600, Answers: []pruneguard.CallID{"p"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "rq", Role: pruneguard.RoleTool, Tokens: 400, Answers: []pruneguard.CallID{"q"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "rs", Role: pruneguard.RoleTool, Tokens: 300, Answers: []pruneguard.CallID{"s"}}))
	// The model has read the batch: its answer (kept, and counting nothing).
	modelRead(t, c, "seen")
	require.NoError(t, c.Append(pruneguard.Message{ID: "next", Role: pruneguard.RoleUser, Tokens: 10, Pinned: true}))
	return c
}

// One irreducible result does not block stubbing its reconstructible
// siblings, whichever mode the regenerability gate is in.
func TestIrreducibleResultDoesNotBlockItsSiblings(t *testing.T) {
	for _, mode := range []pruneguard.RegenMode{pruneguard.RegenRefuse, pruneguard.RegenDropUnsafe} {
		c := batchOfThree(t, pruneguard.Config{Regen: mode})
		res, err := pruneguard.Guard{Budget: 100, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
		require.NoError(t, err)
		assert.Equal(t, pruneguard.Pruned, res.Outcome, "mode %d", mode)
		_, stubbed := evictedBy(res)
		assert.ElementsMatch(t, []pruneguard.MessageID{"rq", "rs"}, stubbed, "mode %d", mode)
		m, _ := c.Message("rp")
		assert.NotEqual(t, pruneguard.DefaultStubText, string(m.Content), "the irreducible result stays whole")
		assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen, "and its refusal is reported")
	}
}

// When stubs would free nothing, the guard evicts whole units instead.
func TestReachEvictsUnitsWhenStubsAreNotSmaller(t *testing.T) {
	c := loopContext(t, pruneguard.Config{StubTokens: 50}, 40, 40, 40, 40, 40)
	res, err := pruneguard.Guard{Budget: 200, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.LessOrEqual(t, res.After, 200)
	evicted, stubbed := evictedBy(res)
	assert.Empty(t, stubbed, "a stub of 50 tokens for a result of 40 makes nothing smaller")
	assert.Equal(t, []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1", "a2", "r2"}, evicted, "oldest first, whole units")
	for _, d := range res.Decisions {
		for _, u := range d.Units {
			assert.NotEqual(t, pruneguard.UnitID("sys"), u)
		}
	}
}

// refusing proposes only what the gates refuse: the guard goes on with
// the other units, oldest first.
func TestReachTriesTheOtherUnits(t *testing.T) {
	c := loopContext(t, pruneguard.Config{}, 100, 100, 100, 100)
	modelRead(t, c, "seen")
	require.NoError(t, c.Mark("r3", pruneguard.OneTimeSecret))
	pol := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan {
		return pruneguard.Plan{Evict: []pruneguard.MessageID{"r3"}}
	})
	res, err := pruneguard.Guard{Budget: c.Tokens() - 200, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	evicted, _ := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1"}, evicted)
	_, ok := c.Message("r3")
	assert.True(t, ok)
	assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen)
}

// keeper proposes nothing and keeps the newest n messages, as a policy
// with a protected tail says through Keeper.
type keeper struct{ n int }

func (keeper) Propose(*pruneguard.View, int) pruneguard.Plan { return pruneguard.Plan{} }
func (k keeper) Kept(v *pruneguard.View) (pruneguard.MessageID, bool) {
	return pruneguard.OldestFirst{Keep: k.n}.Kept(v)
}

// What a policy keeps ([pruneguard.Keeper]) goes last: the furthest safe
// prune leaves it while older units bring the Context to the budget, and
// takes it, oldest first, only when nothing else does.
func TestReachKeepsWhatThePolicyKeeps(t *testing.T) {
	// sys 100 (pinned), task 10, then four units of 105: 530 in all, and
	// the model's answer, which read them all. The last four messages are
	// r2, a3, r3 and the answer: units a2 and a3 are kept.
	for _, pol := range []pruneguard.Policy{keeper{n: 4}, pruneguard.OldestFirst{Keep: 4}, pruneguard.KeepLastToolUses{Keep: 2}} {
		for _, tc := range []struct {
			budget int
			want   []pruneguard.MessageID
		}{
			{310, []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1"}},             // the kept units stay
			{205, []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1", "a2", "r2"}}, // one must go
			{1, []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1", "a2", "r2", "a3", "r3"}},
		} {
			c := loopContext(t, pruneguard.Config{}, 100, 100, 100, 100)
			modelRead(t, c, "seen")
			res, err := pruneguard.Guard{Budget: tc.budget, Policy: pol}.Check(c)
			require.NoError(t, err)
			assert.Equal(t, pruneguard.Pruned, res.Outcome, "%T budget %d", pol, tc.budget)
			evicted, _ := evictedBy(res)
			if _, stubs := pol.(pruneguard.KeepLastToolUses); !stubs {
				assert.Equal(t, tc.want, evicted, "%T budget %d", pol, tc.budget)
			}
			for _, id := range tc.want {
				_, ok := c.Message(id)
				assert.False(t, ok, "%T budget %d: %s stayed", pol, tc.budget, id)
			}
			if tc.budget > 1 {
				assert.LessOrEqual(t, c.Tokens(), tc.budget)
				_, ok := c.Message("r3")
				assert.True(t, ok, "%T budget %d: the newest kept unit went", pol, tc.budget)
			}
		}
	}

	// A policy that hides what it keeps through its View is respected
	// whatever the budget.
	c := loopContext(t, pruneguard.Config{}, 100, 100, 100, 100)
	modelRead(t, c, "seen")
	hider := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		v.Hide("a3")
		return pruneguard.Plan{}
	})
	res, err := pruneguard.Guard{Budget: 1, Policy: hider}.Check(c)
	require.NoError(t, err)
	evicted, _ := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1", "a2", "r2"}, evicted)
}

func TestReachSkipsPinnedAndInFlightUnits(t *testing.T) {
	c := loopContext(t, pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed}, 100, 100)
	require.NoError(t, c.Pin("r0"))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a9", Role: pruneguard.RoleAssistant, Tokens: 50,
		Calls: []pruneguard.Call{{ID: "k9", Tool: "read"}}}))
	nothing := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return pruneguard.Plan{} })
	res, err := pruneguard.Guard{Budget: 1, Policy: nothing}.Check(c)
	require.NoError(t, err)
	evicted, _ := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"task", "a1", "r1"}, evicted)
	for _, id := range []pruneguard.MessageID{"sys", "a0", "r0", "a9"} {
		_, ok := c.Message(id)
		assert.True(t, ok, id)
	}
}

// Deferred only when no safe prune of any kind frees anything.
func TestDeferredOnlyWhenNothingIsSafe(t *testing.T) {
	c := postContext(t, pruneguard.Config{}, 100, 200)
	modelRead(t, c, "seen")
	before := state(c)
	res, err := pruneguard.Guard{Budget: 50}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen)
	require.Len(t, res.Refused, 1, "both units, next to each other, held for one reason")
	assert.Equal(t, []pruneguard.UnitID{"a0", "a1"}, res.Refused[0].Units)
	assert.Equal(t, []pruneguard.MessageID{"a0", "r0", "a1", "r1"}, res.Refused[0].Messages, "the calls and the results")
	assert.NotEqual(t, before, state(c), "the refusals are remembered")

	// One safe unit among them: the guard finds it and prunes.
	require.NoError(t, c.Append(pruneguard.Message{ID: "note", Role: pruneguard.RoleUser, Tokens: 30, Class: pruneguard.Reconstructible}))
	modelRead(t, c, "seen2")
	require.NoError(t, c.Append(pruneguard.Message{ID: "last", Role: pruneguard.RoleUser, Tokens: 1, Pinned: true}))
	res, err = pruneguard.Guard{Budget: 50}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	evicted, _ := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"note"}, evicted)
}

// The furthest safe prune goes through the Screen too.
func TestReachIsScreened(t *testing.T) {
	c := loopContext(t, pruneguard.Config{}, 100, 100, 100)
	modelRead(t, c, "seen")
	screened := 0
	screen := pruneguard.ScreenFunc(func(d *pruneguard.Decision) []*pruneguard.Violation {
		screened++
		for _, u := range d.Units {
			if u == "a1" {
				return []*pruneguard.Violation{{Gate: pruneguard.GateScreen, Code: "provider-rule", Units: []pruneguard.UnitID{"a1"}}}
			}
		}
		return nil
	})
	nothing := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return pruneguard.Plan{} })
	res, err := pruneguard.Guard{Budget: 1, Policy: nothing, Screen: screen}.Check(c)
	require.NoError(t, err)
	assert.Positive(t, screened)
	_, ok := c.Message("r1")
	assert.True(t, ok, "the screen kept a1's unit")
	evicted, _ := evictedBy(res)
	assert.Equal(t, []pruneguard.MessageID{"task", "a0", "r0", "a2", "r2"}, evicted)
	require.NotEmpty(t, res.Refused)
	assert.ErrorIs(t, res.Refused[0], pruneguard.ErrScreen)
	assert.Equal(t, "screen", res.Refused[0].Gate.String())

	// A screen violation that names nothing refuses the whole decision.
	c = loopContext(t, pruneguard.Config{}, 100)
	modelRead(t, c, "seen")
	no := pruneguard.ScreenFunc(func(*pruneguard.Decision) []*pruneguard.Violation {
		return []*pruneguard.Violation{{Gate: pruneguard.GateScreen, Code: "no"}}
	})
	res, err = pruneguard.Guard{Budget: 1, Screen: no}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	assert.Empty(t, res.Decisions)
}

// A check over budget with many rounds of refusals still ends: each
// round takes something out.
func TestReachEndsOverManyRefusals(t *testing.T) {
	sizes := make([]int, 200)
	for i := range sizes {
		sizes[i] = 10
	}
	c := postContext(t, pruneguard.Config{}, sizes...)
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 50, Rounds: 3}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	units := refusedUnits(c.Refusals())
	assert.Len(t, units, 200, "every unit refused, for its call and its result together")
	assert.Len(t, slices.Compact(units), 200, fmt.Sprint("every unit refused, once"))
}

// A tool whose arguments stand behind no schema and that cannot be
// tombstoned makes every prune refused: the check ends, Deferred, however
// often the refusal comes back.
func TestCheckEndsWhenEveryPruneIsRefused(t *testing.T) {
	c := loopContext(t, pruneguard.Config{}, 100, 100)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "upd", NoTombstone: true, Schema: []byte(`{"type":"object"}`)}))
	d, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"upd"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.NoError(t, c.Append(pruneguard.Message{ID: "ghost", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "g", Tool: "upd", Args: []byte(`{}`)}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "gr", Role: pruneguard.RoleTool, Tokens: 5, Answers: []pruneguard.CallID{"g"}}))
	if len(c.Unsound()) == 0 {
		t.Skip("the Context repairs or tolerates this tool")
	}
	res, err := pruneguard.Guard{Budget: 50}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	assert.ErrorIs(t, res.Reason, pruneguard.ErrSchema)
}

// What the Screen refused answers the body as it stood: once a decision
// is applied, the guard tries it again in the same check, so a unit whose
// eviction would have broken a rule while another stood goes once that
// one has.
func TestScreenRefusalsAreRetriedAfterADecision(t *testing.T) {
	c := loopContext(t, pruneguard.Config{}, 100, 100)
	modelRead(t, c, "seen")
	// a0's unit may not go while a1 is in the prompt.
	screen := pruneguard.ScreenFunc(func(d *pruneguard.Decision) []*pruneguard.Violation {
		if _, a1 := c.Message("a1"); a1 && slices.Contains(d.Evict, "a0") {
			return []*pruneguard.Violation{{Gate: pruneguard.GateScreen, Code: "needs-a1-gone",
				Units: []pruneguard.UnitID{"a0"}, Messages: []pruneguard.MessageID{"a0", "r0"}}}
		}
		return nil
	})
	res, err := pruneguard.Guard{Budget: 101, Screen: screen}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	for _, id := range []pruneguard.MessageID{"task", "a0", "r0", "a1", "r1"} {
		_, ok := c.Message(id)
		assert.False(t, ok, "%s stayed: one check reaches what the screen let go once a1 went", id)
	}
	assert.LessOrEqual(t, c.Tokens(), 101)
	assert.GreaterOrEqual(t, len(res.Decisions), 2)
}

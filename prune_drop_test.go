package pruneguard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// dropContext holds n units of a call and its result, every other one of
// an irreducible tool, and returns the plan evicting them all.
func dropContext(t *testing.T, n int) (*pg.Context, pg.Plan) {
	t.Helper()
	c := pg.NewContext(pg.Config{Regen: pg.RegenDropUnsafe})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "safe", Output: pg.Reconstructible}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "unsafe", Output: pg.Irreducible}))
	var plan pg.Plan
	for i := range n {
		tool := "safe"
		if i%2 == 1 {
			tool = "unsafe"
		}
		id := fmt.Sprint(i)
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("a" + id), Role: pg.RoleAssistant, Tokens: 1, Calls: []pg.Call{{ID: pg.CallID("k" + id), Tool: tool}}}))
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("r" + id), Tokens: 10, Answers: []pg.CallID{pg.CallID("k" + id)}}))
		plan.Evict = append(plan.Evict, pg.MessageID("a"+id))
	}
	modelRead(t, c, "seen")
	return c, plan
}

// With pg.RegenDropUnsafe, the units the regenerability gate refuses leave
// the plan together, the rest in its order.
func TestDropUnsafeUnitsLeavesTheRest(t *testing.T) {
	c, plan := dropContext(t, 9)
	d, err := c.Prune(plan)
	require.NoError(t, err)
	assert.Equal(t, []pg.MessageID{"a0", "r0", "a2", "r2", "a4", "r4", "a6", "r6", "a8", "r8"}, d.Evict)
	assert.Equal(t, []pg.UnitID{"a0", "a2", "a4", "a6", "a8"}, d.Units)
	require.Len(t, d.Refused, 4, "one refusal for each of the four refused units, naming its messages")
	for i, v := range d.Refused {
		assert.Equal(t, pg.GateRegen, v.Gate)
		id := fmt.Sprint(2*i + 1)
		assert.Equal(t, []pg.UnitID{pg.UnitID("a" + id)}, v.Units)
		assert.Equal(t, []pg.MessageID{pg.MessageID("a" + id), pg.MessageID("r" + id)}, v.Messages)
	}
	assert.Equal(t, 5*11, d.Freed)
}

// Dropping the refused units costs in proportion to the plan, not to the
// plan times the units refused.
func TestDropUnsafeUnitsCostFollowsThePlan(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	cost := func(n int) time.Duration {
		c, plan := dropContext(t, n)
		best := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			d, err := c.Prune(plan)
			best = min(best, time.Since(start))
			require.NoError(t, err)
			require.Len(t, d.Units, (n+1)/2)
		}
		return best
	}
	// Linear is 20 times; dropping unit by unit was about 400 times. A
	// machine busy elsewhere gets three tries.
	var small, large time.Duration
	for range 3 {
		small, large = cost(2_000), cost(40_000)
		t.Logf("a prune dropping 1,000 of 2,000 units: %v; 20,000 of 40,000: %v", small, large)
		if large < 60*small+2*time.Millisecond {
			break
		}
	}
	assert.Less(t, large, 60*small+2*time.Millisecond)
}

// A decision that evicts some units and stubs results of others lists
// only the evicted units in Units; its audit log names the unit of each
// message, evictions first.
func TestDecisionUnitsLeaveOutStubbedUnits(t *testing.T) {
	c := loopContext(t, pg.Config{}, 50, 60, 70)
	modelRead(t, c, "seen")
	d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"a2", "r2", "a0", "r0"}, Stub: []pg.MessageID{"r1"}})
	require.NoError(t, err)
	assert.Equal(t, []pg.UnitID{"a0", "a2"}, d.Units)
	assert.Equal(t, []pg.MessageID{"a0", "r0", "a2", "r2"}, d.Evict)
	assert.Equal(t, []pg.MessageID{"r1"}, d.Stub)
	var units []pg.UnitID
	var tokens []int
	for _, r := range d.Records() {
		units = append(units, r.Unit)
		tokens = append(tokens, r.Tokens)
	}
	assert.Equal(t, []pg.UnitID{"a0", "a0", "a2", "a2", "a1"}, units)
	assert.Equal(t, []int{5, 50, 5, 70, 60}, tokens)
	assert.Equal(t, 5+50+5+70+60-pg.DefaultStubTokens, d.Freed)
}

package pruneguard_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// hoardSession builds a Context with hoarding on (Config.HoardTokens 500)
// and n large messages none of which can ever be hoarded: user text
// (irreducible by default), results of an open-world tool, and a large
// read marked with a fact; then one small unit of a read, "a" and "r",
// and a small user message "last".
func hoardSession(tb testing.TB, n int) *pruneguard.Context {
	tb.Helper()
	c := pruneguard.NewContext(pruneguard.Config{HoardTokens: 500})
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	must(c.RegisterTool(pruneguard.Tool{Name: "fetch", Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true)}}))
	for i := 0; c.Len() < n; i++ {
		s := strconv.Itoa(i)
		switch i % 3 {
		case 0:
			must(c.Append(pruneguard.Message{ID: pruneguard.MessageID("u" + s), Role: pruneguard.RoleUser, Tokens: 1000}))
		default:
			tool := "fetch"
			if i%30 == 1 {
				tool = "read"
			}
			k := pruneguard.CallID("k" + s)
			must(c.Append(pruneguard.Message{ID: pruneguard.MessageID("a" + s), Role: pruneguard.RoleAssistant, Tokens: 5,
				Calls: []pruneguard.Call{{ID: k, Tool: tool}}}))
			must(c.Append(pruneguard.Message{ID: pruneguard.MessageID("r" + s), Role: pruneguard.RoleTool, Tokens: 1000,
				Answers: []pruneguard.CallID{k}}))
			if tool == "read" {
				must(c.Mark(pruneguard.MessageID("r"+s), pruneguard.TransientState))
			}
		}
	}
	must(c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 10, Calls: []pruneguard.Call{{ID: "k", Tool: "read"}}}))
	must(c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Tokens: 10, Answers: []pruneguard.CallID{"k"}}))
	must(c.Append(pruneguard.Message{ID: "last", Role: pruneguard.RoleUser, Tokens: 10}))
	return c
}

// With hoarding on, an under-budget check with nothing to hoard neither
// allocates nor uses a compaction id, however many large messages that
// cannot be hoarded the Context holds; a decision reports nothing
// hoarded.
func TestHoardingNothingHoardableIsFree(t *testing.T) {
	for _, n := range []int{1000, 20000} {
		t.Run(fmt.Sprintf("messages=%d", n), func(t *testing.T) {
			c := hoardSession(t, n)
			for _, mode := range []pruneguard.HoardMode{pruneguard.HoardStub, pruneguard.HoardEvict} {
				g := pruneguard.Guard{Budget: 1 << 30, Hoard: mode}
				allocs := testing.AllocsPerRun(20, func() {
					r, err := g.Check(c)
					if err != nil || r.Outcome != pruneguard.UnderBudget || r.Compaction != "" {
						t.Fatal(r.Outcome, r.Compaction, err)
					}
				})
				assert.Zero(t, allocs, mode)
			}
			d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r"}})
			require.NoError(t, err)
			assert.Empty(t, d.Hoarded)
			// The checks that returned at once used no compaction id.
			res, err := pruneguard.Guard{Budget: c.Tokens() - 1}.Check(c)
			require.NoError(t, err)
			assert.Equal(t, "pruneguard-1", res.Compaction)
		})
	}
}

// With hoarding on, a Prune of one small unit and an under-budget check
// with nothing to hoard cost the same with 1,000 messages as with
// 100,000: hoarding costs in proportion to what can be hoarded, not to
// the length of the Context.
func TestHoardingCostIndependentOfContext(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	best := func(reps int, f func()) time.Duration {
		b := time.Duration(1 << 62)
		for range reps {
			start := time.Now()
			f()
			b = min(b, time.Since(start))
		}
		return b
	}
	measure := func(n int) (prune, check time.Duration) {
		c := hoardSession(t, n)
		plan := pruneguard.Plan{Evict: []pruneguard.MessageID{"r"}}
		prune = best(50, func() {
			if _, err := c.Prune(plan); err != nil {
				t.Fatal(err)
			}
		})
		g := pruneguard.Guard{Budget: 1 << 30, Hoard: pruneguard.HoardStub}
		check = best(50, func() {
			if _, err := g.Check(c); err != nil {
				t.Fatal(err)
			}
		})
		return prune, check
	}
	p1, c1 := measure(1000)
	p2, c2 := measure(100_000)
	t.Logf("Prune of one unit: %v at 1,000 messages, %v at 100,000", p1, p2)
	t.Logf("under-budget Check, HoardStub: %v at 1,000 messages, %v at 100,000", c1, c2)
	assert.Less(t, p2, 4*p1+20*time.Microsecond)
	assert.Less(t, c2, 4*c1+20*time.Microsecond)
}

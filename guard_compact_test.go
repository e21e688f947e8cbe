package pruneguard_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// orderTurn appends one turn of an order-checking session: the user's
// request, the model's call of an open-world tool, its result (which
// cannot be obtained again), and the model's answer.
func orderTurn(t testing.TB, c *pruneguard.Context, i int) string {
	t.Helper()
	n := strconv.Itoa(i)
	order := "ORD-" + strconv.Itoa(10000+i)
	for _, m := range []pruneguard.Message{
		{ID: pruneguard.MessageID("u" + n), Role: pruneguard.RoleUser, Content: []byte("Check the next order, number " + n + ".")},
		{ID: pruneguard.MessageID("a" + n), Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: pruneguard.CallID("c" + n), Tool: "lookup", Args: json.RawMessage(`{"q":"next"}`)}}},
		{ID: pruneguard.MessageID("r" + n), Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{pruneguard.CallID("c" + n)},
			Content: []byte(`{"order":"` + order + `","status":"held","note":"` + strings.Repeat("lorem ipsum ", 40) + `"}`)},
		{ID: pruneguard.MessageID("b" + n), Role: pruneguard.RoleAssistant, Content: []byte("Order " + order + " is held.")},
	} {
		require.NoError(t, c.Append(m))
	}
	return order
}

// With a store, a guard that compacts spills each run before it
// summarizes it: the summaries stay small, and every fact is in the
// prompt or can be read back by following the pointers the prompt shows,
// summary after summary.
func TestGuardCompactsWithSpill(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := pruneguard.NewContext(pruneguard.Config{Counter: pruneguard.ApproxCounter{}, Resolver: sp})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "lookup"}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Pinned: true, Content: []byte("You look orders up.")}))
	g := pruneguard.Guard{Budget: 1500, Trigger: 2500, Spill: sp, Policy: pruneguard.OldestFirst{Keep: 4},
		Summarizer: pruneguard.Digest{PointerText: spill.PointerText}}
	var orders []string
	largest := 0
	for i := range 300 {
		orders = append(orders, orderTurn(t, c, i))
		res, err := g.Check(c)
		require.NoError(t, err, "turn %d", i)
		require.LessOrEqual(t, c.Tokens(), g.Trigger, "turn %d: %v", i, res.Reason)
		for _, d := range res.Decisions {
			if d.Summary != nil {
				largest = max(largest, d.Summary.Tokens)
				assert.NotEmpty(t, d.Summary.Pointers, "a spilled run's summary carries its pointer")
				continue
			}
			for _, id := range d.Evict {
				assert.NotContains(t, string(id), "summary", "turn %d: a summary leaves only in a later summary", i)
			}
		}
	}
	assert.Less(t, largest, 1000, "a summary stays small when its run is spilled")
	t.Logf("largest summary: %d tokens", largest)

	// Follow the pointers from the prompt, as a model calling recall would.
	var prompt strings.Builder
	for _, e := range c.Snapshot() {
		m, _ := c.Message(e.ID)
		prompt.Write(m.Content)
	}
	reach := prompt.String()
	key := regexp.MustCompile(`seg-[0-9a-f-]+`)
	seen := map[string]bool{}
	for todo := key.FindAllString(reach, -1); len(todo) > 0; {
		k := todo[0]
		todo = todo[1:]
		if seen[k] {
			continue
		}
		seen[k] = true
		ms, err := sp.Recall(t.Context(), pruneguard.Pointer{Store: spill.DefaultName, Key: k})
		require.NoError(t, err)
		for _, m := range ms {
			reach += string(m.Content)
			todo = append(todo, key.FindAllString(string(m.Content), -1)...)
		}
	}
	for _, o := range orders {
		assert.Contains(t, reach, o)
	}
}

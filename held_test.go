package pruneguard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// A check that ends over its budget says what fills the prompt that it
// could not touch (Result.Held, and CeilingError.Held and its text):
// pointer lines, schemas and tombstones, pinned units, units in flight,
// unread units, units the gates refused. When it met no refusal, its
// Reason is a *HeldError that says so, never nil.

// spilledTurns appends n units of a pure read (each 150 tokens, each
// spilled behind its own pointer) and a last message of the model.
func spilledTurns(t *testing.T, c *pruneguard.Context, n int) {
	t.Helper()
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pure}))
	for i := range n {
		k := pruneguard.CallID(fmt.Sprint("k", i))
		a, r := pruneguard.MessageID(fmt.Sprint("a", i)), pruneguard.MessageID(fmt.Sprint("r", i))
		mustDo(t,
			c.Append(pruneguard.Message{ID: a, Role: pruneguard.RoleAssistant, Tokens: 50, Calls: []pruneguard.Call{{ID: k, Tool: "read"}}}),
			c.Append(pruneguard.Message{ID: r, Role: pruneguard.RoleTool, Tokens: 100, Answers: []pruneguard.CallID{k}}),
			c.Spill(a, ptr(fmt.Sprint("seg", i))),
			c.Spill(r, ptr(fmt.Sprint("seg", i))),
		)
	}
	mustDo(t, c.Append(pruneguard.Message{ID: "end", Role: pruneguard.RoleAssistant, Tokens: 10, Content: []byte("done"), Pinned: true}))
}

func TestOverBudgetPointerLinesAreNamed(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Resolver: resolveAll, PointerTokens: 100})
	mustDo(t, c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 40, Content: []byte("the task"), Pinned: true}))
	spilledTurns(t, c, 3)
	res, err := pruneguard.Guard{Budget: 200}.Check(c)
	require.NoError(t, err)
	require.Equal(t, pruneguard.Pruned, res.Outcome)
	require.Greater(t, res.After, 200, "the pointer lines keep it over")
	assert.Empty(t, res.Refused, "nothing was refused")
	assert.Equal(t, pruneguard.Held{Lines: 300, Pinned: 50}, res.Held, "three pointer lines of 100, the pinned task and last word")
	var he *pruneguard.HeldError
	require.ErrorAs(t, res.Reason, &he, "the check says why it stopped")
	assert.ErrorIs(t, res.Reason, pruneguard.ErrHeld)
	assert.Equal(t, res.Held, he.Held)
	assert.Contains(t, he.Error(), "pointer lines 300")

	// Under a ceiling, the error names what fills the prompt, the lines
	// first, not only the 40-token task the gates refused.
	c = pruneguard.NewContext(pruneguard.Config{Resolver: resolveAll, PointerTokens: 100})
	mustDo(t, c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 40, Content: []byte("the task")}))
	spilledTurns(t, c, 3)
	res, err = pruneguard.Guard{Budget: 200, Ceiling: 250}.Check(c)
	var ce *pruneguard.CeilingError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, pruneguard.ErrRegen, "the task was refused")
	assert.Equal(t, pruneguard.Held{Lines: 300, Refused: 40, Pinned: 10}, ce.Held)
	assert.Equal(t, res.Held, ce.Held)
	text := ce.Error()
	assert.Contains(t, text, "held: pointer lines 300, refused 40, pinned 10", "largest first")
	assert.Less(t, strings.Index(text, "pointer lines"), strings.Index(text, "irreducible unit task"), "what fills the prompt comes first")
}

func TestOverBudgetSchemasAreNamed(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"` + strings.Repeat("where to look ", 40) + `"}}}`)
	c := pruneguard.NewContext(pruneguard.Config{Counter: pruneguard.ApproxCounter{}})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read", Schema: schema, Annotations: pure}),
		c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("hello"), Pinned: true}),
		c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Content: []byte("hi"), Pinned: true}))
	st, _ := c.Tool("read")
	res, err := pruneguard.Guard{Budget: 50}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	assert.Equal(t, pruneguard.Held{Tools: st.Tokens, Pinned: 3}, res.Held)
	assert.Positive(t, res.Held.Tools)
	var he *pruneguard.HeldError
	require.ErrorAs(t, res.Reason, &he)
	assert.Contains(t, he.Error(), fmt.Sprintf("schemas and tombstones %d", st.Tokens))
}

func TestOverBudgetHeldBackUnitsAreNamed(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pure}),
		c.RegisterTool(pruneguard.Tool{Name: "post"}), // irreducible results
		// Pinned: the system prompt.
		c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 30, Pinned: true}),
		// Refused: an irreducible result, read.
		c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{{ID: "k1", Tool: "post"}}}),
		c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 200, Answers: []pruneguard.CallID{"k1"}}),
		// In flight: a call waiting for its result.
		c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 7, Calls: []pruneguard.Call{{ID: "k2", Tool: "read"}, {ID: "k3", Tool: "read"}}}),
		c.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 300, Answers: []pruneguard.CallID{"k2"}}),
		// Unread: a result after the model's last message.
		c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Tokens: 11, Calls: []pruneguard.Call{{ID: "k4", Tool: "read"}}}),
		c.Append(pruneguard.Message{ID: "r4", Role: pruneguard.RoleTool, Tokens: 400, Answers: []pruneguard.CallID{"k4"}}),
	)
	res, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Held{Pinned: 30, Refused: 205, InFlight: 307, Unread: 411}, res.Held)
	for _, s := range []string{"unread 411", "in flight 307", "refused 205", "pinned 30"} {
		assert.Contains(t, res.Held.String(), s)
	}
	assert.True(t, errors.Is(res.Reason, pruneguard.ErrRegen), "the refusal is the reason: %v", res.Reason)

	// Within the budget nothing is held to account.
	res, err = pruneguard.Guard{Budget: 10000}.Check(c)
	require.NoError(t, err)
	assert.Zero(t, res.Held)
}

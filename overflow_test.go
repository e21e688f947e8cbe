package pruneguard_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// Token counts that cannot be summed are bad input: whatever event adds
// tokens (a message, a chunk, calls counted at Close, a schema counted,
// a schema asked back, a pointer that a stub shows now, a decision's
// stubs, pointer lines and tombstones), the Context's total never wraps
// round to a negative number, which a guard would read as under budget.

// overflowErr requires err to be the InputError of op for id, matching
// ErrTokenOverflow and ErrInvalidInput.
func overflowErr(t *testing.T, err error, op, id string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, pruneguard.ErrTokenOverflow)
	assert.ErrorIs(t, err, pruneguard.ErrInvalidInput)
	var ie *pruneguard.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, op, ie.Op)
	assert.Equal(t, id, ie.ID)
}

// saved returns the Context's saved state, to compare before and after
// an event that must change nothing.
func saved(t *testing.T, c *pruneguard.Context) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, c.Save(&b))
	return b.String()
}

// counterOf counts a JSON object as n tokens and anything else as one.
type counterOf int

func (n counterOf) Count(b []byte) int {
	if len(b) > 0 && b[0] == '{' {
		return int(n)
	}
	return 1
}

func TestAppendOverflowIsBadInput(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: math.MaxInt/2 + 1}))
	before := saved(t, c)
	err := c.Append(pruneguard.Message{ID: "b", Role: pruneguard.RoleUser, Tokens: math.MaxInt/2 + 1})
	overflowErr(t, err, "append", "b")
	assert.Equal(t, math.MaxInt/2+1, c.Tokens(), "the total did not wrap")
	assert.Equal(t, before, saved(t, c), "nothing changed")
	_, held := c.Message("b")
	assert.False(t, held)

	// Open is refused the same way.
	overflowErr(t, c.Open(pruneguard.Message{ID: "s", Role: pruneguard.RoleAssistant, Tokens: math.MaxInt/2 + 1}), "open", "s")

	// What is held still fits: a guard sees a context over its budget.
	res, _ := pruneguard.Guard{Budget: 100}.Check(c)
	assert.NotEqual(t, pruneguard.UnderBudget, res.Outcome)
	assert.Positive(t, res.Before)
}

func TestCountedAppendOverflowIsBadInput(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Counter: counterOf(math.MaxInt / 2)})
	// Three calls' arguments of MaxInt/2 tokens each cannot be summed.
	m := pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{
		{ID: "c1", Tool: "t", Args: json.RawMessage(`{"x":1}`)},
		{ID: "c2", Tool: "t", Args: json.RawMessage(`{"x":2}`)},
		{ID: "c3", Tool: "t", Args: json.RawMessage(`{"x":3}`)},
	}}
	before := saved(t, c)
	overflowErr(t, c.Append(m), "append", "a")
	assert.Equal(t, before, saved(t, c))
	assert.Zero(t, c.Tokens())
}

func TestWriteOverflowIsBadInput(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: math.MaxInt - 10}))
	require.NoError(t, c.Open(pruneguard.Message{ID: "s", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("par")}))
	before := saved(t, c)
	overflowErr(t, c.Write("s", []byte("tial"), 6), "write", "s")
	assert.Equal(t, before, saved(t, c), "the chunk was not written")
	require.NoError(t, c.Write("s", []byte("tial"), 5), "what fits is written")
	assert.Equal(t, math.MaxInt, c.Tokens())
}

func TestCloseOverflowIsBadInput(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Counter: counterOf(math.MaxInt / 2)})
	require.NoError(t, c.Open(pruneguard.Message{ID: "s", Role: pruneguard.RoleAssistant}))
	before := saved(t, c)
	err := c.Close("s", pruneguard.Call{ID: "c1", Tool: "t", Args: json.RawMessage(`{"x":1}`)},
		pruneguard.Call{ID: "c2", Tool: "t", Args: json.RawMessage(`{"x":2}`)},
		pruneguard.Call{ID: "c3", Tool: "t", Args: json.RawMessage(`{"x":3}`)})
	overflowErr(t, err, "close", "s")
	assert.Equal(t, before, saved(t, c), "the message is still open, with no calls")
	assert.Equal(t, []pruneguard.MessageID{"s"}, c.OpenMessages())
}

func TestSchemaOverflowIsBadInput(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Counter: counterOf(math.MaxInt / 2)})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: math.MaxInt/2 + 10}))
	before := saved(t, c)
	err := c.RegisterTool(pruneguard.Tool{Name: "t", Schema: json.RawMessage(`{"type":"object"}`)})
	overflowErr(t, err, "register tool", "t")
	assert.Equal(t, before, saved(t, c))
	_, known := c.Tool("t")
	assert.False(t, known)
}

func TestRequestToolOverflowIsBadInput(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Counter: counterOf(math.MaxInt / 2)})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "t", Schema: json.RawMessage(`{"type":"object"}`)}))
	d, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"t"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.Zero(t, c.Tokens())
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: math.MaxInt/2 + 10}))
	before := saved(t, c)
	_, err = c.RequestTool("t")
	overflowErr(t, err, "request tool", "t")
	assert.Equal(t, before, saved(t, c), "the schema stays withdrawn")
}

// readResult is a context with a result of a pure tool, r (5 tokens).
func readResult(t *testing.T, cfg pruneguard.Config) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Output: pruneguard.Reconstructible}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "c", Tool: "read"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Tokens: 5, Answers: []pruneguard.CallID{"c"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "b", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("read")}))
	return c
}

func TestSpillOverflowIsBadInput(t *testing.T) {
	c := readResult(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: math.MaxInt - 100})
	d, err := c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.NoError(t, c.Append(pruneguard.Message{ID: "big", Role: pruneguard.RoleUser, Tokens: 1000}))
	before := saved(t, c)
	// Its stub would show the pointer, of MaxInt-100 tokens, from now on.
	overflowErr(t, c.Spill("r", pruneguard.Pointer{Store: "s", Key: "k"}), "spill", "r")
	assert.Equal(t, before, saved(t, c))
}

func TestStubOverflowIsRefused(t *testing.T) {
	c := readResult(t, pruneguard.Config{StubTokens: math.MaxInt - 10})
	require.NoError(t, c.Append(pruneguard.Message{ID: "big", Role: pruneguard.RoleUser, Tokens: 1000}))
	before := saved(t, c)
	_, err := c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r"}})
	overflowErr(t, err, "prune", "")
	assert.Equal(t, before, saved(t, c))
}

func TestPointerLinesOverflowIsRefused(t *testing.T) {
	c := readResult(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: math.MaxInt / 2})
	require.NoError(t, c.Spill("a", pruneguard.Pointer{Store: "s", Key: "k1"}))
	require.NoError(t, c.Spill("r", pruneguard.Pointer{Store: "s", Key: "k2"}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "big", Role: pruneguard.RoleUser, Tokens: 1000}))
	// Two pointer lines of MaxInt/2 tokens, beside 1,005 tokens held.
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a", "r"}})
	overflowErr(t, err, "prune", "")

	// A decision that fitted when made, and would not once more arrived,
	// is refused by Apply, which changes nothing.
	c = readResult(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: math.MaxInt / 2})
	require.NoError(t, c.Spill("a", pruneguard.Pointer{Store: "s", Key: "k1"}))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a", "r"}})
	require.NoError(t, err)
	require.NoError(t, c.Append(pruneguard.Message{ID: "big", Role: pruneguard.RoleUser, Tokens: math.MaxInt / 2}))
	before := saved(t, c)
	overflowErr(t, c.Apply(d), "apply", "")
	assert.Equal(t, before, saved(t, c))
}

func TestRestoreOverflowIsBadState(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: 7777777}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "b", Role: pruneguard.RoleUser, Tokens: 7777777}))
	state := saved(t, c)
	require.Equal(t, 2, strings.Count(state, `"tokens":7777777`))
	big := strings.ReplaceAll(state, `"tokens":7777777`, `"tokens":`+strconv.Itoa(math.MaxInt/2+1))
	_, err := pruneguard.Restore(bytes.NewReader(pruneguard.Reseal([]byte(big))), pruneguard.Config{})
	assert.ErrorIs(t, err, pruneguard.ErrBadState)
	assert.NotContains(t, err.Error(), "sha256", "the digest holds: what it says is refused")

	// Schemas counted past the largest int beside the messages.
	c = pruneguard.NewContext(pruneguard.Config{Counter: counterOf(7777777)})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: 10}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "t", Schema: json.RawMessage(`{"type":"object"}`)}))
	state = saved(t, c)
	require.Contains(t, state, `"schemaTokens":7777777`)
	big = strings.ReplaceAll(state, `"schemaTokens":7777777`, `"schemaTokens":`+strconv.Itoa(math.MaxInt-5))
	_, err = pruneguard.Restore(bytes.NewReader(pruneguard.Reseal([]byte(big))), pruneguard.Config{Counter: counterOf(7777777)})
	assert.ErrorIs(t, err, pruneguard.ErrBadState)
	assert.NotContains(t, err.Error(), "sha256")

	// Pointer lines of PointerTokens each past the largest int.
	c = readResult(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: 7777777})
	require.NoError(t, c.Spill("a", pruneguard.Pointer{Store: "s", Key: "k1"}))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a", "r"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	state = saved(t, c)
	require.Contains(t, state, `"pointerTokens":7777777`)
	big = strings.ReplaceAll(state, `"pointerTokens":7777777`, `"pointerTokens":`+strconv.Itoa(math.MaxInt-2))
	_, err = pruneguard.Restore(bytes.NewReader(pruneguard.Reseal([]byte(big))), pruneguard.Config{Resolver: resolveAll})
	assert.ErrorIs(t, err, pruneguard.ErrBadState)
	assert.NotContains(t, err.Error(), "sha256")
}

// A Counter that answers a negative count counts nothing: the total
// never goes down for content that arrived.
func TestNegativeCountCountsZero(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Counter: counterOf(-50)})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleUser, Tokens: 10}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "b", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c", Tool: "t", Args: json.RawMessage(`{}`)}}}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "u", Schema: json.RawMessage(`{"type":"object"}`)}))
	assert.Equal(t, 10, c.Tokens())
	m, _ := c.Message("b")
	assert.Zero(t, m.Tokens)
}

// The guard's own arithmetic holds near the largest int: a check over a
// context of nearly MaxInt tokens still compacts what may go (the run it
// asks of the summarizer is twice what it must free, which would wrap).
func TestGuardArithmeticNearMaxInt(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: math.MaxInt - 100_000, Pinned: true}))
	for i := range 10 {
		id := pruneguard.MessageID("m" + strings.Repeat("x", i))
		require.NoError(t, c.Append(pruneguard.Message{ID: id, Role: pruneguard.RoleAssistant, Tokens: 1000, Content: []byte("note " + string(id))}))
	}
	g := pruneguard.Guard{Budget: 100, Summarizer: pruneguard.Digest{}}
	res, _ := g.Check(c)
	summarized := false
	for _, d := range res.Decisions {
		summarized = summarized || d.Summary != nil
	}
	assert.True(t, summarized, "the check compacted: %v", res.Reason)
	assert.Less(t, res.After, res.Before)
}

// A policy asked for more than any Context holds proposes what it can.
func TestPolicyAskedForMaxInt(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	for i := range 5 {
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(strings.Repeat("m", i+1)), Role: pruneguard.RoleAssistant, Tokens: 1}))
	}
	p := pruneguard.OldestFirst{}.Propose(c.View(), math.MaxInt)
	assert.Len(t, p.Evict, 5, "every unit")
}

package pruneguard

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func observe(c *Context) state { return capture(c) }

func mustAppend(t *testing.T, c *Context, ms ...Message) {
	t.Helper()
	for _, m := range ms {
		require.NoError(t, c.Append(m))
	}
}

func TestUnitsAreDerived(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c,
		Message{ID: "u1", Role: RoleUser, Tokens: 10},
		Message{ID: "a1", Role: RoleAssistant, Tokens: 20, Calls: []Call{{ID: "c1", Tool: "x"}, {ID: "c2", Tool: "y"}}},
		Message{ID: "r2", Role: RoleTool, Tokens: 5, Answers: []CallID{"c2"}},
		Message{ID: "u2", Role: RoleUser, Tokens: 10},
	)
	require.NoError(t, c.Open(Message{ID: "r1", Role: RoleTool, Answers: []CallID{"c1"}}))
	u, ok := c.UnitOf("r1")
	require.True(t, ok)
	assert.Equal(t, UnitID("a1"), u.ID)
	assert.Equal(t, []MessageID{"a1", "r2", "r1"}, u.Messages)
	assert.Equal(t, []CallID{"c1"}, u.Pending, "a streaming result keeps its call pending")
	assert.True(t, u.Open)
	assert.Equal(t, 25, u.Tokens)
	assert.False(t, c.Settled())

	require.NoError(t, c.Write("r1", []byte("ab"), 3))
	require.NoError(t, c.Write("r1", []byte("cd"), 4))
	require.NoError(t, c.Close("r1"))
	assert.True(t, c.Settled())
	m, _ := c.Message("r1")
	assert.Equal(t, "abcd", string(m.Content))
	assert.Equal(t, 7, m.Tokens)
	assert.Equal(t, 52, c.Tokens())

	units := c.Units()
	var ids []UnitID
	for _, u := range units {
		ids = append(ids, u.ID)
	}
	assert.Equal(t, []UnitID{"u1", "a1", "u2"}, ids)
}

func TestResultAnsweringTwoUnitsJoinsThem(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c,
		Message{ID: "a1", Calls: []Call{{ID: "c1", Tool: "x"}}},
		Message{ID: "a2", Calls: []Call{{ID: "c2", Tool: "x"}}},
		Message{ID: "r", Answers: []CallID{"c1", "c2"}},
	)
	u, _ := c.UnitOf("a2")
	assert.Equal(t, []MessageID{"a1", "a2", "r"}, u.Messages)
	assert.Len(t, c.Units(), 1)
}

func TestCoupleAndPin(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c,
		Message{ID: "think", Role: RoleReasoning, Tokens: 3},
		Message{ID: "a1", Calls: []Call{{ID: "c1", Tool: "x"}}},
		Message{ID: "r1", Answers: []CallID{"c1"}},
	)
	require.NoError(t, c.Couple("think", "a1"))
	u, _ := c.UnitOf("r1")
	assert.Equal(t, UnitID("think"), u.ID)
	assert.Equal(t, []MessageID{"think", "a1", "r1"}, u.Messages)
	require.NoError(t, c.Pin("r1"))
	u, _ = c.UnitOf("think")
	assert.True(t, u.Pinned)
	assert.ErrorIs(t, c.Couple("think", "nope"), ErrUnknownMessage)
	assert.ErrorIs(t, c.Pin("nope"), ErrUnknownMessage)
	require.NoError(t, c.Couple("think"), "coupling one message is a no-op")
}

func TestCallIDMayBeReusedAfterItsResult(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c,
		Message{ID: "a1", Calls: []Call{{ID: "call_0", Tool: "x"}}},
		Message{ID: "r1", Answers: []CallID{"call_0"}},
		Message{ID: "a2", Calls: []Call{{ID: "call_0", Tool: "x"}}},
		Message{ID: "r2", Answers: []CallID{"call_0"}},
	)
	u1, _ := c.UnitOf("r1")
	u2, _ := c.UnitOf("r2")
	assert.Equal(t, UnitID("a1"), u1.ID)
	assert.Equal(t, UnitID("a2"), u2.ID)
}

func TestBadEventsChangeNothing(t *testing.T) {
	c := NewContext(Config{})
	require.NoError(t, c.RegisterTool(Tool{Name: "x", Schema: json.RawMessage(`{"type":"object"}`)}))
	mustAppend(t, c,
		Message{ID: "u1", Role: RoleUser, Tokens: 10},
		Message{ID: "a1", Tokens: 5, Calls: []Call{{ID: "c1", Tool: "x"}, {ID: "c2", Tool: "x"}}},
		Message{ID: "r1", Tokens: 5, Answers: []CallID{"c1"}},
		Message{ID: "a0", Tokens: 5, Calls: []Call{{ID: "done", Tool: "x"}}},
		Message{ID: "r0", Tokens: 5, Answers: []CallID{"done"}},
	)
	require.NoError(t, c.Open(Message{ID: "s1", Tokens: 1}))
	require.NoError(t, c.Append(Message{ID: "closed", Tokens: 1}))

	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"duplicate message id", func() error { return c.Append(Message{ID: "u1"}) }, ErrDuplicateMessage},
		{"empty id", func() error { return c.Append(Message{Tokens: 1}) }, ErrEmptyID},
		{"empty call id", func() error { return c.Append(Message{ID: "z", Calls: []Call{{Tool: "x"}}}) }, ErrEmptyID},
		{"negative tokens", func() error { return c.Append(Message{ID: "z", Tokens: -1}) }, ErrNegativeTokens},
		{"result for unknown call", func() error { return c.Append(Message{ID: "z", Answers: []CallID{"never"}}) }, ErrUnknownCall},
		{"second result", func() error { return c.Append(Message{ID: "z", Answers: []CallID{"c1"}}) }, ErrDuplicateResult},
		{"second result of an answered call", func() error { return c.Append(Message{ID: "z", Answers: []CallID{"done"}}) }, ErrDuplicateResult},
		{"one call answered twice in a message", func() error { return c.Append(Message{ID: "z", Answers: []CallID{"c2", "c2"}}) }, ErrDuplicateResult},
		{"answer to own call", func() error {
			return c.Append(Message{ID: "z", Calls: []Call{{ID: "k", Tool: "x"}}, Answers: []CallID{"k"}})
		}, ErrUnknownCall},
		{"pending call id reused", func() error { return c.Append(Message{ID: "z", Calls: []Call{{ID: "c2", Tool: "x"}}}) }, ErrDuplicateCall},
		{"call id twice in a batch", func() error {
			return c.Append(Message{ID: "z", Calls: []Call{{ID: "k", Tool: "x"}, {ID: "k", Tool: "x"}}})
		}, ErrDuplicateCall},
		{"valid answer with a bad one", func() error { return c.Append(Message{ID: "z", Answers: []CallID{"c2", "never"}}) }, ErrUnknownCall},
		{"open duplicate", func() error { return c.Open(Message{ID: "s1"}) }, ErrDuplicateMessage},
		{"chunk for closed message", func() error { return c.Write("closed", []byte("x"), 1) }, ErrClosedMessage},
		{"chunk for unknown message", func() error { return c.Write("nope", []byte("x"), 1) }, ErrUnknownMessage},
		{"negative chunk tokens", func() error { return c.Write("s1", []byte("x"), -2) }, ErrNegativeTokens},
		{"close closed", func() error { return c.Close("closed") }, ErrClosedMessage},
		{"close unknown", func() error { return c.Close("nope") }, ErrUnknownMessage},
		{"close with pending call id", func() error { return c.Close("s1", Call{ID: "c2", Tool: "x"}) }, ErrDuplicateCall},
		{"close with empty call id", func() error { return c.Close("s1", Call{Tool: "x"}) }, ErrEmptyID},
		{"spill unknown", func() error { return c.Spill("nope", Pointer{Store: "s", Key: "k"}) }, ErrUnknownMessage},
		{"mark unknown", func() error { return c.Mark("nope", NegativeResult) }, ErrUnknownMessage},
		{"step on unknown message", func() error { return c.PlanStep("s", "u1", "nope") }, ErrUnknownMessage},
		{"step without id", func() error { return c.PlanStep("", "u1") }, ErrEmptyID},
		{"complete unknown step", func() error { return c.CompleteStep("nope") }, ErrUnknownStep},
		{"tool without name", func() error { return c.RegisterTool(Tool{}) }, ErrEmptyID},
		{"tool with bad schema", func() error { return c.RegisterTool(Tool{Name: "y", Schema: json.RawMessage(`{`)}) }, ErrBadSchema},
		{"request unknown tool", func() error { _, err := c.RequestTool("nope"); return err }, ErrUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := observe(c)
			err := tt.do()
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, ErrInvalidInput)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Regexp(t, `^pruneguard: `, err.Error())
			assert.Equal(t, before, observe(c), "a refused event must change nothing")
		})
	}
}

func TestResultForPrunedCall(t *testing.T) {
	c := NewContext(Config{})
	withoutGates(c, GateBoundary, GateRegen)
	mustAppend(t, c, Message{ID: "a1", Calls: []Call{{ID: "c1", Tool: "x"}}})
	d, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	err = c.Append(Message{ID: "r1", Answers: []CallID{"c1"}})
	assert.ErrorIs(t, err, ErrPrunedCall)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "c1", ie.ID)
	assert.Equal(t, "append", ie.Op)
}

func TestCloseAddsLateCalls(t *testing.T) {
	c := NewContext(Config{})
	require.NoError(t, c.Open(Message{ID: "a1", Role: RoleAssistant}))
	require.NoError(t, c.Close("a1", Call{ID: "c1", Tool: "x"}))
	assert.Equal(t, []CallID{"c1"}, c.Pending())
	m, _ := c.Message("a1")
	require.Len(t, m.Calls, 1)
	mustAppend(t, c, Message{ID: "r1", Answers: []CallID{"c1"}})
	assert.Empty(t, c.Pending())
}

func TestZeroContextIsUsable(t *testing.T) {
	var c Context
	d, err := c.Prune(Plan{})
	require.NoError(t, err)
	assert.True(t, d.Empty())
	_, err = c.Prune(Plan{Evict: []MessageID{"x"}})
	assert.ErrorIs(t, err, ErrUnknownMessage)
	require.NoError(t, c.Append(Message{ID: "m", Tokens: 4}))
	assert.Equal(t, 4, c.Tokens())
	assert.Equal(t, 1, c.Len())
}

func TestMessagesAreCopies(t *testing.T) {
	c := NewContext(Config{})
	content := []byte("abc")
	calls := []Call{{ID: "c1", Tool: "x"}}
	require.NoError(t, c.Append(Message{ID: "a", Content: content, Calls: calls}))
	content[0] = 'z'
	calls[0].ID = "changed"
	m, _ := c.Message("a")
	assert.Equal(t, "abc", string(m.Content))
	assert.Equal(t, CallID("c1"), m.Calls[0].ID)
	m.Content[0] = 'q'
	m2, _ := c.Message("a")
	assert.Equal(t, "abc", string(m2.Content))
}

func TestSnapshotEntries(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c,
		Message{ID: "sys", Role: RoleSystem, Tokens: 7, Pinned: true},
		Message{ID: "a1", Role: RoleAssistant, Tokens: 3, Calls: []Call{{ID: "c1", Tool: "grep"}, {ID: "c2", Tool: "ls"}}},
		Message{ID: "r1", Role: RoleTool, Tokens: 30, Answers: []CallID{"c1"}},
	)
	es := c.Snapshot()
	require.Len(t, es, 3)
	assert.True(t, es[0].Pinned)
	assert.Equal(t, []string{"grep", "ls"}, es[1].Tools)
	assert.Equal(t, 2, es[1].Calls)
	assert.True(t, es[1].Pending)
	assert.True(t, es[2].Result)
	assert.Equal(t, []string{"grep"}, es[2].Tools)
	assert.Equal(t, UnitID("a1"), es[2].Unit)
}

// Long lists of calls and answers are checked as short ones are: the
// first duplicate is the one reported.
func TestLongCallLists(t *testing.T) {
	c := NewContext(Config{})
	var calls []Call
	var answers []CallID
	for i := range 40 {
		id := CallID(fmt.Sprint("k", i))
		calls = append(calls, Call{ID: id, Tool: "x"})
		answers = append(answers, id)
	}
	dup := append(slices.Clone(calls), Call{ID: "k3", Tool: "x"}, Call{ID: "k7", Tool: "x"})
	var ie *InputError
	require.ErrorAs(t, c.Append(Message{ID: "a0", Calls: dup}), &ie)
	assert.Equal(t, "k3", ie.ID)
	assert.ErrorIs(t, ie, ErrDuplicateCall)
	own := Message{ID: "a0", Calls: calls, Answers: []CallID{"k39"}}
	assert.ErrorIs(t, c.Append(own), ErrUnknownCall, "a message may not answer its own call")
	require.NoError(t, c.Append(Message{ID: "a1", Calls: calls}))
	twice := append(slices.Clone(answers), "k5")
	require.ErrorAs(t, c.Append(Message{ID: "r1", Answers: twice}), &ie)
	assert.Equal(t, "k5", ie.ID)
	assert.ErrorIs(t, ie, ErrDuplicateResult)
	require.NoError(t, c.Append(Message{ID: "r1", Answers: answers}))
	assert.True(t, c.Settled())
	assert.Equal(t, 0, len(c.Pending()))
	u, _ := c.UnitOf("r1")
	assert.Equal(t, []MessageID{"a1", "r1"}, u.Messages)
}

package pruneguard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// orphaned: an old batch of two pure reads whose second result never
// came, then a later turn.
func orphaned(t *testing.T) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(pruneguard.Config{})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 10, Calls: []pruneguard.Call{{ID: "c1", Tool: "read_file"}, {ID: "c2", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 500, Answers: []pruneguard.CallID{"c1"}}),
		c.Append(pruneguard.Message{ID: "u2", Role: pruneguard.RoleUser, Tokens: 10, Content: []byte("go on")}),
	)
	return c
}

func TestAbandonClosesTheUnit(t *testing.T) {
	c := orphaned(t)
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	var de *pruneguard.DeferredError
	require.ErrorAs(t, err, &de, "the orphan blocks every prune")
	assert.Equal(t, []pruneguard.CallID{"c2"}, de.Pending)

	require.NoError(t, c.Abandon("c2"))
	assert.True(t, c.Settled())
	assert.Empty(t, c.Pending())
	u, _ := c.UnitOf("a1")
	assert.Empty(t, u.Pending)
	assert.False(t, c.Snapshot()[0].Pending)
	// The unit closed and is judged like any other: the model has not
	// read r1 yet, so it stays until the model answers.
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.NoError(t, err)
	assert.Empty(t, d.Evict)
	require.Len(t, d.Refused, 1)
	assert.Equal(t, pruneguard.CodeUnread, d.Refused[0].Code)
	mustDo(t, c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 10, Content: []byte("going on without the second file")}))
	d, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"a1", "r1"}, d.Evict)
	require.NoError(t, c.Apply(d))

	// A late result is refused, the call pruned or not.
	err = c.Append(pruneguard.Message{ID: "late", Answers: []pruneguard.CallID{"c2"}})
	assert.ErrorIs(t, err, pruneguard.ErrAbandonedCall)
	var ie *pruneguard.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "c2", ie.ID)
}

func TestAbandonedUnitsAreStillJudged(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "pay"}))
	mustDo(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k", Tool: "pay"}}}))
	require.NoError(t, c.Abandon("k"))
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a"}})
	assert.Equal(t, []string{"a/irreducible"}, codes(t, err), "a payment call stays, answered or not")
}

func TestLateResultForAnAbandonedCall(t *testing.T) {
	for _, open := range []bool{false, true} {
		c := orphaned(t)
		require.NoError(t, c.Abandon("c2"))
		before := c.Messages()
		m := pruneguard.Message{ID: "late", Answers: []pruneguard.CallID{"c2"}}
		err := c.Append(m)
		if open {
			err = c.Open(m)
		}
		assert.ErrorIs(t, err, pruneguard.ErrAbandonedCall)
		assert.ErrorIs(t, err, pruneguard.ErrInvalidInput)
		var ie *pruneguard.InputError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "c2", ie.ID)
		assert.Equal(t, before, c.Messages(), "a refused result changes nothing")
		assert.True(t, c.Settled())
	}
}

func TestAbandonRefusesWhatCannotBeAbandoned(t *testing.T) {
	c := orphaned(t)
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "web", Annotations: openRead}))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "as", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "srv", Tool: "web", Server: true}}}),
		c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c3", Tool: "read_file"}, {ID: "c4", Tool: "read_file"}}}),
		c.Open(pruneguard.Message{ID: "r3", Answers: []pruneguard.CallID{"c3"}}),
	)
	for _, tt := range []struct {
		ids  []pruneguard.CallID
		want error
		id   string
	}{
		{[]pruneguard.CallID{"nope"}, pruneguard.ErrUnknownCall, "nope"},
		{[]pruneguard.CallID{""}, pruneguard.ErrEmptyID, ""},
		{[]pruneguard.CallID{"c1"}, pruneguard.ErrAnsweredCall, "c1"},
		{[]pruneguard.CallID{"srv"}, pruneguard.ErrAnsweredCall, "srv"},
		{[]pruneguard.CallID{"c3"}, pruneguard.ErrOpenMessage, "c3"},
		{[]pruneguard.CallID{"c2", "c2"}, pruneguard.ErrAbandonedCall, "c2"},
		// All or nothing: c2 stays pending when c1 is refused.
		{[]pruneguard.CallID{"c2", "c4", "c1"}, pruneguard.ErrAnsweredCall, "c1"},
	} {
		t.Run(fmt.Sprint(tt.ids), func(t *testing.T) {
			before := c.Pending()
			err := c.Abandon(tt.ids...)
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, err, pruneguard.ErrInvalidInput)
			var ie *pruneguard.InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tt.id, ie.ID)
			assert.Equal(t, "abandon", ie.Op)
			assert.Equal(t, before, c.Pending(), "nothing changed")
		})
	}
	require.NoError(t, c.Abandon("c2", "c4"))
	assert.ErrorIs(t, c.Abandon("c2"), pruneguard.ErrAbandonedCall, "twice")
	assert.Equal(t, []pruneguard.CallID{"c3"}, c.Pending(), "the streaming result keeps its call")

	// A pruned call cannot be abandoned; an abandoned one, pruned, is
	// still known as abandoned.
	mustDo(t, c.Close("r3"), c.Append(pruneguard.Message{ID: "a5", Role: pruneguard.RoleAssistant, Content: []byte("read")}))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a1", "a3"}, Split: pruneguard.SplitGrow})
	require.NoError(t, err)
	mustDo(t, c.Apply(d))
	assert.ErrorIs(t, c.Abandon("c1"), pruneguard.ErrPrunedCall)
	assert.ErrorIs(t, c.Abandon("c2"), pruneguard.ErrAbandonedCall)
	assert.ErrorIs(t, c.Append(pruneguard.Message{ID: "r4", Answers: []pruneguard.CallID{"c4"}}), pruneguard.ErrAbandonedCall)
	assert.ErrorIs(t, c.Append(pruneguard.Message{ID: "r1b", Answers: []pruneguard.CallID{"c1"}}), pruneguard.ErrPrunedCall)
}

// The strict boundary still defers on what is in flight now.
func TestAbandonKeepsTheBoundaryOnWhatIsInFlight(t *testing.T) {
	c := orphaned(t)
	mustDo(t, c.Append(pruneguard.Message{ID: "a3", Calls: []pruneguard.Call{{ID: "c3", Tool: "read_file"}}}))
	require.NoError(t, c.Abandon("c2"))
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	var de *pruneguard.DeferredError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, []pruneguard.CallID{"c3"}, de.Pending)
	mustDo(t, c.Append(pruneguard.Message{ID: "r3", Answers: []pruneguard.CallID{"c3"}}))
	mustDo(t, c.Open(pruneguard.Message{ID: "s", Role: pruneguard.RoleAssistant}))
	_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.ErrorAs(t, err, &de)
	assert.Equal(t, []pruneguard.MessageID{"s"}, de.Open)
	mustDo(t, c.Close("s"))
	_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	assert.NoError(t, err)
}

// An abandoned call's arguments stay in the prompt: the schema gate keeps
// counting them.
func TestAbandonedArgumentsStillNeedTheirSchema(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{NoTombstones: true})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "update_incident", Schema: json.RawMessage(`{"type":"object","required":["severity"]}`)}))
	mustDo(t, c.Append(pruneguard.Message{ID: "a", Calls: []pruneguard.Call{{ID: "k", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2"}`)}}}))
	require.NoError(t, c.Abandon("k"))
	st, _ := c.Tool("update_incident")
	assert.Equal(t, 1, st.Args)
	_, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"update_incident"}})
	assert.ErrorIs(t, err, pruneguard.ErrSchema)
	var v *pruneguard.Violation
	require.True(t, errors.As(err, &v))
	assert.Equal(t, pruneguard.CodeGhostTool, v.Code)
	assert.Equal(t, []pruneguard.CallID{"k"}, v.Calls)
}

// Once abandoned, a call's id may name a new call, as an answered one's may.
func TestAbandonedCallIDMayBeReused(t *testing.T) {
	c := orphaned(t)
	require.NoError(t, c.Abandon("c2"))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "a3", Calls: []pruneguard.Call{{ID: "c2", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "r3", Answers: []pruneguard.CallID{"c2"}}),
	)
	u, _ := c.UnitOf("r3")
	assert.Equal(t, pruneguard.UnitID("a3"), u.ID)
	assert.True(t, c.Settled())
}

// In the relaxed mode a unit with a pending call is held back; abandoned,
// the call no longer holds it.
func TestAbandonReleasesAHeldUnit(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c1", Tool: "read_file"}, {ID: "c2", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "r1", Tokens: 100, Answers: []pruneguard.CallID{"c1"}}),
		c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c3", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "r3", Tokens: 100, Answers: []pruneguard.CallID{"c3"}}),
		c.Append(pruneguard.Message{ID: "a4", Role: pruneguard.RoleAssistant, Content: []byte("read")}),
	)
	d, err := c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r1", "r3"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"r3"}, d.Stub, "r1's unit is in flight")
	require.Len(t, d.Refused, 1)
	assert.Equal(t, pruneguard.CodePending, d.Refused[0].Code)
	require.NoError(t, c.Abandon("c2"))
	d, err = c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r1", "r3"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"r1", "r3"}, d.Stub)
	assert.Empty(t, d.Refused)
}

package pruneguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Decisions between Prune and Apply: staleness, counts and records.

func TestStubDecisionGoesStale(t *testing.T) {
	c := batchContext(t, Config{}, false)
	d, err := c.Prune(Plan{Stub: []MessageID{"r2"}})
	require.NoError(t, err)
	require.NoError(t, c.Mark("r2", TransientState))
	assert.ErrorIs(t, c.Apply(d), ErrStaleDecision, "the stubbed message's unit changed")
}

func TestUnguardedRemovalKeepsCountsTrue(t *testing.T) {
	t.Run("pending caller", func(t *testing.T) {
		c := batchContext(t, Config{}, true)
		withoutGates(c, GateBoundary)
		d, err := c.Prune(Plan{Evict: []MessageID{"a2"}})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
		assert.Empty(t, c.Pending())
		assert.True(t, c.Settled())
	})
	t.Run("open result", func(t *testing.T) {
		c := NewContext(Config{})
		withoutGates(c, GateBoundary)
		closedTools(t, c, "x")
		mustAppend(t, c, Message{ID: "a1", Calls: []Call{{ID: "c1", Tool: "x"}}})
		require.NoError(t, c.Open(Message{ID: "r1", Answers: []CallID{"c1"}}))
		d, err := c.Prune(Plan{Evict: []MessageID{"r1"}})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
		assert.Empty(t, c.OpenMessages())
		assert.Equal(t, []CallID{"c1"}, c.Pending(), "the call lost its result")
		u, _ := c.UnitOf("a1")
		assert.False(t, u.Open)
		assert.Equal(t, []CallID{"c1"}, u.Pending)
		// The call may be answered again.
		require.NoError(t, c.Append(Message{ID: "r1b", Answers: []CallID{"c1"}}))
		assert.True(t, c.Settled())
	})
	t.Run("pinned member", func(t *testing.T) {
		c := batchContext(t, Config{}, false)
		withoutGates(c, GateBoundary)
		require.NoError(t, c.Pin("r1"))
		d, err := c.Prune(Plan{Evict: []MessageID{"r1"}})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
		u, _ := c.UnitOf("a1")
		assert.False(t, u.Pinned)
		assert.Equal(t, []MessageID{"a1", "r2"}, u.Messages)
		// What is left of the cut unit can still be pruned.
		allGates(c)
		d, err = c.Prune(Plan{Evict: []MessageID{"a1"}})
		require.NoError(t, err)
		assert.Equal(t, []MessageID{"a1", "r2"}, d.Evict)
		require.NoError(t, c.Apply(d))
	})
}

func TestEvictingAReusedCallIDKeepsTheLaterCall(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "a1", Calls: []Call{{ID: "call_0", Tool: "x"}}},
		Message{ID: "r1", Answers: []CallID{"call_0"}},
		Message{ID: "a2", Calls: []Call{{ID: "call_0", Tool: "x"}}},
		Message{ID: "r2", Answers: []CallID{"call_0"}},
	)
	d, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	err = c.Append(Message{ID: "r3", Answers: []CallID{"call_0"}})
	assert.ErrorIs(t, err, ErrDuplicateResult, "call_0 still names a2's answered call")
}

func TestSchemaGateCountsEveryEvictedCall(t *testing.T) {
	c := NewContext(Config{NoTombstones: true})
	require.NoError(t, c.RegisterTool(Tool{Name: "upd", Output: Reconstructible}))
	mustAppend(t, c,
		Message{ID: "a1", Role: RoleAssistant, Calls: []Call{{ID: "k1", Tool: "upd"}, {ID: "k2", Tool: "upd"}, {ID: "k3", Tool: "upd"}}},
		Message{ID: "r1", Answers: []CallID{"k1", "k2", "k3"}},
		Message{ID: "a2", Role: RoleAssistant, Content: []byte("updated")},
	)
	d, err := c.Prune(Plan{Evict: []MessageID{"a1"}, DropSchemas: []string{"upd"}})
	require.NoError(t, err, "all three calls leave with the schema")
	assert.Equal(t, []string{"upd"}, d.DropSchemas)
}

func TestRecordsKeepTheTokensOfTheirDecision(t *testing.T) {
	c := batchContext(t, Config{}, false)
	d1, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
	require.NoError(t, err)
	d2, err := c.Prune(Plan{Stub: []MessageID{"r1"}})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, c.Apply(d2))
	}()
	recs := d1.Records()
	<-done
	require.Len(t, recs, 3)
	assert.Equal(t, 100, recs[1].Tokens)
	assert.Equal(t, 100, d1.Records()[1].Tokens, "not the stub's size")
}

func TestStaleErrorNamesTheUnitThatAbsorbed(t *testing.T) {
	c := batchContext(t, Config{}, false)
	d, err := c.Prune(Plan{Evict: []MessageID{"u2"}})
	require.NoError(t, err)
	require.NoError(t, c.Couple("a1", "u2"))
	var se *StaleError
	require.ErrorAs(t, c.Apply(d), &se)
	assert.Equal(t, []UnitID{"a1"}, se.Units)
}

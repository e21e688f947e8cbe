package pruneguard

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitingContext holds n rounds of a call and its result, the first
// evicted of them applied: a decision that leaves more messages gone
// than held, so that its compaction waits for the next Apply.
func waitingContext(t *testing.T, n, evicted int) *Context {
	t.Helper()
	c := NewContext(Config{})
	closedTools(t, c, "x")
	for i := range n {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Tokens: 1, Calls: []Call{{ID: CallID("k" + id), Tool: "x", Args: []byte(`{"i":` + id + `}`)}}},
			Message{ID: MessageID("r" + id), Tokens: 10, Answers: []CallID{CallID("k" + id)}, Content: []byte("result " + id)},
		)
	}
	var evict []MessageID
	for i := range evicted {
		evict = append(evict, MessageID(fmt.Sprint("a", i)))
	}
	d, err := c.Prune(Plan{Evict: evict})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.Zero(t, c.compactions, "the compaction waits")
	require.Equal(t, 2*evicted, c.dead)
	return c
}

// While a compaction waits, the indexes by id and by call id still hold
// the messages and calls gone, and read them as no id: nothing gone is
// found, everything held is, an id may be used again, and the indexes
// grow past the records gone; the next Apply compacts them.
func TestCompactionWaitsForTheNextApply(t *testing.T) {
	c := waitingContext(t, 1000, 700)
	assert.Greater(t, c.byID.Len(), c.live, "the index by id still holds the messages gone")
	var gone []MessageID
	for i := range 700 {
		gone = append(gone, MessageID(fmt.Sprint("a", i)), MessageID(fmt.Sprint("r", i)))
	}
	indexesMatch(t, c, gone)
	_, ok := c.Message("r5")
	assert.False(t, ok)
	_, ok = c.find("")
	assert.False(t, ok, "a message gone reads as no id, not as the empty one")
	m, ok := c.Message("r700")
	require.True(t, ok)
	assert.Equal(t, "result 700", string(m.Content))

	// A result of a pruned call is refused as pruned, not unknown.
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k3"}}), ErrPrunedCall)
	// Ids of messages and calls gone may be used again.
	mustAppend(t, c,
		Message{ID: "a1", Tokens: 1, Calls: []Call{{ID: "k1", Tool: "x", Args: []byte(`{"again":true}`)}}},
		Message{ID: "r1", Tokens: 10, Answers: []CallID{"k1"}, Content: []byte("again")},
	)
	m, ok = c.Message("r1")
	require.True(t, ok)
	assert.Equal(t, "again", string(m.Content))
	assert.Equal(t, []CallID{"k1"}, m.Answers)

	// Appending enough to resize the indexes leaves the records gone out.
	size := c.byID.Slots()
	for i := 1000; c.byID.Slots() == size; i++ {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Tokens: 1, Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}},
			Message{ID: MessageID("r" + id), Tokens: 10, Answers: []CallID{CallID("k" + id)}},
		)
	}
	assert.Equal(t, c.live, c.byID.Len(), "a resize leaves the messages gone out")
	gone = slices.DeleteFunc(gone, func(id MessageID) bool { return id == "a1" || id == "r1" }) // held again
	indexesMatch(t, c, gone)
	assert.Zero(t, c.compactions, "appending does not compact")

	// The next Apply compacts, and everything reads as before.
	d, err := c.Prune(Plan{Evict: []MessageID{"a700"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 1, c.compactions)
	assert.Zero(t, c.dead)
	assert.Equal(t, c.live, c.byID.Len())
	indexesMatch(t, c, append(gone, "a700", "r700"))
	assert.ErrorIs(t, c.Append(Message{ID: "late2", Answers: []CallID{"k4"}}), ErrPrunedCall)
	assert.ErrorIs(t, c.Append(Message{ID: "late3", Answers: []CallID{"k700"}}), ErrPrunedCall)
}

// A decision whose Apply follows one that left more messages gone than
// held compacts after carrying itself out, and a decision made before
// that compaction is stale after it; one made while the compaction waits
// and applied first is not.
func TestCompactionWaitsAndDecisionsMadeMeanwhile(t *testing.T) {
	c := waitingContext(t, 1000, 600)
	a, err := c.Prune(Plan{Evict: []MessageID{"a600"}})
	require.NoError(t, err)
	b, err := c.Prune(Plan{Evict: []MessageID{"a900"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(a), "made while the compaction waited, applied first")
	assert.Equal(t, 1, c.compactions)
	assert.ErrorIs(t, c.Apply(b), ErrStaleDecision)
	d, err := c.Prune(Plan{Evict: []MessageID{"a900"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 2*(1000-602), c.Len())
}

// Saving while a compaction waits saves the messages held, and the
// Context restored from it reads the same.
func TestCompactionWaitsAcrossSave(t *testing.T) {
	c := waitingContext(t, 600, 400)
	var state bytes.Buffer
	require.NoError(t, c.Save(&state))
	r, err := Restore(&state, Config{})
	require.NoError(t, err)
	assert.Equal(t, c.Len(), r.Len())
	assert.Equal(t, c.Tokens(), r.Tokens())
	for i := range 600 {
		id := MessageID(fmt.Sprint("r", i))
		_, held := c.Message(id)
		_, restored := r.Message(id)
		assert.Equal(t, held, restored, "%s", id)
	}
	assert.ErrorIs(t, r.Append(Message{ID: "late", Answers: []CallID{"k3"}}), ErrPrunedCall)
}

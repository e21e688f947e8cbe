package pruneguard

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of what the compact layout must keep as the caller gave it.

func TestMessagesComeBackAsGiven(t *testing.T) {
	c := NewContext(Config{})
	in := []Message{
		{ID: "nil", Role: "custom-role", Tokens: 1},
		{ID: "empty", Content: []byte{}, Tokens: 2, Calls: []Call{{ID: "k1", Tool: "t"}, {ID: "k2", Tool: "t", Args: []byte{}}, {ID: "k3", Tool: "u", Args: []byte(`{"a":1}`)}}},
		{ID: "big", Tokens: math.MaxInt32 + 10, Content: []byte("x"), Answers: []CallID{"k2", "k1"}, NeededBy: []StepID{}},
		{ID: "huge", Tokens: 1, Content: make([]byte, 200<<10), Answers: []CallID{"k3"}, Pointer: Pointer{"s", "k"}, Pinned: true, Class: Durable, Facts: TransientState},
	}
	for _, m := range in {
		require.NoError(t, c.Append(m))
	}
	for _, m := range in {
		got, ok := c.Message(m.ID)
		require.True(t, ok)
		assert.Equal(t, m, got)
	}
	assert.Equal(t, 1+2+math.MaxInt32+10+1, c.Tokens())
	require.NoError(t, c.Open(Message{ID: "s", Tokens: math.MaxInt32 - 1}))
	require.NoError(t, c.Write("s", []byte("ab"), 5))
	m, _ := c.Message("s")
	assert.Equal(t, math.MaxInt32+4, m.Tokens)
	assert.Equal(t, "ab", string(m.Content))
	require.NoError(t, c.Close("s"))
	m, _ = c.Message("s")
	assert.Equal(t, "ab", string(m.Content))
	assert.Equal(t, math.MaxInt32+4, m.Tokens)
}

// More distinct roles than the role table holds are kept as well.
func TestManyRoles(t *testing.T) {
	c := NewContext(Config{})
	for i := range 300 {
		require.NoError(t, c.Append(Message{ID: MessageID(fmt.Sprint("m", i)), Role: Role(fmt.Sprint("role", i))}))
	}
	for i := range 300 {
		m, _ := c.Message(MessageID(fmt.Sprint("m", i)))
		assert.Equal(t, Role(fmt.Sprint("role", i)), m.Role)
	}
}

// The Context remembers the calls pruned last: a result for one of them
// is ErrPrunedCall, for one pruned before them ErrUnknownCall.
func TestPrunedCallsAreRememberedForAWhile(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	for i := range recentBound + 10 {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}},
		)
		if i == 0 {
			continue
		}
		// The model read the round before when it made this call.
		d, err := c.Prune(Plan{Evict: []MessageID{MessageID(fmt.Sprint("a", i-1))}})
		require.NoError(t, err)
		require.Len(t, d.Evict, 2)
		require.NoError(t, c.Apply(d))
	}
	assert.Equal(t, 2, c.Len(), "the last round, unread")
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k0"}}), ErrUnknownCall, "pruned too long ago")
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{CallID(fmt.Sprint("k", recentBound))}}), ErrPrunedCall)
}

// A decision outstanding when Apply compacts the records is stale, and
// the Context goes on as before.
func TestCompactionMakesOtherDecisionsStale(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	for i := range 2000 {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Tokens: 1, Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}},
			Message{ID: MessageID("r" + id), Tokens: 10, Answers: []CallID{CallID("k" + id)}, Content: []byte("result " + id)},
		)
	}
	mustAppend(t, c, Message{ID: "tail", Role: RoleAssistant, Tokens: 1, Class: Reconstructible})
	other, err := c.Prune(Plan{Evict: []MessageID{"tail"}})
	require.NoError(t, err)
	var evict []MessageID
	for i := range 1500 {
		evict = append(evict, MessageID(fmt.Sprint("a", i)))
	}
	// The first decision to leave more messages gone than held leaves
	// the compaction to the next Apply.
	d, err := c.Prune(Plan{Evict: evict[:1100]})
	require.NoError(t, err)
	before := c.compactions
	require.NoError(t, c.Apply(d))
	require.Equal(t, before, c.compactions, "2,200 messages gone, 1,801 held: the compaction waits")
	d, err = c.Prune(Plan{Evict: evict[1100:]})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.Greater(t, c.compactions, before, "3,000 messages gone, 1,001 held: compacted")
	assert.ErrorIs(t, c.Apply(other), ErrStaleDecision)
	assert.Equal(t, 1001, c.Len())
	m, ok := c.Message("r1999")
	require.True(t, ok)
	assert.Equal(t, "result 1999", string(m.Content))
	assert.Equal(t, []CallID{"k1999"}, m.Answers)
	assert.ErrorIs(t, c.Append(Message{ID: "x", Answers: []CallID{"k3"}}), ErrPrunedCall)
	d, err = c.Prune(Plan{Evict: []MessageID{"r1700", "tail"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"a1700", "r1700", "tail"}, d.Evict)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 998, c.Len())
	assert.Equal(t, 499*11, c.Tokens())
}

// The hoarding report looks only at large messages that may be hoarded:
// pinned, stubbed, marked or otherwise classed ones, and text (irreducible
// by default), are not in its set or leave it.
func TestHoardingLooksOnlyAtWhatMayBeHoarded(t *testing.T) {
	c := NewContext(Config{HoardTokens: 100})
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "pinned", Tokens: 500, Pinned: true},
		Message{ID: "secret", Tokens: 500, Facts: OneTimeSecret},
		Message{ID: "kept", Tokens: 500, Class: Irreducible},
		Message{ID: "free", Tokens: 500, Class: Reconstructible},
		Message{ID: "text", Tokens: 500},
		Message{ID: "a", Role: RoleAssistant, Calls: []Call{{ID: "k", Tool: "x"}}},
		Message{ID: "r", Tokens: 500, Answers: []CallID{"k"}},
		Message{ID: "b", Role: RoleAssistant, Content: []byte("read")},
	)
	assert.Len(t, c.large, 2, "free and r")
	require.NoError(t, c.Pin("free"))
	assert.Len(t, c.large, 1)
	d, err := c.Prune(Plan{Stub: []MessageID{"r"}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"r"}, d.Hoarded, "still large until the stub is applied")
	require.NoError(t, c.Apply(d))
	assert.Empty(t, c.large)
}

// The generations of a prune's marks, and the stamps of its passes over
// units, start again when they run out: stale marks are cleared, and
// decisions stay what they were.
func TestMarksOutliveTheirGenerations(t *testing.T) {
	plans := []Plan{
		{Evict: []MessageID{"r1", "u2"}, Stub: []MessageID{"r3"}},
		{Evict: []MessageID{"u1", "r1"}, Split: SplitShrink},
		{Evict: []MessageID{"a2"}, Stub: []MessageID{"r1", "r2"}},
	}
	fresh := batchContext(t, Config{}, false)
	var want []any
	for _, p := range plans {
		d, err := fresh.Prune(p)
		require.NoError(t, err)
		want = append(want, decisionFields(d))
	}
	c := batchContext(t, Config{}, false)
	// Marks of the first generation, which comes round again.
	_, err := c.Prune(Plan{Evict: []MessageID{"u1", "r1", "a2", "u2"}, Stub: []MessageID{"r2"}})
	require.NoError(t, err)
	// Until they run out, each prune takes the next generation and each
	// pass the next stamp: nothing is cleared.
	gen, tick := c.pruneGen, c.tick
	_, err = c.Prune(plans[0])
	require.NoError(t, err)
	assert.Equal(t, gen+1, c.pruneGen, "the next generation")
	assert.Greater(t, c.tick, tick, "the next stamps")
	c.pruneGen = 1<<(32-markBits) - 2
	c.tick = ^uint32(0) - 3
	for round := range 4 {
		for i, p := range plans {
			d, err := c.Prune(p)
			require.NoError(t, err)
			assert.Equal(t, want[i], decisionFields(d), "round %d, plan %d", round, i)
		}
	}
	assert.Less(t, c.pruneGen, uint32(20), "the generations started again")
	assert.Less(t, c.tick, uint32(100), "the stamps started again")
}

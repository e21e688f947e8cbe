package pruneguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The guard's loop: where it stops, what it passes on, what it reports.

func TestGuardStopsAtTheBudget(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 100, 100)
	rounds := 0
	pol := ViewFunc(func(v *View, need int) Plan {
		rounds++
		return OldestFirst{}.Propose(v, need)
	})
	// u0, a0 and r0 hold 115 tokens: prune exactly to the budget.
	res, err := Guard{Budget: c.Tokens() - 115, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	assert.Equal(t, 1, rounds)
	assert.Equal(t, res.Before-115, res.After)
}

func TestGuardPassesItsSplitMode(t *testing.T) {
	c := batchContext(t, Config{}, false)
	partial := PolicyFunc(func([]Entry, int) Plan { return Plan{Evict: []MessageID{"u1", "r1"}} })
	res, err := Guard{Budget: 1, Policy: partial, Split: SplitShrink, Rounds: 1}.Check(c)
	require.NoError(t, err)
	require.Len(t, res.Decisions, 1)
	assert.Equal(t, []MessageID{"u1"}, res.Decisions[0].Evict, "shrunk, not grown")

	strict := PolicyFunc(func([]Entry, int) Plan { return Plan{Evict: []MessageID{"u2", "r1"}, Split: SplitStrict} })
	res, err = Guard{Budget: 1, Policy: strict, Split: SplitGrow, Rounds: 1}.Check(c)
	require.NoError(t, err)
	require.Len(t, res.Decisions, 1)
	assert.Equal(t, []MessageID{"u2"}, res.Decisions[0].Evict, "the plan's own split mode wins")
}

func TestGuardSaysWhyWhenRelaxedAndIdle(t *testing.T) {
	c := batchContext(t, Config{Boundary: BoundaryRelaxed}, true)
	// Nothing but the unit in flight could go.
	for _, id := range []MessageID{"u1", "a1", "u2"} {
		require.NoError(t, c.Pin(id))
	}
	nothing := PolicyFunc(func([]Entry, int) Plan { return Plan{} })
	res, err := Guard{Budget: 1, Policy: nothing}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Deferred, res.Outcome)
	var de *DeferredError
	require.ErrorAs(t, res.Reason, &de)
	assert.Equal(t, []CallID{"c3"}, de.Pending)

	settled := batchContext(t, Config{Boundary: BoundaryRelaxed}, false)
	for _, id := range []MessageID{"u1", "a1", "u2", "a2"} {
		require.NoError(t, settled.Pin(id))
	}
	res, err = Guard{Budget: 1, Policy: nothing}.Check(settled)
	require.NoError(t, err)
	assert.Equal(t, Deferred, res.Outcome)
	assert.False(t, errors.As(res.Reason, &de), "nothing in flight: no deferral is the reason")
	var he *HeldError
	require.ErrorAs(t, res.Reason, &he, "what is pinned fills the prompt")
	h := he.Held
	assert.Equal(t, res.After, h.Pinned+h.Unread, "%v", h)
}

func TestGuardedCutKeepsEntriesTrue(t *testing.T) {
	c := batchContext(t, Config{}, false)
	mustAppend(t, c, Message{ID: "a3", Calls: []Call{{ID: "c4", Tool: "x"}, {ID: "c5", Tool: "x"}}})
	mustAppend(t, c, Message{ID: "r4", Answers: []CallID{"c4"}})
	withoutGates(c, GateBoundary)
	d, err := c.Prune(Plan{Evict: []MessageID{"a3"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	es := c.Snapshot()
	last := es[len(es)-1]
	assert.Equal(t, MessageID("r4"), last.ID)
	assert.False(t, last.Pending, "the pending call left with its caller")
}

func TestGuardTakesRefusedCompressionsOutOfThePlan(t *testing.T) {
	c := NewContext(Config{NoTombstones: true})
	require.NoError(t, c.RegisterTool(Tool{Name: "upd", Schema: []byte(`{"type":"object","required":["a"]}`), Output: Reconstructible}))
	mustAppend(t, c,
		Message{ID: "u0", Role: RoleUser, Tokens: 500, Class: Reconstructible},
		Message{ID: "a0", Role: RoleAssistant, Tokens: 5, Calls: []Call{{ID: "k0", Tool: "upd"}}},
		Message{ID: "r0", Tokens: 5, Answers: []CallID{"k0"}},
	)
	rounds := 0
	pol := PolicyFunc(func([]Entry, int) Plan {
		rounds++
		return Plan{Evict: []MessageID{"u0"}, CompressSchemas: map[string]json.RawMessage{"upd": json.RawMessage(`{}`)}}
	})
	res, err := Guard{Budget: 100, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	assert.Equal(t, 1, rounds)
	st, _ := c.Tool("upd")
	assert.Nil(t, st.Compressed)
}

func TestResultListsEveryRefusal(t *testing.T) {
	for _, mode := range []RegenMode{RegenRefuse, RegenDropUnsafe} {
		c := NewContext(Config{Regen: mode})
		closedTools(t, c, "x")
		require.NoError(t, c.RegisterTool(Tool{Name: "web"}))
		for i := 0; i < 5; i++ {
			id := fmt.Sprint(i)
			mustAppend(t, c,
				Message{ID: MessageID("a" + id), Role: RoleAssistant, Tokens: 10, Calls: []Call{{ID: CallID("k" + id), Tool: "web"}}},
				Message{ID: MessageID("r" + id), Tokens: 100, Answers: []CallID{CallID("k" + id)}},
			)
		}
		mustAppend(t, c,
			Message{ID: "a9", Role: RoleAssistant, Tokens: 10, Calls: []Call{{ID: "k9", Tool: "x"}}},
			Message{ID: "r9", Tokens: 100, Answers: []CallID{"k9"}},
			Message{ID: "a10", Role: RoleAssistant, Tokens: 10, Content: []byte("read")},
		)
		res, err := Guard{Budget: c.Tokens() - 110}.Check(c)
		require.NoError(t, err)
		assert.Equal(t, Pruned, res.Outcome)
		var units []UnitID
		var msgs []MessageID
		for _, v := range res.Refused {
			assert.Equal(t, CodeIrreducible, v.Code)
			if !slices.Contains(units, v.Units[0]) {
				units = append(units, v.Units...)
			}
			msgs = append(msgs, v.Messages...)
		}
		assert.Equal(t, []UnitID{"a0", "a1", "a2", "a3", "a4"}, units, "mode %d", mode)
		// The calls to web are irreducible with their results: the
		// arguments are the model's, the unit goes only whole.
		assert.Equal(t, []MessageID{"a0", "r0", "a1", "r1", "a2", "r2", "a3", "r3", "a4", "r4"}, msgs, "mode %d", mode)
	}
}

func TestHoardingThreshold(t *testing.T) {
	c := NewContext(Config{})
	mustAppend(t, c, Message{ID: "big", Tokens: 100000})
	d, err := c.Prune(Plan{})
	require.NoError(t, err)
	assert.Empty(t, d.Hoarded, "no threshold, no report")

	c = NewContext(Config{HoardTokens: 50, TextClass: Reconstructible})
	mustAppend(t, c, Message{ID: "at", Tokens: 50}, Message{ID: "under", Tokens: 49})
	require.NoError(t, c.Open(Message{ID: "s"}))
	require.NoError(t, c.Write("s", nil, 0))
	require.NoError(t, c.Close("s"))
	d, err = c.Prune(Plan{})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"at"}, d.Hoarded, "the threshold is inclusive")
}

package pruneguard

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuardUnderBudget(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100)
	res, err := Guard{Budget: c.Tokens()}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, UnderBudget, res.Outcome)
	assert.Equal(t, c.Tokens(), res.Before)
	assert.Equal(t, res.Before, res.After)
	assert.Equal(t, "under_budget", res.Outcome.String())
}

func TestGuardPrunes(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200, 300)
	before := c.Tokens()
	res, err := Guard{Budget: before - 100}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	assert.Equal(t, before, res.Before)
	assert.Equal(t, before-115, res.After, "u0, a0 and r0 went")
	require.Len(t, res.Decisions, 1)
	assert.Equal(t, []MessageID{"u0", "a0", "r0"}, res.Decisions[0].Evict)
	assert.Equal(t, res.After, c.Tokens())
}

func TestGuardRetriesAroundRefusals(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200, 300)
	require.NoError(t, c.Mark("r0", NegativeResult))
	res, err := Guard{Budget: c.Tokens() - 150}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	_, kept := c.Message("r0")
	assert.True(t, kept, "the negative result stays")
	var pe *PruneError
	require.ErrorAs(t, res.Reason, &pe, "the refusal is reported")
	var evicted []MessageID
	for _, d := range res.Decisions {
		evicted = append(evicted, d.Evict...)
	}
	assert.Equal(t, []MessageID{"u0", "a1", "r1"}, evicted)
}

func TestGuardDefers(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200)
	mustAppend(t, c, Message{ID: "a9", Tokens: 5, Calls: []Call{{ID: "k9", Tool: "x"}}})
	asked := false
	pol := ViewFunc(func(v *View, need int) Plan { asked = true; return OldestFirst{}.Propose(v, need) })
	res, err := Guard{Budget: 10, Ceiling: 10000, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Deferred, res.Outcome)
	assert.False(t, asked, "no policy is asked while a call is pending")
	var de *DeferredError
	require.ErrorAs(t, res.Reason, &de)
	assert.Equal(t, []CallID{"k9"}, de.Pending)
	assert.Equal(t, res.Before, res.After)

	// Past the ceiling, deferral fails loudly.
	res, err = Guard{Budget: 10, Ceiling: 20, Policy: pol}.Check(c)
	var ce *CeilingError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrCeiling)
	assert.ErrorIs(t, err, ErrDeferred)
	assert.Equal(t, c.Tokens(), ce.Tokens)
	assert.Equal(t, 20, ce.Ceiling)
	assert.Equal(t, Deferred, res.Outcome)
	assert.Contains(t, err.Error(), "k9")
}

func TestGuardRelaxedPrunesAroundPending(t *testing.T) {
	c := toolLoop(t, Config{Boundary: BoundaryRelaxed}, []string{"x"}, 100, 200)
	mustAppend(t, c, Message{ID: "a9", Role: RoleAssistant, Tokens: 5, Calls: []Call{{ID: "k9", Tool: "x"}}})
	res, err := Guard{Budget: 150}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	_, ok := c.Message("a9")
	assert.True(t, ok)
	assert.Equal(t, 105, c.Tokens(), "sys and the pending a9 are all that is left")
}

func TestGuardCannotPruneSafely(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100)
	require.NoError(t, c.Mark("r0", OneTimeSecret))
	require.NoError(t, c.Pin("u0"))
	// The model has read r0 and answered: only the secret holds it now.
	mustAppend(t, c, Message{ID: "a1", Role: RoleAssistant, Tokens: 5, Content: []byte("noted")})
	res, err := Guard{Budget: 10}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Deferred, res.Outcome, "cannot prune safely, still under the ceiling")
	assert.ErrorIs(t, res.Reason, ErrRegen)

	_, err = Guard{Budget: 10, Ceiling: 50}.Check(c)
	var ce *CeilingError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrRegen)
	assert.NotErrorIs(t, err, ErrDeferred)
}

func TestGuardPrunedButOverCeiling(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200)
	require.NoError(t, c.Mark("r1", OneTimeSecret))
	res, err := Guard{Budget: 10, Ceiling: 200}.Check(c)
	require.ErrorIs(t, err, ErrCeiling)
	assert.Equal(t, Pruned, res.Outcome)
	assert.Len(t, res.Decisions, 1)
	assert.Equal(t, 305, res.After)
}

func TestGuardSurfacesBadPolicy(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100)
	bad := PolicyFunc(func([]Entry, int) Plan { return Plan{Evict: []MessageID{"ghost"}} })
	res, err := Guard{Budget: 1, Policy: bad}.Check(c)
	assert.ErrorIs(t, err, ErrUnknownMessage)
	assert.Equal(t, Deferred, res.Outcome)
}

func TestGuardHidesRefusedToolsFromPolicy(t *testing.T) {
	c := NewContext(Config{NoTombstones: true})
	require.NoError(t, c.RegisterTool(Tool{Name: "upd", Output: Reconstructible}))
	mustAppend(t, c,
		Message{ID: "u0", Role: RoleUser, Tokens: 500, Class: Reconstructible},
		Message{ID: "a0", Role: RoleAssistant, Tokens: 5, Calls: []Call{{ID: "k0", Tool: "upd"}}},
		Message{ID: "r0", Tokens: 5, Answers: []CallID{"k0"}},
	)
	rounds := 0
	pol := PolicyFunc(func(es []Entry, need int) Plan {
		rounds++
		return Plan{Evict: []MessageID{"u0"}, DropSchemas: []string{"upd"}}
	})
	res, err := Guard{Budget: 100, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	assert.Equal(t, 1, rounds, "the refused schema is taken out of the plan without asking again")
	st, _ := c.Tool("upd")
	assert.True(t, st.Resident)
	assert.True(t, errors.Is(res.Reason, ErrSchema))
}

func TestOutcomeStrings(t *testing.T) {
	assert.Equal(t, "pruned", Pruned.String())
	assert.Equal(t, "deferred", Deferred.String())
	assert.Equal(t, "outcome(?)", Outcome(9).String())
	assert.Equal(t, "boundary", GateBoundary.String())
	assert.Equal(t, "schema", GateSchema.String())
	assert.Equal(t, "regen", GateRegen.String())
	assert.Equal(t, "gate(7)", Gate(7).String())
	for k, s := range map[Class]string{ClassUnset: "unset", Reconstructible: "reconstructible", Durable: "durable", Irreducible: "irreducible", Class(9): "class(?)"} {
		assert.Equal(t, s, k.String())
	}
}

func TestGuardLooksAgainAfterAConcurrentPrune(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200, 300)
	first := true
	pol := ViewFunc(func(v *View, need int) Plan {
		p := OldestFirst{}.Propose(v, need)
		if first {
			// Another goroutine prunes the same units before this plan lands.
			first = false
			d, err := c.Prune(p)
			require.NoError(t, err)
			require.NoError(t, c.Apply(d))
		}
		return p
	})
	res, err := Guard{Budget: c.Tokens() - 100, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome)
	assert.ErrorIs(t, res.Reason, ErrUnknownMessage)
}

func TestGuardGetsPastManyRefusedUnits(t *testing.T) {
	sizes := make([]int, 30)
	for i := range sizes {
		sizes[i] = 100
	}
	c := toolLoop(t, Config{}, []string{"x"}, sizes...)
	for i := 0; i < 25; i++ {
		require.NoError(t, c.Mark(MessageID(fmt.Sprint("r", i)), NegativeResult))
	}
	res, err := Guard{Budget: c.Tokens() - 300}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, Pruned, res.Outcome, "25 refused units do not stop the guard from reaching the safe ones")
	assert.LessOrEqual(t, res.After, res.Before-300)
}

func TestConfigCeiling(t *testing.T) {
	c := toolLoop(t, Config{Ceiling: 200}, []string{"x"}, 100, 200)
	mustAppend(t, c, Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "x"}}})
	_, err := c.Prune(Plan{Evict: []MessageID{"u0"}})
	var ce *CeilingError
	require.ErrorAs(t, err, &ce, "deferring past the ceiling fails loudly")
	assert.ErrorIs(t, err, ErrDeferred)
	assert.Equal(t, 200, ce.Ceiling)
	assert.Equal(t, c.Tokens(), ce.Tokens)

	res, err := Guard{Budget: 10}.Check(c)
	require.ErrorAs(t, err, &ce, "the guard takes the context's ceiling")
	var nested *CeilingError
	assert.False(t, errors.As(ce.Cause, &nested), "the ceiling is reported once")
	assert.Equal(t, Deferred, res.Outcome)

	none := toolLoop(t, Config{}, []string{"x"}, 100)
	mustAppend(t, none, Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "x"}}})
	_, err = none.Prune(Plan{})
	assert.ErrorIs(t, err, ErrDeferred)
	assert.NotErrorIs(t, err, ErrCeiling, "no ceiling unless one is set")

	at := NewContext(Config{Ceiling: 10})
	mustAppend(t, at, Message{ID: "u0", Tokens: 10}, Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "x"}}})
	_, err = at.Prune(Plan{})
	assert.NotErrorIs(t, err, ErrCeiling, "at the ceiling is not past it")

	under := toolLoop(t, Config{Ceiling: 100000}, []string{"x"}, 100)
	mustAppend(t, under, Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "x"}}})
	_, err = under.Prune(Plan{})
	assert.ErrorIs(t, err, ErrDeferred)
	assert.NotErrorIs(t, err, ErrCeiling)
}

package pruneguard_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// keepOracle says that results whose content starts with "keep" are
// irreducible, and counts how often it was asked about them.
type keepOracle struct{ asked atomic.Int64 }

func (o *keepOracle) Classify(m pruneguard.Message) pruneguard.Class {
	if strings.HasPrefix(string(m.Content), "keep") {
		o.asked.Add(1)
		return pruneguard.Irreducible
	}
	return pruneguard.ClassUnset
}

// keepSession appends rounds of a call to a closed-world read-only tool
// and its result; the first kept rounds' results are irreducible (by the
// oracle), the rest reconstructible.
func keepSession(t testing.TB, o *keepOracle, kept, rest int) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(pruneguard.Config{Oracle: o})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true}))
	for i := 0; i < kept+rest; i++ {
		content := "plain"
		if i < kept {
			content = "keep this"
		}
		addRound(t, c, i, 100, content)
	}
	return c
}

func addRound(t testing.TB, c *pruneguard.Context, i, tokens int, content string) {
	t.Helper()
	k := pruneguard.CallID(fmt.Sprint("k", i))
	require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: k, Tool: "read"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Tokens: tokens,
		Content: []byte(content), Answers: []pruneguard.CallID{k}}))
}

// seeing wraps OldestFirst and records every unit its walk is shown.
type seeing struct{ seen map[pruneguard.UnitID]int }

func (s *seeing) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	var p pruneguard.Plan
	freed := 0
	for u := range v.Units() {
		s.seen[u.ID]++
		if freed >= need {
			break
		}
		if u.Pinned || u.Open || len(u.Pending) > 0 {
			continue
		}
		p.Evict = append(p.Evict, u.Messages...)
		freed += u.Tokens
	}
	return p
}

func TestGuardRemembersRefusalsAcrossChecks(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 20, 20)
	pol := &seeing{seen: map[pruneguard.UnitID]int{}}
	g := pruneguard.Guard{Budget: c.Tokens() - 300, Policy: pol}
	res, err := g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.Len(t, refusedUnits(res.Refused), 20, "each irreducible unit refused once")
	assert.Len(t, res.Refused, 1, "units next to each other held for one reason: one violation")
	asked := o.asked.Load()
	assert.Positive(t, asked)
	require.Len(t, refusedUnits(c.Refusals()), 20, "remembered")
	for _, v := range c.Refusals() {
		assert.ErrorIs(t, v, pruneguard.ErrRegen)
	}

	// Later checks neither walk nor retry them.
	clear(pol.seen)
	for i := 40; i < 44; i++ {
		addRound(t, c, i, 100, "plain")
	}
	g.Budget = c.Tokens() - 300
	res, err = g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.Empty(t, res.Refused, "nothing met again")
	assert.Equal(t, asked, o.asked.Load(), "the oracle is not asked again")
	for i := 0; i < 20; i++ {
		assert.Zero(t, pol.seen[pruneguard.UnitID(fmt.Sprint("a", i))], "refused unit a%d was walked", i)
	}
	v := c.View()
	assert.True(t, v.Hidden("a3"), "the View reports a remembered refusal as hidden")
	for _, e := range v.Snapshot() {
		assert.NotEqual(t, pruneguard.UnitID("a3"), e.Unit, "the snapshot leaves it out")
	}

	// A spill lifts the refusal of its unit.
	require.NoError(t, c.Spill("r3", pruneguard.Pointer{Store: "s", Key: "k"}))
	assert.NotContains(t, refusedUnits(c.Refusals()), pruneguard.UnitID("a3"))
	assert.Len(t, refusedUnits(c.Refusals()), 19)
	assert.Len(t, c.Refusals(), 2, "the run, either side of a3")
	assert.False(t, c.View().Hidden("a3"))

	// A change of the tool registry lifts every refusal of the
	// regenerability gate, and ForgetRefusals every refusal.
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "other"}))
	assert.Empty(t, c.Refusals())
	g.Budget = c.Tokens() - 50
	_, err = g.Check(c)
	require.NoError(t, err)
	assert.Greater(t, o.asked.Load(), asked, "asked again once the registry changed")
	require.NotEmpty(t, c.Refusals())
	c.ForgetRefusals()
	assert.Empty(t, c.Refusals())
}

// A unit held by a pin is remembered too, and a change of the registry
// does not lift that.
func TestGuardRemembersPinnedUnits(t *testing.T) {
	c := loopContext(t, pruneguard.Config{}, 100, 100)
	require.NoError(t, c.Pin("r0"))
	pol := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan {
		return pruneguard.Plan{Evict: []pruneguard.MessageID{"a0"}}
	})
	res, err := pruneguard.Guard{Budget: 250, Policy: pol}.Check(c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Refused)
	assert.Equal(t, pruneguard.CodePinned, res.Refused[0].Code)
	require.Len(t, c.Refusals(), 1)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "other"}))
	assert.Len(t, c.Refusals(), 1, "a pin does not rest on the registry")
}

// A result refused a stub leaves the walks a stubbing policy uses, until
// the refusal is lifted.
func TestGuardRemembersRefusedStubs(t *testing.T) {
	c := batchOfThree(t, pruneguard.Config{})
	_, err := pruneguard.Guard{Budget: 100, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
	require.NoError(t, err)
	largest := func() []pruneguard.MessageID {
		var ids []pruneguard.MessageID
		for e := range c.View().Largest() {
			ids = append(ids, e.ID)
		}
		return ids
	}
	assert.Empty(t, largest(), "rq and rs are stubbed, rp refused")
	// The unit was refused whole too, for its call of post: the unit's
	// refusal names a and rp, and rp's stub has its own.
	require.Len(t, c.Refusals(), 2)
	assert.Equal(t, []pruneguard.MessageID{"a", "rp"}, c.Refusals()[0].Messages)
	assert.Equal(t, []pruneguard.MessageID{"rp"}, c.Refusals()[1].Messages)
	c.ForgetRefusals()
	assert.Equal(t, []pruneguard.MessageID{"rp"}, largest())
}

// Refusals survive a compaction of the Context's records.
func TestRefusalsSurviveCompaction(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 5, 600)
	g := pruneguard.Guard{Budget: 1000}
	_, err := g.Check(c)
	require.NoError(t, err)
	require.Len(t, refusedUnits(c.Refusals()), 5)
	asked := o.asked.Load()
	for i := 1000; i < 1020; i++ {
		addRound(t, c, i, 100, "plain")
	}
	_, err = g.Check(c)
	require.NoError(t, err)
	assert.Len(t, refusedUnits(c.Refusals()), 5)
	assert.Equal(t, asked, o.asked.Load(), "not retried after the compaction")
	for _, v := range c.Refusals() {
		_, ok := c.Message(v.Messages[0])
		assert.True(t, ok)
	}
}

// The cost of a check does not grow with the refusals remembered: the
// walk crosses a run of refused units at once.
func TestCheckCostIndependentOfRefusedUnits(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	perTurn := func(refused int) time.Duration {
		o := &keepOracle{}
		c := keepSession(t, o, refused, 200)
		g := pruneguard.Guard{Budget: c.Tokens() - 105}
		_, err := g.Check(c)
		require.NoError(t, err)
		best := time.Duration(1 << 62)
		for turn := 0; turn < 300; turn++ {
			addRound(t, c, 1_000_000+turn, 100, "plain")
			start := time.Now()
			if _, err := g.Check(c); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := perTurn(10), perTurn(50_000)
	t.Logf("a turn: %v with 10 refused units, %v with 50,000", small, large)
	assert.Less(t, large, 4*small+20*time.Microsecond)
}

// One check gets past any number of refused units: the rounds that only
// learn refusals are not counted against Rounds.
func TestOneCheckGetsPastAPileOfRefusals(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 3000, 10)
	res, err := pruneguard.Guard{Budget: c.Tokens() - 300}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.LessOrEqual(t, res.After, res.Before-300)
	assert.Len(t, refusedUnits(res.Refused), 3000)
	assert.Len(t, refusedUnits(c.Refusals()), 3000)
}

// A policy that names units remembered as refused, which the walks of
// the View would pass over, does not get them tried again: the guard
// takes them out of its plan.
func TestGuardFiltersRememberedRefusalsAPolicyNames(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 5, 5)
	res, err := pruneguard.Guard{Budget: c.Tokens() - 300}.Check(c)
	require.NoError(t, err)
	require.Len(t, refusedUnits(res.Refused), 5)
	require.Len(t, refusedUnits(c.Refusals()), 5)
	asked := o.asked.Load()

	for i := 10; i < 14; i++ {
		addRound(t, c, i, 100, "plain")
	}
	modelRead(t, c, "seen")
	var named []pruneguard.MessageID
	for _, i := range []int{0, 1, 2, 3, 4, 10, 11, 12, 13} {
		named = append(named, pruneguard.MessageID(fmt.Sprint("a", i)), pruneguard.MessageID(fmt.Sprint("r", i)))
	}
	pol := pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan {
		return pruneguard.Plan{Evict: named}
	})
	res, err = pruneguard.Guard{Budget: c.Tokens() - 300, Policy: pol}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.Empty(t, res.Refused, "nothing met again")
	assert.Equal(t, asked, o.asked.Load(), "the oracle is not asked again")
	require.Len(t, res.Decisions, 1)
	assert.Equal(t, []pruneguard.UnitID{"a10", "a11", "a12", "a13"}, res.Decisions[0].Units)
	for i := 0; i < 5; i++ {
		_, held := c.Message(pruneguard.MessageID(fmt.Sprint("r", i)))
		assert.True(t, held, "r%d stays", i)
	}
}

// The refusals remembered are listed in the order of the gates and the
// transcript, whatever order they were met or are stored in.
func TestRefusalsListedInTranscriptOrder(t *testing.T) {
	c := chatContext(t, 3000, false)
	g := pruneguard.Guard{Budget: c.Tokens() / 2, Rounds: 4}
	_, err := g.Check(c)
	require.NoError(t, err)
	rs := c.Refusals()
	require.Greater(t, len(refusedUnits(rs)), 500, "the check remembers its refusals")
	at := map[pruneguard.MessageID]int{}
	for i, m := range c.Messages() {
		at[m.ID] = i
	}
	last := -1
	for i, v := range rs {
		require.NotEmpty(t, v.Messages, v.Error())
		if i > 0 && rs[i-1].Gate != v.Gate {
			require.Less(t, rs[i-1].Gate, v.Gate)
			last = -1
		}
		for _, id := range v.Messages {
			require.Less(t, last, at[id], "%v names %s out of order", v, id)
			last = at[id]
		}
	}
}

// A refusal goes with the messages it names: once a summary replaced
// the unit a check refused and the result it refused to stub, no
// refusal of them is listed, and the Context lists what a copy restored
// from it lists.
func TestRefusalsLeaveWithTheirMessages(t *testing.T) {
	c := batchOfThree(t, pruneguard.Config{})
	_, err := pruneguard.Guard{Budget: 100, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
	require.NoError(t, err)
	require.Len(t, c.Refusals(), 2, "the unit a and the stub of rp")

	s := &pruneguard.Summary{Replace: []pruneguard.MessageID{"a", "rp", "rq", "rs"}, ID: "sum", Text: "posted; read twice"}
	d, err := c.Prune(pruneguard.Plan{Summary: s})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	for _, id := range []pruneguard.MessageID{"a", "rp"} {
		_, held := c.Message(id)
		require.False(t, held, "%s was replaced", id)
	}
	assert.Empty(t, c.Refusals(), "no refusal of a message gone")

	var saved bytes.Buffer
	require.NoError(t, c.Save(&saved))
	r, err := pruneguard.Restore(&saved, pruneguard.Config{})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(c.Refusals()), fmt.Sprint(r.Refusals()), "as the restored copy lists")
}

package pruneguard_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// A guard without a store sweeps: each unit is judged once, the first
// check judging every unit closed and later ones only those that closed
// since; a run of units refused for one reason is one violation.
func TestSweepJudgesEachUnitOnce(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 20, 0)
	modelRead(t, c, "seen")
	g := pruneguard.Guard{Budget: 100}
	res, err := g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	assert.Equal(t, int64(20), o.asked.Load(), "each kept result judged once")
	require.Len(t, res.Refused, 1, "one run")
	assert.Len(t, res.Refused[0].Units, 20)
	assert.Equal(t, []pruneguard.MessageID{"r0", "r1"}, res.Refused[0].Messages[:2], "the messages held, in order")
	assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen)

	for i := 20; i < 25; i++ {
		addRound(t, c, i, 100, "keep this")
	}
	modelRead(t, c, "seen2")
	res, err = g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, int64(25), o.asked.Load(), "only the units closed since are judged")
	assert.Equal(t, []pruneguard.UnitID{"a20", "a21", "a22", "a23", "a24"}, refusedUnits(res.Refused), "met: the new units")
	assert.Len(t, refusedUnits(c.Refusals()), 25, "remembered: all")
}

// The sweep stops once the units that may go hold what the check must
// free: it judges no further than the policy needs.
func TestSweepStopsWhenEnoughMayGo(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 0, 10)
	for i := 10; i < 20; i++ {
		addRound(t, c, i, 100, "keep this")
	}
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: c.Tokens() - 300}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.Zero(t, o.asked.Load(), "the kept rounds, after enough that may go, are not judged")
	assert.Empty(t, res.Refused)
}

// A guard with a store does not sweep: what the regenerability gate
// refuses is what it spills.
func TestSweepLeavesAStoreItsCandidates(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200, 300, 400)
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 510, Spill: sp}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.NotEmpty(t, res.Spills, "irreducible units spilled, not swept")
	assert.Empty(t, c.Refusals())
}

// A unit that changes after the sweep refused it leaves the run: its
// neighbours stay refused, named by the run's parts either side, and the
// unit is judged again by the gates.
func TestSweptRunSplitsWhereAUnitChanges(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 6, 0)
	modelRead(t, c, "seen")
	_, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	require.Len(t, c.Refusals(), 1)
	require.NoError(t, c.Pin("r2"))
	rs := c.Refusals()
	require.Len(t, rs, 2)
	assert.Equal(t, []pruneguard.UnitID{"a0", "a1"}, rs[0].Units)
	assert.Equal(t, []pruneguard.MessageID{"r0", "r1"}, rs[0].Messages)
	assert.Equal(t, []pruneguard.UnitID{"a3", "a4", "a5"}, rs[1].Units)
	assert.Equal(t, []pruneguard.MessageID{"r3", "r4", "r5"}, rs[1].Messages)
}

// A Context restored from a saved one remembers the sweep's runs and
// where it stopped: it lists the same refusals and judges nothing again.
func TestSweptRunsSaveAndRestore(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 8, 0)
	modelRead(t, c, "seen")
	g := pruneguard.Guard{Budget: 100}
	_, err := g.Check(c)
	require.NoError(t, err)
	require.NoError(t, c.Pin("r3"))
	data := savedText(t, c)
	assert.Contains(t, data, `"run":["a0","a1","a2"]`)
	assert.Contains(t, data, `"sweptAll":true`)

	r, err := pruneguard.Restore(strings.NewReader(data), pruneguard.Config{Oracle: o})
	require.NoError(t, err)
	assert.Equal(t, errorTexts(c.Refusals()), errorTexts(r.Refusals()))
	asked := o.asked.Load()
	_, err = g.Check(r)
	require.NoError(t, err)
	assert.Equal(t, asked, o.asked.Load(), "nothing judged again")
	_, err = g.Check(c)
	require.NoError(t, err)
	assert.JSONEq(t, savedText(t, c), savedText(t, r))
}

func savedText(t *testing.T, c *pruneguard.Context) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, c.Save(&b))
	return b.String()
}

func errorTexts(vs []*pruneguard.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Error())
	}
	return out
}

// A check that finds no safe way costs no more than a prune of half the
// body that finds one: the sweep judges each unit, and names the units
// refused next to each other for one reason in one violation.
func TestRefusingCheckCostsNoMoreThanAPrune(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	best := func(free bool) time.Duration {
		d := time.Duration(1 << 62)
		for range 5 {
			c := chatContext(t, 20000, free)
			g := pruneguard.Guard{Budget: c.Tokens() / 2, Rounds: 32}
			runtime.GC()
			start := time.Now()
			res, _ := g.Check(c)
			d = min(d, time.Since(start))
			require.Equal(t, free, res.Outcome == pruneguard.Pruned && res.After <= g.Budget, "outcome %v", res.Outcome)
		}
		return d
	}
	free, refused := best(true), best(false)
	t.Logf("20,000 messages, budget half: a prune that finds room %v, a check that finds none %v", free, refused)
	assert.Less(t, refused, free*3/2, "refusing costs no more than pruning")
}

// The sweep's runs read as the gates' refusals do.
func TestSweptRunErrorText(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 3, 0)
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	require.Len(t, res.Refused, 1)
	assert.Equal(t, "pruneguard: regen gate: irreducible unit a0,a1,a2 messages r0,r1,r2", res.Refused[0].Error())
	assert.True(t, strings.HasPrefix(res.Reason.Error(), "pruneguard: prune refused (1 violation)"), res.Reason.Error())
}

// A unit the sweep passed because the model had not read it yet is swept
// at a later check, once read; a restored Context takes it up as well.
func TestSweepTakesUpAUnitItPassed(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 4, 0)
	modelRead(t, c, "seen")
	addRound(t, c, 4, 100, "keep this") // not read yet
	g := pruneguard.Guard{Budget: 100}
	_, err := g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, int64(4), o.asked.Load(), "the unread unit is passed")
	data := savedText(t, c)
	assert.Contains(t, data, `"sweptPassed":["a4"]`)

	r, err := pruneguard.Restore(strings.NewReader(data), pruneguard.Config{Oracle: o})
	require.NoError(t, err)
	for _, x := range []*pruneguard.Context{c, r} {
		modelRead(t, x, "seen2")
		res, err := g.Check(x)
		require.NoError(t, err)
		assert.Equal(t, []pruneguard.UnitID{"a4"}, refusedUnits(res.Refused), "taken up once read")
	}
	assert.Equal(t, int64(6), o.asked.Load(), "a4 judged once in each")
	assert.JSONEq(t, savedText(t, c), savedText(t, r))
}

// A unit held for more than one reason keeps the violations Prune makes,
// one per reason, in their place among the sweep's runs, which it parts.
func TestSweepKeepsAUnitHeldForTwoReasonsApart(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 2, 0)
	k := pruneguard.CallID("k2")
	require.NoError(t, c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("keep me"),
		Calls: []pruneguard.Call{{ID: k, Tool: "read"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 100, Content: []byte("no match"),
		Answers: []pruneguard.CallID{k}, Facts: pruneguard.NegativeResult}))
	addRound(t, c, 3, 100, "keep this")
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"pruneguard: regen gate: irreducible unit a0,a1 messages r0,r1",
		"pruneguard: regen gate: irreducible unit a2 messages a2",
		"pruneguard: regen gate: negative-result unit a2 messages r2",
		"pruneguard: regen gate: irreducible unit a3 messages r3",
	}, errorTexts(res.Refused))
	assert.Equal(t, errorTexts(res.Refused), errorTexts(c.Refusals()), "remembered as met")
}

package pruneguard_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard"
)

// A run whose units' records are not numbered in the order of the units
// (a merge put a later record in an earlier unit's place) is still named
// by one violation, however many other units the Context holds.
func TestSweptRunOneViolationWhateverTheUnitNumbers(t *testing.T) {
	for _, plain := range []int{0, 200} {
		t.Run(fmt.Sprint(plain, " plain"), func(t *testing.T) {
			o := &keepOracle{}
			c := keepSession(t, o, 8, plain)
			require.NoError(t, c.Couple("r5", "r1")) // the later unit's record takes the earlier place
			modelRead(t, c, "seen")
			res, err := pruneguard.Guard{Budget: c.Tokens() - 250}.Check(c)
			require.NoError(t, err)
			require.Len(t, res.Refused, 1, "one run met")
			rs := c.Refusals()
			require.Len(t, rs, 1, "one run remembered: %v", errorTexts(rs))
			assert.Equal(t, res.Refused[0].Units, rs[0].Units)
		})
	}
}

// Units refused first, units that may go after: the sweep meets the
// refusals, the policy frees what the check needs from the others.
func TestSweepThenPolicyPrunes(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 5, 5)
	modelRead(t, c, "seen")
	g := pruneguard.Guard{Budget: c.Tokens() - 300}
	res, err := g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.LessOrEqual(t, res.After, g.Budget)
	require.Len(t, res.Refused, 1)
	assert.Len(t, res.Refused[0].Units, 5)
}

// A saved run that is not what a sweep makes (units apart, twice, out of
// order, messages outside them) is refused as a bad state, never taken.
func TestRestoreRefusesMalformedRuns(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 4, 0)
	modelRead(t, c, "seen")
	_, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	data := savedText(t, c)
	good := `{"run":["a0","a1","a2","a3"],"violations":[{"gate":"regen","code":"irreducible","units":["a0","a1","a2","a3"],"messages":["r0","r1","r2","r3"]}]}`
	require.Contains(t, data, good)
	run := func(units, msgs string) string {
		return `{"run":[` + units + `],"violations":[{"gate":"regen","code":"irreducible","units":[` + units + `],"messages":[` + msgs + `]}]}`
	}
	for name, bad := range map[string]string{
		"apart":         run(`"a0","a2"`, `"r0","r2"`),
		"twice":         run(`"a0","a0"`, `"r0","r0"`),
		"reversed":      run(`"a1","a0"`, `"r1","r0"`),
		"not a head":    run(`"r0","a1"`, `"r0","r1"`),
		"unknown":       run(`"a0","a1"`, `"r0","zz"`),
		"no messages":   run(`"a0","a1"`, ``),
		"two runs":      run(`"a0","a1"`, `"r0","r1"`) + "," + run(`"a1","a2"`, `"r1","r2"`),
		"run and unit":  run(`"a0","a1"`, `"r0","r1"`) + `,{"unit":"a1","violations":[{"gate":"regen","code":"irreducible","units":["a1"],"messages":["r1"]}]}`,
		"message twice": run(`"a0","a1"`, `"r0","r0","r1"`),
	} {
		t.Run(name, func(t *testing.T) {
			text := []byte(strings.Replace(data, good, bad, 1))
			var r *pruneguard.Context
			require.NotPanics(t, func() {
				r, err = pruneguard.Restore(bytes.NewReader(pruneguard.Reseal(text)), pruneguard.Config{Oracle: o})
			})
			if err == nil {
				t.Errorf("restored; refusals %v", errorTexts(r.Refusals()))
			}
			assert.ErrorIs(t, err, pruneguard.ErrBadState)
		})
	}
}

// viewUnits lists the units a View shows, oldest first.
func viewUnits(c *pruneguard.Context) []pruneguard.UnitID {
	var out []pruneguard.UnitID
	for u := range c.View().Units() {
		out = append(out, u.ID)
	}
	return out
}

func snapshotIDs(c *pruneguard.Context) []pruneguard.MessageID {
	var out []pruneguard.MessageID
	for _, e := range c.View().Snapshot() {
		out = append(out, e.ID)
	}
	return out
}

// A change to a unit of a sweep's run, or to what the regenerability gate
// rests on, ends its refusal: the View shows the unit again and Refusals
// no longer names it.
func TestSweptRunRefusalEndsWithAChange(t *testing.T) {
	for name, change := range map[string]struct {
		do  func(c *pruneguard.Context) error
		all bool // every refusal ends
	}{
		"pin":       {do: func(c *pruneguard.Context) error { return c.Pin("r2") }},
		"spill":     {do: func(c *pruneguard.Context) error { return c.Spill("r2", pruneguard.Pointer{Store: "s", Key: "k"}) }},
		"mark":      {do: func(c *pruneguard.Context) error { return c.Mark("r2", pruneguard.NegativeResult) }},
		"couple":    {do: func(c *pruneguard.Context) error { return c.Couple("r2", "r3") }},
		"couple on": {do: func(c *pruneguard.Context) error { return c.Couple("r2", "seen") }},
		"step":      {do: func(c *pruneguard.Context) error { return c.PlanStep("s", "r2") }, all: true},
		"seal":      {do: func(c *pruneguard.Context) error { c.SealSteps(true); return nil }, all: true},
		"tool": {do: func(c *pruneguard.Context) error {
			return c.RegisterTool(pruneguard.Tool{Name: "other"})
		}, all: true},
		"forget": {do: func(c *pruneguard.Context) error { c.ForgetRefusals(); return nil }, all: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := &keepOracle{}
			c := keepSession(t, o, 6, 0)
			modelRead(t, c, "seen")
			g := pruneguard.Guard{Budget: 100}
			_, err := g.Check(c)
			require.NoError(t, err)
			require.Len(t, c.Refusals(), 1)
			assert.Equal(t, []pruneguard.UnitID{"sys"}, viewUnits(c)[:1])
			// A walk, to leave the hints of the walks on the run.
			before := viewUnits(c)
			require.NotContains(t, before, pruneguard.UnitID("a2"))
			require.True(t, c.View().Hidden("a2"))
			require.NotContains(t, snapshotIDs(c), pruneguard.MessageID("r2"))
			require.NoError(t, change.do(c))
			named := refusedUnits(c.Refusals())
			assert.NotContains(t, named, pruneguard.UnitID("a2"))
			if change.all {
				assert.Empty(t, named)
			}
			assert.Contains(t, viewUnits(c), pruneguard.UnitID("a2"))
			assert.False(t, c.View().Hidden("a2"))
			assert.Contains(t, snapshotIDs(c), pruneguard.MessageID("r2"))
		})
	}
}

// Sweeping guards check one Context while rounds arrive, pins land and
// others read its refusals and save it: nothing irreducible leaves, and
// at the end every refusal remembered is one the gates make.
func TestRaceSweepWithEvents(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 0, 0)
	var mu sync.Mutex
	next := 0
	add := func() int {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		text := "plain"
		if i%3 != 0 {
			text = "keep this"
		}
		k := pruneguard.CallID(fmt.Sprint("k", i))
		a, r := pruneguard.MessageID(fmt.Sprint("a", i)), pruneguard.MessageID(fmt.Sprint("r", i))
		assert.NoError(t, c.Append(pruneguard.Message{ID: a, Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{{ID: k, Tool: "read"}}}))
		assert.NoError(t, c.Append(pruneguard.Message{ID: r, Role: pruneguard.RoleTool, Tokens: 50 + i%7*20, Content: []byte(text), Answers: []pruneguard.CallID{k}}))
		assert.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("seen", i)), Role: pruneguard.RoleAssistant, Pinned: true}))
		return i
	}
	var wg sync.WaitGroup
	var evicted []pruneguard.MessageID
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := pruneguard.Guard{Budget: 2000, Trigger: 2500}
			for range 150 {
				i := add()
				if w == 1 && i%5 == 0 {
					_ = c.Pin(pruneguard.MessageID(fmt.Sprint("r", i-2)))
				}
				res, err := g.Check(c)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				for _, d := range res.Decisions {
					evicted = append(evicted, d.Evict...)
				}
				mu.Unlock()
				if w == 2 {
					c.Refusals()
					var b bytes.Buffer
					assert.NoError(t, c.Save(&b))
					for range c.View().Units() {
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, id := range evicted {
		var i int
		if _, err := fmt.Sscanf(string(id), "r%d", &i); err == nil {
			assert.Zero(t, i%3, "irreducible %s evicted", id)
		}
	}
	for _, v := range c.Refusals() {
		for _, u := range v.Units {
			un, ok := c.UnitOf(pruneguard.MessageID(u))
			require.True(t, ok)
			_, err := c.Prune(pruneguard.Plan{Evict: un.Messages})
			assert.Error(t, err, "unit %s remembered refused", u)
		}
	}
}

// A call still pending in relaxed mode holds its own unit only: the
// units that closed after it are swept all the same.
func TestSweepPassesAUnitInFlight(t *testing.T) {

	o := &keepOracle{}
	c := pruneguard.NewContext(pruneguard.Config{Oracle: o, Boundary: pruneguard.BoundaryRelaxed})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "long", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "kl", Tool: "read"}}}))
	for i := range 6 {
		addRound(t, c, i, 100, "keep this")
	}
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, int64(6), o.asked.Load())
	require.Len(t, res.Refused, 1, "one run: %v", errorTexts(res.Refused))
	assert.Len(t, res.Refused[0].Units, 6)
}

// Refusals lists the sweep's runs in transcript order, after a compaction
// moved the messages and a change split one of them.
func TestSweptRunsInOrderAfterACompaction(t *testing.T) {
	c := sweptThenCompacted(t, func(*pruneguard.Context) {})
	require.NoError(t, c.Pin("r305"))
	assert.Equal(t, []pruneguard.UnitID{"a300", "a304", "a306"}, firstUnits(c.Refusals()))
}

// The same with a unit held for two reasons amid a run: its violations
// keep their place in the transcript order too.
func TestSweptRefusalsInOrderAfterACompaction(t *testing.T) {
	c := sweptThenCompacted(t, func(c *pruneguard.Context) {
		require.NoError(t, c.Mark("r301", pruneguard.NegativeResult|pruneguard.TransientState))
	})
	require.NoError(t, c.Pin("r305"))
	assert.Equal(t, []pruneguard.UnitID{"a300", "a301", "a301", "a302", "a304", "a306"}, firstUnits(c.Refusals()))
}

// sweptThenCompacted is 300 plain rounds, then three kept rounds (which
// mark may mark), a pinned plain round and four kept rounds, swept by a
// check; then a round pruned, so that the Apply compacts the records of
// the messages gone.
func sweptThenCompacted(t *testing.T, mark func(*pruneguard.Context)) *pruneguard.Context {
	t.Helper()
	o := &keepOracle{}
	c := keepSession(t, o, 0, 300)
	for i := 300; i < 303; i++ {
		addRound(t, c, i, 100, "keep this")
	}
	mark(c)
	addRound(t, c, 303, 100, "plain")
	require.NoError(t, c.Pin("r303"))
	for i := 304; i < 308; i++ {
		addRound(t, c, i, 100, "keep this")
	}
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 100}.Check(c)
	require.NoError(t, err)
	require.Equal(t, pruneguard.Pruned, res.Outcome)
	addRound(t, c, 400, 100, "plain")
	modelRead(t, c, "seen2")
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a400", "r400"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	return c
}

func firstUnits(vs []*pruneguard.Violation) []pruneguard.UnitID {
	var out []pruneguard.UnitID
	for _, v := range vs {
		out = append(out, v.Units[0])
	}
	return out
}

// A Context saved after a sweep, a compaction and a split of a run is
// restored to one that lists the same refusals, saves the same bytes and
// decides as it does.
func TestSweptRestoredAfterACompactionDecidesAlike(t *testing.T) {
	o := &keepOracle{}
	c := keepSession(t, o, 0, 300)
	for i := 300; i < 310; i++ {
		addRound(t, c, i, 100, "keep this")
	}
	addRound(t, c, 310, 100, "plain")
	addRound(t, c, 311, 100, "plain")
	modelRead(t, c, "seen")
	g := pruneguard.Guard{Budget: 100}
	_, err := g.Check(c)
	require.NoError(t, err)
	addRound(t, c, 400, 100, "plain")
	modelRead(t, c, "seen2")
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a400", "r400"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.NoError(t, c.Pin("r305"))
	for i := 500; i < 505; i++ {
		addRound(t, c, i, 100, []string{"keep this", "plain"}[i%2])
	}
	r, err := pruneguard.Restore(strings.NewReader(savedText(t, c)), pruneguard.Config{Oracle: o})
	require.NoError(t, err)
	assert.Equal(t, errorTexts(c.Refusals()), errorTexts(r.Refusals()))
	assert.Equal(t, savedText(t, c), savedText(t, r))
	for _, x := range []*pruneguard.Context{c, r} {
		modelRead(t, x, "seen3")
	}
	for _, budget := range []int{2000, 100} {
		a, errA := pruneguard.Guard{Budget: budget}.Check(c)
		b, errB := pruneguard.Guard{Budget: budget}.Check(r)
		assert.Equal(t, resultText(a, errA), resultText(b, errB), "budget %d", budget)
		assert.Equal(t, errorTexts(c.Refusals()), errorTexts(r.Refusals()))
		assert.Equal(t, savedText(t, c), savedText(t, r))
	}
}

func resultText(res pruneguard.Result, err error) string {
	var ds [][]pruneguard.MessageID
	for _, d := range res.Decisions {
		ds = append(ds, d.Evict, d.Stub)
	}
	return fmt.Sprint(res.Outcome, res.Before, res.After, ds, errorTexts(res.Refused), res.Reason, res.Held, err)
}

// Whatever the session, a sweeping guard remembers refused only units
// the gates refuse, and hides from its policy no unit they would let go.
func TestPropertySweepAgreesWithTheGates(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		o := &keepOracle{}
		// Plain rounds first, perhaps, so that a check evicts enough of them
		// for a compaction.
		pre := rapid.SampledFrom([]int{0, 300}).Draw(rt, "plain first")
		c := keepSession(t, o, 0, pre)
		n := pre + rapid.IntRange(1, 40).Draw(rt, "rounds")
		for i := pre; i < n; i++ {
			addRound(t, c, i, rapid.IntRange(1, 200).Draw(rt, "tokens"), rapid.SampledFrom([]string{"keep this", "plain"}).Draw(rt, "content"))
			switch rapid.IntRange(0, 9).Draw(rt, "event") {
			case 0:
				require.NoError(rt, c.Pin(pruneguard.MessageID(fmt.Sprint("r", i))))
			case 1:
				require.NoError(rt, c.Mark(pruneguard.MessageID(fmt.Sprint("r", i)), pruneguard.NegativeResult|pruneguard.OneTimeSecret))
			case 2:
				if i > pre {
					_ = c.Couple(pruneguard.MessageID(fmt.Sprint("r", i)), pruneguard.MessageID(fmt.Sprint("r", rapid.IntRange(pre, i-1).Draw(rt, "with")))) // gone, perhaps
				}
			case 3:
				modelRead(t, c, pruneguard.MessageID(fmt.Sprint("seen", i)))
				_, err := pruneguard.Guard{Budget: max(1, c.Tokens()*rapid.IntRange(10, 90).Draw(rt, "share")/100)}.Check(c)
				require.NoError(rt, err)
			case 4:
				require.NoError(rt, c.PlanStep(pruneguard.StepID(fmt.Sprint("s", i)), pruneguard.MessageID(fmt.Sprint("r", i))))
			}
		}
		modelRead(t, c, "seen")
		_, err := pruneguard.Guard{Budget: max(1, c.Tokens()*rapid.IntRange(10, 90).Draw(rt, "share")/100)}.Check(c)
		require.NoError(rt, err)
		hidden := map[pruneguard.UnitID]bool{}
		for _, v := range c.Refusals() {
			for _, u := range v.Units {
				hidden[u] = true
				un, ok := c.UnitOf(pruneguard.MessageID(u))
				require.True(rt, ok)
				_, err := c.Prune(pruneguard.Plan{Evict: un.Messages})
				require.Error(rt, err, "unit %s remembered refused", u)
			}
		}
		shown := map[pruneguard.UnitID]bool{}
		for u := range c.View().Units() {
			shown[u.ID] = true
			require.False(rt, hidden[u.ID], "unit %s shown and refused", u.ID)
		}
		for _, u := range c.Units() {
			if shown[u.ID] || hidden[u.ID] {
				continue
			}
			_, err := c.Prune(pruneguard.Plan{Evict: u.Messages})
			require.Error(rt, err, "unit %s hidden, not refused, and may go", u.ID)
		}
		// Restored, it remembers and decides alike.
		r, err := pruneguard.Restore(strings.NewReader(savedText(t, c)), pruneguard.Config{Oracle: o})
		require.NoError(rt, err)
		require.Equal(rt, errorTexts(c.Refusals()), errorTexts(r.Refusals()))
		for i := n; i < n+3; i++ {
			content := rapid.SampledFrom([]string{"keep this", "plain"}).Draw(rt, "content")
			budget := max(1, c.Tokens()*rapid.IntRange(10, 90).Draw(rt, "share")/100)
			for _, x := range []*pruneguard.Context{c, r} {
				addRound(t, x, i, 50, content)
				modelRead(t, x, pruneguard.MessageID(fmt.Sprint("seen", i)))
			}
			a, errA := pruneguard.Guard{Budget: budget}.Check(c)
			b, errB := pruneguard.Guard{Budget: budget}.Check(r)
			require.Equal(rt, resultText(a, errA), resultText(b, errB))
			require.Equal(rt, errorTexts(c.Refusals()), errorTexts(r.Refusals()))
			require.Equal(rt, savedText(t, c), savedText(t, r))
		}
	})
}

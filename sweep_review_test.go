package pruneguard_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

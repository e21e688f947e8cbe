package pruneguard_test

import (
	"fmt"
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

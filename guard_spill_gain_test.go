package pruneguard_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// A spilled unit smaller than its pointer line frees nothing: the guard
// does not apply a decision that would make the prompt larger, however
// many turns it runs, and every decision it applies frees something.
func TestSpillNeverGrowsThePrompt(t *testing.T) {
	for _, pt := range []int{50, 20} {
		spillNeverGrows(t, pt)
	}
}

func spillNeverGrows(t *testing.T, pointerTokens int) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp, PointerTokens: pointerTokens})
	g := pruneguard.Guard{Budget: 200, Spill: sp}
	pruned := 0
	for i := range 40 {
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("u%d", i)), Role: pruneguard.RoleUser, Tokens: 10, Content: []byte("q")}))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("a%d", i)), Role: pruneguard.RoleAssistant, Tokens: 10, Content: []byte("a")}))
		before := c.Tokens()
		res, err := g.Check(c)
		require.NoError(t, err)
		assert.LessOrEqual(t, c.Tokens(), before, "PointerTokens %d, turn %d", pointerTokens, i)
		for _, d := range res.Decisions {
			assert.Positive(t, d.Freed, "PointerTokens %d, turn %d", pointerTokens, i)
			pruned++
		}
		if len(res.Decisions) == 0 && before > g.Budget {
			assert.Equal(t, pruneguard.Deferred, res.Outcome, "PointerTokens %d, turn %d", pointerTokens, i)
		}
	}
	assert.Positive(t, pruned, "PointerTokens %d: units large enough together still go", pointerTokens)
}

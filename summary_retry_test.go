package pruneguard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// negCounter counts every text as a negative number of tokens.
type negCounter struct{}

func (negCounter) Count([]byte) int { return -40 }

// A negative count counts as zero (see [pg.Counter]), from the
// SummaryCounter as from the Counter: a summary never adds to what its
// run frees, nor takes from what the Context holds.
func TestSummaryNegativeCountIsZero(t *testing.T) {
	for name, cfg := range map[string]pg.Config{
		"SummaryCounter": {Counter: pg.ApproxCounter{}, SummaryCounter: negCounter{}},
		"Counter":        {Counter: negCounter{}},
	} {
		t.Run(name, func(t *testing.T) {
			c := pg.NewContext(cfg)
			for _, m := range []pg.Message{
				{ID: "u1", Role: pg.RoleUser, Tokens: 30, Content: []byte("check INC-7")},
				{ID: "a1", Role: pg.RoleAssistant, Tokens: 30, Content: []byte("INC-7 is open")},
				{ID: "u2", Role: pg.RoleUser, Tokens: 5, Content: []byte("next")},
			} {
				require.NoError(t, c.Append(m))
			}
			b, err := c.Brief(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}}})
			require.NoError(t, err)
			d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: b.Replace, ID: "s1", Text: "Summary: INC-7 is open."}})
			require.NoError(t, err)
			require.NotNil(t, d.Summary)
			assert.Equal(t, 0, d.Summary.Tokens)
			assert.Equal(t, 60, d.Freed, "the run's tokens, no more")
			require.NoError(t, c.Apply(d))
			assert.Equal(t, 5, c.Tokens())
		})
	}
}

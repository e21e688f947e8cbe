package pruneguard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// A check that compacts keeps what the policy keeps out of the summary,
// also in a Context whose shape changed before the check (an eviction
// applied): the walks of the check's View see the Context as it is.
func TestCompactionKeepsWhatThePolicyKeeps(t *testing.T) {
	c := NewContext(Config{TextClass: Reconstructible})
	for i := range 12 {
		mustAppend(t, c, Message{ID: MessageID(fmt.Sprint("u", i)), Role: RoleUser, Tokens: 100, Content: []byte(fmt.Sprint("note ", i))})
	}
	mustAppend(t, c, Message{ID: "a", Role: RoleAssistant, Tokens: 10, Content: []byte("read")})
	d, err := c.Prune(Plan{Evict: []MessageID{"u0"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))

	g := Guard{Budget: 300, Summarizer: Digest{}, Policy: OldestFirst{Keep: 3}}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Decisions)
	require.NotNil(t, res.Decisions[0].Summary, "the check compacts first")
	for _, kept := range []MessageID{"u10", "u11", "a"} {
		require.False(t, slices.Contains(res.Decisions[0].Summary.Replace, kept), "%s is kept, not summarized: %v", kept, res.Decisions[0].Summary.Replace)
		_, held := c.Message(kept)
		require.True(t, held, kept)
	}
}

// Under RegenDropUnsafe a summary's run goes whole or not at all: an
// unsafe message refuses the summary, as it would under RegenRefuse,
// rather than leave its unit inside the run or the run empty.
func TestSummaryRunUnderDropUnsafe(t *testing.T) {
	c := NewContext(Config{Regen: RegenDropUnsafe, TextClass: Reconstructible})
	mustAppend(t, c,
		Message{ID: "u1", Role: RoleUser, Tokens: 100, Content: []byte("first")},
		Message{ID: "u2", Role: RoleUser, Tokens: 100, Content: []byte("the nonce"), Facts: OneTimeSecret},
		Message{ID: "u3", Role: RoleUser, Tokens: 100, Content: []byte("third")},
		Message{ID: "a", Role: RoleAssistant, Tokens: 5, Content: []byte("read")},
	)
	for _, run := range [][]MessageID{{"u2"}, {"u1", "u2", "u3"}} {
		_, err := c.Prune(Plan{Summary: &Summary{Replace: run, ID: "s", Text: "what came"}})
		var pe *PruneError
		require.ErrorAs(t, err, &pe, "run %v", run)
		require.Equal(t, CodeSecret, pe.Violations[0].Code)
	}
	// Plain evictions still leave the unsafe unit out.
	d, err := c.Prune(Plan{Evict: []MessageID{"u1", "u2", "u3"}})
	require.NoError(t, err)
	require.Equal(t, []MessageID{"u1", "u3"}, d.Evict)
}

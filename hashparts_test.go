package pruneguard

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHashResultsShared: however the hashing of a decision's results is
// shared out, every result's record holds the first 16 bytes of the
// SHA-256 of the content it had, and every other record the zero hash.
func TestHashResultsShared(t *testing.T) {
	defer func(m, p int) { parallelHashMin, maxHashParts = m, p }(parallelHashMin, maxHashParts)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	build := func() (*Context, Plan, map[MessageID][]byte) {
		c := NewContext(Config{TextClass: Reconstructible})
		require.NoError(t, c.RegisterTool(Tool{Name: "read_file", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
		var p Plan
		want := map[MessageID][]byte{}
		for i := range 60 {
			call := Message{ID: MessageID(fmt.Sprint("a", i)), Role: RoleAssistant, Content: []byte("calling"),
				Calls: []Call{{ID: CallID(fmt.Sprint("k", i)), Tool: "read_file", Args: []byte(fmt.Sprintf(`{"n":%d}`, i))}}}
			// Sizes from empty to a few kB, unevenly, so that the parts
			// are cut inside runs of results of different sizes.
			body := []byte(strings.Repeat(fmt.Sprint(i%7), (i*i*37)%5000))
			res := Message{ID: MessageID(fmt.Sprint("r", i)), Answers: []CallID{call.Calls[0].ID}, Content: body}
			require.NoError(t, c.Append(call))
			require.NoError(t, c.Append(res))
			if i < 50 {
				p.Evict = append(p.Evict, call.ID, res.ID)
				want[res.ID] = body
			}
		}
		return c, p, want
	}
	for _, tc := range []struct{ min, parts int }{{256 << 10, 4}, {1, 2}, {1, 3}, {1, 4}, {4000, 4}, {1 << 30, 4}} {
		parallelHashMin, maxHashParts = tc.min, tc.parts
		c, p, want := build()
		d, err := c.Prune(p)
		require.NoError(t, err)
		recs := d.Records()
		require.Len(t, recs, 100)
		for _, r := range recs {
			if body, ok := want[r.Message]; ok {
				s := sha256.Sum256(body)
				assert.Equal(t, ContentHash(s[:16]), r.Hash, "min %d parts %d: %s", tc.min, tc.parts, r.Message)
			} else {
				assert.True(t, r.Hash.IsZero(), "min %d parts %d: %s is no result", tc.min, tc.parts, r.Message)
			}
		}
		require.NoError(t, c.Apply(d))
	}
}

package pruneguard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pruneguard/pruneguard"
	"github.com/stretchr/testify/require"
)

// summaryContext builds a context of n messages as benchContext does,
// whose 20 rounds in the middle (the run benchPlan names) hold text with
// facts in it (about 1 kB a result), and which ends with the model's
// turn, so that all of it has been read.
func summaryContext(tb testing.TB, n int) (*pruneguard.Context, []pruneguard.MessageID) {
	tb.Helper()
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(c.RegisterTool(pruneguard.Tool{Name: "lookup"})) // open-world: its results must be carried
	must(c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true}))
	start := (n / 5) / 2
	for i := 0; c.Len() < n-1; i++ {
		var user, result []byte
		if i >= start && i < start+20 {
			user = []byte(fmt.Sprintf("Please check order ORD-%d and its log.", 10000+i))
			result = []byte(fmt.Sprintf(`{"order":"ORD-%d","status":"held","path":"/srv/orders/%d.log","amount":"$%d.50","note":%q}`,
				10000+i, i, 100+i, strings.Repeat("lorem ipsum dolor ", 50)))
		}
		must(c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("u%d", i)), Role: pruneguard.RoleUser, Tokens: 20, Content: user}))
		if c.Len()+5 > n {
			continue
		}
		calls := make([]pruneguard.Call, 3)
		for j := range calls {
			calls[j] = pruneguard.Call{ID: pruneguard.CallID(fmt.Sprintf("c%d_%d", i, j)), Tool: "lookup"}
		}
		must(c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("a%d", i)), Role: pruneguard.RoleAssistant, Tokens: 40, Calls: calls}))
		for j := 2; j >= 0; j-- {
			must(c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("r%d_%d", i, j)), Role: pruneguard.RoleTool, Tokens: 300,
				Answers: []pruneguard.CallID{calls[j].ID}, Content: result}))
		}
	}
	must(c.Append(pruneguard.Message{ID: "done", Role: pruneguard.RoleAssistant, Tokens: 10}))
	return c, benchPlan(n).Evict
}

// summaryText writes a summary of run that carries what it must.
func summaryText(tb testing.TB, c *pruneguard.Context, run []pruneguard.MessageID) (*pruneguard.Brief, string) {
	tb.Helper()
	b, err := c.Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: run}})
	if err != nil {
		tb.Fatal(err)
	}
	text, err := pruneguard.Digest{}.Summarize(context.Background(), b)
	if err != nil {
		tb.Fatal(err)
	}
	return b, text
}

// BenchmarkSummary briefs, writes (Digest) and decides the summary of
// the same 100-message run over contexts of growing length. The cost
// must not grow with the length.
func BenchmarkSummary(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		if testing.Short() && n > 100_000 {
			continue
		}
		c, run := summaryContext(b, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				br, text := summaryText(b, c, run)
				if _, err := c.Prune(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: br.Replace, ID: "s", Text: text}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A summary's cost is the run's and its facts', not the context's: the
// best of many runs at 100,000 messages is within twice that at 1,000.
func TestSummaryCostIndependentOfContext(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing")
	}
	best := func(n int) time.Duration {
		c, run := summaryContext(t, n)
		d := time.Duration(1 << 62)
		for range 200 {
			start := time.Now()
			br, text := summaryText(t, c, run)
			_, err := c.Prune(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: br.Replace, ID: "s", Text: text}})
			d = min(d, time.Since(start))
			require.NoError(t, err)
		}
		return d
	}
	small, large := best(1_000), best(100_000)
	t.Logf("a summary of 100 messages: %v at 1,000 messages, %v at 100,000", small, large)
	require.Less(t, large, 2*small+50*time.Microsecond)
}

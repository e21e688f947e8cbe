package einoguard_test

import (
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// The Context counts a summary as the session sends it (Config.Tokens of
// the summary's message), so that a check that compacts reaches the
// budget of the list as sent in one pass, no summary evicted to make up
// for a message's cost the Context did not count.
func TestSummaryCountedAsSent(t *testing.T) {
	tokens := func(m *schema.Message) int { return einoguard.ApproxTokens(m) + 40 } // a message's frame
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 900, Policy: pruneguard.OldestFirst{}, Summarizer: pruneguard.Digest{}},
		Tools: []pruneguard.Tool{readTool}, Tokens: tokens,
	})
	_, r := prune(t, s, summaryConv(6))
	n := 0
	for _, d := range r.Result.Decisions {
		if d.Summary == nil {
			continue
		}
		n++
		if want := tokens(einoguard.SummaryMessage(d.Summary)); d.Summary.Tokens != want {
			t.Errorf("the Context counts the summary %d tokens, the list as sent %d", d.Summary.Tokens, want)
		}
	}
	if n == 0 {
		t.Fatalf("no summary: %+v", r.Result)
	}
	if r.Result.After > 900 {
		t.Errorf("sent %d tokens, budget 900", r.Result.After)
	}
}

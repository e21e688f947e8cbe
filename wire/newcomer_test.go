package wire_test

import (
	"testing"

	"github.com/pruneguard/pruneguard/internal/newcomer"
)

// The newcomer's scenario: a 300-turn Anthropic agent on a Session
// under 8,000 tokens, with a directory spill store, a logger and the
// recall tool and a restart halfway, finds at the last turn the ticket
// given at turn 3, no segment written twice; every
// request is within the budget and nothing is logged at warning level.
// (The tokenizer module runs it with the o200k counter.)
func TestNewcomerScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("a 300-turn session")
	}
	out := newcomer.Run(t, newcomer.Config{Turns: 300, Budget: 8000, Dir: t.TempDir()})
	if out.Found != newcomer.Ticket {
		t.Fatalf("the model found %q, want %s", out.Found, newcomer.Ticket)
	}
	t.Logf("%d requests, largest %d tokens, %d segments spilled, found by recall: %v", out.Requests, out.Max, out.Spills, out.ByRecall)
}

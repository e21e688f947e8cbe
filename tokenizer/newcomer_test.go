package tokenizer_test

import (
	"testing"

	"github.com/pruneguard/pruneguard/internal/newcomer"
	"github.com/pruneguard/pruneguard/tokenizer"
)

// The newcomer's scenario with the o200k tokenizer as the session's
// counter: a 300-turn Anthropic agent under 8,000 tokens finds, at the
// last turn, the ticket given at turn 3, every request within the
// budget as the tokenizer counts it.
func TestNewcomerScenarioO200k(t *testing.T) {
	if testing.Short() {
		t.Skip("a 300-turn session")
	}
	out := newcomer.Run(t, newcomer.Config{Turns: 300, Budget: 8000, Counter: tokenizer.O200k(), Dir: t.TempDir()})
	if out.Found != newcomer.Ticket {
		t.Fatalf("the model found %q, want %s", out.Found, newcomer.Ticket)
	}
	t.Logf("%d requests, largest %d tokens, %d segments spilled, found by recall: %v", out.Requests, out.Max, out.Spills, out.ByRecall)
}

package einoguard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// A session with a Summarizer compacts: the list it returns has a user
// message with the summary in the place of the messages it replaced, is
// a well-formed conversation within the budget, and still holds every
// ticket the tool results gave (the tool is not annotated: irreducible,
// so the summary carries them). Passed back with new messages, as a
// MessageRewriter does, the list is followed without a rebuild, and a
// later compaction replaces the summary with what followed it.
func TestSessionSummary(t *testing.T) {
	const budget = 1500
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}}})
	list := []*schema.Message{schema.SystemMessage(systemPrompt), schema.UserMessage("look the tickets up")}
	summaries := 0
	for k := 1; k <= 30; k++ {
		id := fmt.Sprintf("c%d", k)
		list = append(list,
			schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "lookup", Arguments: fmt.Sprintf(`{"n":%d}`, k)}}}),
			schema.ToolMessage(fmt.Sprintf("ticket INC-%d is open. ", 4700+k)+strings.Repeat("lorem ipsum ", 40), id, schema.WithToolName("lookup")),
			schema.AssistantMessage("noted", nil), schema.UserMessage("next"))
		out, r := prune(t, s, list)
		if r.Rebuilt && k > 1 {
			t.Fatalf("round %d: the list passed back was rebuilt", k)
		}
		summaries += len(r.Summaries)
		if n := s.Tokens(); n > budget {
			t.Errorf("round %d: %d tokens, over the budget", k, n)
		}
		text := ""
		for _, m := range out {
			text += m.Content + "\n"
		}
		for j := 1; j <= k; j++ {
			if !strings.Contains(text, fmt.Sprintf("INC-%d", 4700+j)) {
				t.Fatalf("round %d: ticket INC-%d left the list", k, 4700+j)
			}
		}
		if len(r.Summaries) > 0 && strings.Count(text, "[Summary of") != 1 {
			t.Errorf("round %d: %d summaries in the list, want one", k, strings.Count(text, "[Summary of"))
		}
		for _, m := range r.Summaries {
			if m.Role != schema.User || !strings.HasPrefix(m.Content, "[Summary of") {
				t.Errorf("a summary message %v %q", m.Role, m.Content)
			}
		}
		list = out
	}
	if summaries < 2 {
		t.Errorf("%d compactions in 30 rounds", summaries)
	}
}

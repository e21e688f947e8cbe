package einoguard_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// A call whose turn ended without its result (the runtime lost it, or a
// user message cut in) can never be answered: it does not hold up every
// later prune as a call still waiting would.
func TestUnansweredCallIsAbandoned(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 600, Policy: pruneguard.OldestFirst{}},
		Tools: []pruneguard.Tool{readTool},
	})
	c := newConv("task")
	c.msgs = append(c.msgs, schema.AssistantMessage("", []schema.ToolCall{{ID: "lost", Function: schema.FunctionCall{Name: "read_file", Arguments: `{}`}}}))
	c.say(schema.User, "never mind that; read the others").round("read_file", 2000).round("read_file", 2000).say(schema.Assistant, "read")
	out, r, err := s.Prune(context.Background(), c.msgs)
	if err != nil || r.Result.Outcome != pruneguard.Pruned || r.Result.After > 600 {
		t.Fatalf("outcome %s, %d tokens, %v: the lost call held everything up", r.Result.Outcome, r.Result.After, err)
	}
	if slices.Contains(out, c.msgs[2]) && r.Result.After > 600 {
		t.Errorf("sent %q", contents(out))
	}
}

// A result that answers no call waiting (its call cut off the start of
// the list, or a second result for one call) is kept, as a result of a
// tool nobody described, and the rest is guarded as usual.
func TestResultWithoutCallIsKept(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 700, Policy: pruneguard.OldestFirst{}},
		Tools: []pruneguard.Tool{readTool},
	})
	msgs := []*schema.Message{schema.SystemMessage(systemPrompt),
		schema.ToolMessage("receipt of a call cut off "+strings.Repeat("z", 400), "gone", schema.WithToolName("deploy"))}
	msgs = append(msgs, newConv("task").round("read_file", 2000).round("read_file", 2000).msgs[1:]...)
	msgs = append(msgs, schema.ToolMessage("a second result", "c2"), schema.AssistantMessage("read", nil))
	out, r, err := s.Prune(context.Background(), msgs)
	if err != nil || r.Result.Outcome != pruneguard.Pruned {
		t.Fatalf("outcome %s, %v", r.Result.Outcome, err)
	}
	if !slices.Contains(out, msgs[1]) || !slices.Contains(out, msgs[len(msgs)-2]) {
		t.Errorf("an unpaired result was pruned: %q", contents(out))
	}
	if !slices.Contains(r.Evicted, msgs[3]) {
		t.Errorf("the first read stayed: evicted %q", contents(r.Evicted))
	}
}

// Call ids used twice in one turn pair with their results in order.
func TestDuplicateCallIDsPairInOrder(t *testing.T) {
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 300, Policy: pruneguard.OldestFirst{}}, Tools: []pruneguard.Tool{readTool}})
	msgs := append(newConv("task").msgs,
		schema.AssistantMessage("", []schema.ToolCall{{ID: "0", Function: schema.FunctionCall{Name: "read_file"}}, {ID: "0", Function: schema.FunctionCall{Name: "read_file"}}}),
		schema.ToolMessage(strings.Repeat("a", 1000), "0", schema.WithToolName("read_file")),
		schema.ToolMessage(strings.Repeat("b", 1000), "0", schema.WithToolName("read_file")),
		schema.AssistantMessage("", []schema.ToolCall{{ID: "0", Function: schema.FunctionCall{Name: "read_file"}}}),
		schema.ToolMessage("c", "0", schema.WithToolName("read_file")),
		schema.AssistantMessage("done", nil))
	_, r, err := s.Prune(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Evicted) != 3 || r.Evicted[0] != msgs[2] || r.Evicted[2] != msgs[4] {
		t.Errorf("evicted %q, want the first batch whole", contents(r.Evicted))
	}
}

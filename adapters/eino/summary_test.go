package einoguard_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
	"github.com/pruneguard/pruneguard/spill"
)

// summaryConv is a conversation of reads, each followed by what the model
// concluded from it (text, with facts a summary must carry).
func summaryConv(rounds int) []*schema.Message {
	msgs := newConv("audit the parser").msgs
	for n := 1; n <= rounds; n++ {
		id := fmt.Sprintf("c%d", n)
		msgs = append(msgs,
			schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, n)}}}),
			schema.ToolMessage(strings.Repeat("r", 1600), id, schema.WithToolName("read_file")),
			schema.AssistantMessage(fmt.Sprintf("f%d.go has bug BUG-%d at line %d.", n, 100+n, 10*n), nil))
	}
	return append(msgs, schema.UserMessage("now fix them"))
}

// A summary replaces its run with one user message, in the run's place,
// holding the summary's text; the next pass goes on from the list as sent
// and from the whole history alike.
func TestSummaryTakesItsRunsPlace(t *testing.T) {
	for _, mode := range []string{"modifier", "rewriter"} {
		t.Run(mode, func(t *testing.T) {
			s := mustNew(t, einoguard.Config{
				Guard: pruneguard.Guard{Budget: 700, Policy: pruneguard.OldestFirst{}, Summarizer: pruneguard.Digest{}},
				Tools: []pruneguard.Tool{readTool},
			})
			msgs := summaryConv(4)
			out, r := prune(t, s, msgs)
			var summary *pruneguard.Summary
			for _, d := range r.Result.Decisions {
				if d.Summary != nil {
					summary = d.Summary
				}
			}
			if summary == nil {
				t.Fatalf("no summary: %+v", r.Result)
			}
			at := slices.IndexFunc(out, func(m *schema.Message) bool { return m.Content == summary.Text })
			if at < 0 || out[at].Role != schema.User {
				t.Fatalf("sent %q: no user message with the summary %q", contents(out), summary.Text)
			}
			// In the place of the run: after what came before its first
			// message, before what came after its last.
			first := slices.Index(msgs, r.Evicted[0])
			if at != first || !slices.Equal(out[:at], msgs[:first]) {
				t.Errorf("summary at %d, its run began at %d: %q", at, first, contents(out))
			}
			for _, m := range r.Evicted {
				if slices.Contains(out, m) {
					t.Errorf("%q was summarized and is still sent", m.Content)
				}
			}
			for n := 1; n <= 4; n++ {
				if fact := fmt.Sprintf("BUG-%d", 100+n); slices.ContainsFunc(r.Evicted, func(m *schema.Message) bool { return strings.Contains(m.Content, fact) }) && !strings.Contains(summary.Text, fact) {
					t.Errorf("the summary dropped %s", fact)
				}
			}
			if got := sum(out, einoguard.ApproxTokens); got != r.Result.After || got > 700 {
				t.Errorf("sent %d tokens, report %d, budget 700", got, r.Result.After)
			}
			in := append(slices.Clone(msgs), schema.AssistantMessage("fixing", nil))
			if mode == "rewriter" {
				in = append(slices.Clone(out), in[len(in)-1])
			}
			got, r2 := prune(t, s, in)
			if r2.Rebuilt || r2.Taken != 1 || got[at].Content != summary.Text {
				t.Errorf("next pass: rebuilt %v, took %d, sent %q", r2.Rebuilt, r2.Taken, contents(got))
			}
			// More rounds: the summary is replaced in turn, by a summary
			// that carries its facts.
			more := summaryConv(8)[2:]
			for i := range more {
				more[i] = copies(more[i : i+1])[0]
				if more[i].Role == schema.Tool || len(more[i].ToolCalls) > 0 {
					more[i] = renumber(more[i])
				}
			}
			in = append(in, more...)
			if mode == "rewriter" {
				in = append(slices.Clone(got), more...)
			}
			got, r2 = prune(t, s, in)
			if r2.Rebuilt || !slices.ContainsFunc(r2.Evicted, func(m *schema.Message) bool { return m.Content == summary.Text }) {
				t.Fatalf("the first summary stayed: rebuilt %v, sent %q", r2.Rebuilt, contents(got))
			}
			if slices.ContainsFunc(got, func(m *schema.Message) bool { return m.Content == summary.Text }) {
				t.Errorf("the first summary is still sent: %q", contents(got))
			}
			last := got[slices.IndexFunc(got, func(m *schema.Message) bool { return strings.HasPrefix(m.Content, "[Summary of") })]
			for _, fact := range []string{"BUG-101", "BUG-104"} {
				if !strings.Contains(last.Content, fact) {
					t.Errorf("the new summary dropped %s", fact)
				}
			}
			if n := sum(got, einoguard.ApproxTokens); n != r2.Result.After || n > 700 {
				t.Errorf("sent %d tokens, report %d, budget 700", n, r2.Result.After)
			}
		})
	}
}

// renumber gives a call or a result of summaryConv new call ids.
func renumber(m *schema.Message) *schema.Message {
	if m.ToolCallID != "" {
		m.ToolCallID = "x" + m.ToolCallID
	}
	for i := range m.ToolCalls {
		m.ToolCalls[i].ID = "x" + m.ToolCalls[i].ID
	}
	return m
}

// A summary of spilled content carries its pointer: no line of the note
// repeats it.
func TestSummaryCarriesItsPointer(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}, Namespace: "conv-3"}
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 1200, Policy: pruneguard.OldestFirst{}, Summarizer: pruneguard.Digest{}, Spill: sp},
		Tools: []pruneguard.Tool{readTool},
	})
	out, r := prune(t, s, deployConv(true, 3))
	var summary *pruneguard.Summary
	for _, d := range r.Result.Decisions {
		if d.Summary != nil {
			summary = d.Summary
		}
	}
	if summary == nil || len(summary.Pointers) == 0 {
		t.Fatalf("no summary carrying a pointer: %+v", r.Result)
	}
	for _, p := range summary.Pointers {
		if !strings.Contains(summary.Text, p.Key) {
			t.Errorf("the summary does not name %s", p.Key)
		}
		for _, m := range out {
			if m.Role != schema.Tool && m.Content != summary.Text && strings.Contains(m.Content, p.Key) {
				t.Errorf("%s message %q repeats the summary's pointer", m.Role, m.Content)
			}
		}
	}
	if n := sum(out, einoguard.ApproxTokens); n != r.Result.After || n > 1200 {
		t.Errorf("sent %d tokens, report %d, budget 1200", n, r.Result.After)
	}
}

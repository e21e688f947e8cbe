package einoguard_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// copies returns msgs with every message replaced by an equal copy, as
// eino's adk events and state snapshots hand them back.
func copies(msgs []*schema.Message) []*schema.Message {
	out := make([]*schema.Message, len(msgs))
	for i, m := range msgs {
		c := *m
		c.ToolCalls = slices.Clone(m.ToolCalls)
		out[i] = &c
	}
	return out
}

// A history handed back as copies of the same messages is the same
// history: the session goes on from it, and what the guard learnt stays.
func TestCopiesAreTheSameHistory(t *testing.T) {
	for _, mode := range []string{"modifier", "rewriter"} {
		t.Run(mode, func(t *testing.T) {
			s := mustNew(t, einoguard.Config{
				Guard: pruneguard.Guard{Budget: 900, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}},
				Tools: []pruneguard.Tool{readTool},
			})
			c := newConv("task").round("read_file", 2000).round("read_file", 2000)
			out, r := prune(t, s, c.msgs)
			if len(r.Stubbed) != 1 {
				t.Fatalf("stubbed %d, want 1", len(r.Stubbed))
			}
			for i := 0; i < 3; i++ {
				c.round("read_file", 2000)
				var in []*schema.Message
				if mode == "modifier" {
					in = copies(c.msgs)
				} else {
					in = append(copies(out), c.msgs[len(c.msgs)-2:]...)
				}
				out, r = prune(t, s, in)
				if r.Rebuilt || r.Taken != 2 {
					t.Fatalf("round %d: copies rebuilt %v, took %d; want the 2 new messages", i, r.Rebuilt, r.Taken)
				}
				if len(r.Stubbed) != 1 || r.Stubbed[0].ToolCallID != c.msgs[len(c.msgs)-3].ToolCallID {
					t.Fatalf("round %d: stubbed %v, want only the result that left the window", i, contents(r.Stubbed))
				}
			}
		})
	}
}

// A list whose length and first and last messages are those of the last
// one, but with a message in the middle changed, is not the last list:
// the model is sent the message as it is now, never the old one.
func TestChangedMiddleIsNotSentStale(t *testing.T) {
	for _, mode := range []string{"modifier", "rewriter"} {
		t.Run(mode, func(t *testing.T) {
			s := mustNew(t, einoguard.Config{
				Guard: pruneguard.Guard{Budget: 100000},
				Tools: []pruneguard.Tool{readTool},
			})
			c := newConv("task").round("read_file", 100).round("read_file", 100)
			out, _ := prune(t, s, c.msgs)
			in := slices.Clone(c.msgs)
			if mode == "rewriter" {
				in = slices.Clone(out)
			}
			// Same length, same first and last pointers; the task and a
			// result in the middle edited (new messages, as a runtime that
			// rewrites its history makes them).
			in[1] = schema.UserMessage("a different task")
			edited := *in[3]
			edited.Content = "the file as it reads now"
			in[3] = &edited
			got, _ := prune(t, s, in)
			if !slices.Equal(contents(got), contents(in)) {
				t.Fatalf("sent %q, want the list as given %q", contents(got), contents(in))
			}
			// And a list that extends it goes on from the edited messages.
			in = append(in, schema.AssistantMessage("ok", nil))
			got, r := prune(t, s, in)
			if r.Taken != 1 || !slices.Equal(contents(got), contents(in)) {
				t.Fatalf("took %d, sent %q", r.Taken, contents(got))
			}
		})
	}
}

// A message edited to the same length in place of an equal message is
// told apart by its content, not only by its size.
func TestChangedContentSameLength(t *testing.T) {
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 100000}, Tools: []pruneguard.Tool{readTool}})
	c := newConv("task").round("read_file", 10)
	prune(t, s, c.msgs)
	in := copies(c.msgs)
	in[3].Content = strings.Repeat("s", 10)
	in[2].ToolCalls[0].Function.Arguments = `{"n":9}`
	in = append(in, schema.AssistantMessage("done", nil))
	got, r := prune(t, s, in)
	if !r.Rebuilt || got[3].Content != in[3].Content || got[2].ToolCalls[0].Function.Arguments != `{"n":9}` {
		t.Fatalf("rebuilt %v, sent %q", r.Rebuilt, contents(got))
	}
}

// eino's parallel tools may hand their results back in another order:
// the same results, the same history.
func TestReorderedResultsAreTheSameHistory(t *testing.T) {
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 100000}, Tools: []pruneguard.Tool{readTool}})
	msgs := append(newConv("task").msgs,
		schema.AssistantMessage("", []schema.ToolCall{{ID: "a", Function: schema.FunctionCall{Name: "read_file"}}, {ID: "b", Function: schema.FunctionCall{Name: "read_file"}}}),
		schema.ToolMessage("result a", "a", schema.WithToolName("read_file")),
		schema.ToolMessage("result b", "b", schema.WithToolName("read_file")),
		schema.AssistantMessage("read both", nil))
	prune(t, s, msgs)
	in := copies(msgs)
	in[3], in[4] = in[4], in[3]
	in = append(in, schema.UserMessage("next"))
	out, r := prune(t, s, in)
	if r.Rebuilt || r.Taken != 1 || len(out) != len(in) {
		t.Errorf("reordered results: rebuilt %v, took %d, sent %d", r.Rebuilt, r.Taken, len(out))
	}
	// A result changed in the block is no reordering.
	in = copies(in)
	in[3].Content = "result b, edited"
	if got, r := prune(t, s, in); !r.Rebuilt || got[3].Content != "result b, edited" && got[4].Content != "result b, edited" {
		t.Errorf("an edited result in a reordered block: rebuilt %v, sent %q", r.Rebuilt, contents(got))
	}
}

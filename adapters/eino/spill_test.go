package einoguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
	"github.com/pruneguard/pruneguard/spill"
)

// spillSession is a session that spills to a memory store, set up as
// the documentation says: Guard.Spill and Config.Context's Resolver.
func spillSession(t *testing.T, budget int, policy pruneguard.Policy) (*einoguard.Session, *spill.Spiller) {
	t.Helper()
	sp := &spill.Spiller{Store: &spill.Memory{}, Namespace: "conv-1"}
	tools := []pruneguard.Tool{readTool, {Name: "deploy"}}
	scoped(tools)
	s := mustNew(t, einoguard.Config{
		Guard:   pruneguard.Guard{Budget: budget, Policy: policy, Spill: sp},
		Context: pruneguard.Config{Resolver: sp},
		Tools:   tools,
	})
	return s, sp
}

// receipt is the content of deploy result n: irreducible, 2,000 bytes.
func receipt(n int) string {
	return fmt.Sprintf("deployed release r-%d ", n) + strings.Repeat("d", 1980)
}

// deployConv is a conversation of deploys (whose results cannot be had
// again) read by the model and answered.
func deployConv(system bool, rounds int) []*schema.Message {
	var msgs []*schema.Message
	if system {
		msgs = append(msgs, schema.SystemMessage(systemPrompt))
	}
	msgs = append(msgs, schema.UserMessage("deploy everything"))
	for n := 1; n <= rounds; n++ {
		id := fmt.Sprintf("d%d", n)
		msgs = append(msgs,
			schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "deploy", Arguments: fmt.Sprintf(`{"service":"s%d"}`, n)}}}),
			schema.ToolMessage(receipt(n), id, schema.WithToolName("deploy")))
	}
	return append(msgs, schema.AssistantMessage("all deployed", nil), schema.UserMessage("what did you deploy?"))
}

// A spilled result that is stubbed shows where its content went, never
// the stub text that tells the model to call a mutating tool again; and
// its content reads back.
func TestSpilledStubShowsPointer(t *testing.T) {
	ctx := context.Background()
	s, sp := spillSession(t, 1500, pruneguard.KeepLastToolUses{Keep: 1, Stub: true})
	msgs := deployConv(true, 3)
	out, r := prune(t, s, msgs)
	if len(r.Stubbed) == 0 {
		t.Fatalf("nothing stubbed: %+v", r.Result)
	}
	ptrs := map[pruneguard.MessageID]pruneguard.Pointer{}
	for _, d := range r.Result.Decisions {
		for _, n := range d.Pointers {
			ptrs[n.Message] = n.Pointer
		}
	}
	shown := 0
	for _, m := range out {
		if m.Role != schema.Tool || strings.HasPrefix(m.Content, "deployed release") {
			continue
		}
		if m.Content == pruneguard.DefaultStubText || !strings.Contains(m.Content, "call recall with key") {
			t.Errorf("stubbed deploy receipt %s shows %q, want its pointer", m.ToolCallID, m.Content)
			continue
		}
		shown++
		var p pruneguard.Pointer
		for _, q := range ptrs {
			if sp.PointerText(q) == m.Content {
				p = q
			}
		}
		if p.IsZero() {
			t.Fatalf("%q is no pointer text of the decisions' pointers %v", m.Content, ptrs)
		}
		back, err := sp.Recall(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		// Each message is stored as the eino message it was.
		found := false
		for _, b := range back {
			var got schema.Message
			if err := json.Unmarshal(b.Content, &got); err != nil {
				t.Fatalf("stored content %.80q is no eino message: %v", b.Content, err)
			}
			n, _ := strconv.Atoi(strings.TrimPrefix(m.ToolCallID, "d"))
			found = found || (got.Role == schema.Tool && got.ToolCallID == m.ToolCallID && got.ToolName == "deploy" && got.Content == receipt(n))
		}
		if !found {
			t.Errorf("the segment of %s does not hold its receipt: %d messages", m.ToolCallID, len(back))
		}
	}
	if shown != len(r.Stubbed) {
		t.Errorf("%d pointers shown for %d stubs", shown, len(r.Stubbed))
	}
	if got := sum(out, einoguard.ApproxTokens); got > 1500 {
		t.Errorf("sent %d tokens, budget 1500", got)
	}
}

// Spilled content that leaves the list leaves its pointer where the model
// reads it: a system message after the leading system messages, or, in a
// list without one, a user message first.
func TestEvictedSpillLeavesPointerLine(t *testing.T) {
	for _, system := range []bool{true, false} {
		t.Run(fmt.Sprintf("system=%v", system), func(t *testing.T) {
			ctx := context.Background()
			s, sp := spillSession(t, 1200, pruneguard.OldestFirst{})
			msgs := deployConv(system, 3)
			out, r := prune(t, s, msgs)
			if len(r.Evicted) == 0 || len(r.Result.Spills) == 0 {
				t.Fatalf("nothing spilled and evicted: %+v", r.Result)
			}
			var lines []string
			for _, d := range r.Result.Decisions {
				for _, n := range d.Pointers {
					if line := sp.PointerText(n.Pointer); !contains(lines, line) {
						lines = append(lines, line)
					}
				}
			}
			at, role := 1, schema.System
			if !system {
				at, role = 0, schema.User
			}
			if len(out) <= at || out[at].Role != role {
				t.Fatalf("sent %q: no %s note at %d", contents(out), role, at)
			}
			if want := strings.Join(lines, "\n"); out[at].Content != want {
				t.Errorf("note %q, want the pointer lines %q", out[at].Content, want)
			}
			for _, d := range r.Result.Decisions {
				for _, n := range d.Pointers {
					back, err := sp.Recall(ctx, n.Pointer)
					if err != nil || len(back) == 0 {
						t.Fatalf("recall %v: %v", n.Pointer, err)
					}
				}
			}
			if got := sum(out, einoguard.ApproxTokens); got > 1200 || got != r.Result.After {
				t.Errorf("sent %d tokens, report %d, budget 1200", got, r.Result.After)
			}
			// The next pass goes on from the list as sent (a rewriter) and
			// from the whole history (a modifier) alike.
			back := append(append([]*schema.Message(nil), out...), schema.AssistantMessage("r-1, r-2 and r-3", nil))
			if _, r := prune(t, s, back); r.Rebuilt || r.Taken != 1 {
				t.Errorf("the list as sent, extended: rebuilt %v, took %d", r.Rebuilt, r.Taken)
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

package einoguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// jsonTokens counts a message as a quarter of its JSON: the envelope
// (role, call ids, tool name) costs tokens too, as with a real request.
func jsonTokens(m *schema.Message) int {
	b, _ := json.Marshal(m)
	return (len(b) + 3) / 4
}

// sum counts a list with count.
func sum(msgs []*schema.Message, count func(*schema.Message) int) int {
	n := 0
	for _, m := range msgs {
		n += count(m)
	}
	return n
}

// Every list the model is sent holds no more than the budget, counted by
// the session's own counter over the messages as sent: stubs, pointer
// texts and lines included.
func TestSentWithinBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count func(*schema.Message) int
	}{{"approx", nil}, {"json", jsonTokens}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			count := tc.count
			if count == nil {
				count = einoguard.ApproxTokens
			}
			tools, err := einoguard.Tools(ctx, testTools(), map[string]pruneguard.Annotations{"read_file": closedWorld})
			if err != nil {
				t.Fatal(err)
			}
			scoped(tools)
			const budget = 3000
			rec := &recorder{}
			s := mustNew(t, einoguard.Config{
				Guard:    pruneguard.Guard{Budget: budget, Policy: pruneguard.KeepLastToolUses{Keep: 2, Stub: true}},
				Tools:    tools,
				Tokens:   tc.count,
				OnReport: rec.add,
			})
			f := &fakeModel{rounds: 30, deploy: 7}
			agent, err := react.NewAgent(ctx, &react.AgentConfig{
				ToolCallingModel: f,
				ToolsConfig:      compose.ToolsNodeConfig{Tools: testTools()},
				MaxStep:          100,
				MessageModifier:  s.Modifier(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := agent.Generate(ctx, []*schema.Message{schema.SystemMessage(systemPrompt), schema.UserMessage("go")}); err != nil {
				t.Fatal(err)
			}
			inputs, errs := f.snapshot()
			for _, err := range errs {
				t.Error(err)
			}
			reps := rec.all()
			stubbed := 0
			for i, in := range inputs {
				if got := sum(in, count); got > budget {
					t.Errorf("model call %d: sent %d tokens by the session's counter, budget %d", i+1, got, budget)
				}
				if got := sum(in, count); got != reps[i].Result.After {
					t.Errorf("model call %d: sent %d tokens, the report says %d", i+1, got, reps[i].Result.After)
				}
				stubbed += len(reps[i].Stubbed)
			}
			if stubbed == 0 {
				t.Fatal("nothing was stubbed")
			}
			if got := sum(inputs[len(inputs)-1], count); s.Tokens() != got {
				t.Errorf("Session.Tokens %d, the last list sent counts %d", s.Tokens(), got)
			}
		})
	}
}

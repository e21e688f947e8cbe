package einoguard_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// A session used as a MessageModifier: the model gets the pruned list,
// the caller's history stays whole.
func ExampleSession_Modifier() {
	read, _ := einoguard.ToolOf(&schema.ToolInfo{Name: "read_file"}, pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)})
	s, err := einoguard.New(einoguard.Config{
		Guard: pruneguard.Guard{Budget: 1200, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}},
		Tools: []pruneguard.Tool{read},
	})
	if err != nil {
		panic(err)
	}
	history := []*schema.Message{
		schema.SystemMessage("You are a coding agent."),
		schema.UserMessage("Why does the build fail?"),
	}
	for i, f := range []string{"go.mod", "main.go"} {
		id := fmt.Sprintf("call_%d", i+1)
		history = append(history,
			schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"` + f + `"}`}}}),
			schema.ToolMessage(strings.Repeat("x", 4000), id, schema.WithToolName("read_file")))
	}
	modify := s.Modifier() // react.AgentConfig{MessageModifier: s.Modifier()}
	for _, m := range modify(context.Background(), history) {
		switch {
		case m.Role == schema.Tool:
			fmt.Printf("%s %s: %.40s\n", m.Role, m.ToolCallID, m.Content)
		case len(m.ToolCalls) > 0:
			fmt.Printf("%s calls %s\n", m.Role, m.ToolCalls[0].ID)
		default:
			fmt.Printf("%s: %s\n", m.Role, m.Content)
		}
	}
	fmt.Println("tokens:", s.Tokens(), "history:", len(history[3].Content), "bytes kept")
	// Output:
	// system: You are a coding agent.
	// user: Why does the build fail?
	// assistant calls call_1
	// tool call_1: [tool result removed to save context; ca
	// assistant calls call_2
	// tool call_2: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
	// tokens: 1045 history: 4000 bytes kept
}

// Wiring a session into an eino ReAct agent (for an adk ChatModelAgent,
// pass s.Middleware() in its Middlewares instead).
func Example() {
	ctx := context.Background()
	agentTools := testTools() // read_file and deploy
	chatModel := &fakeModel{rounds: 6}

	tools, err := einoguard.Tools(ctx, agentTools, map[string]pruneguard.Annotations{
		"read_file": {ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)},
	})
	if err != nil {
		panic(err)
	}
	s, err := einoguard.New(einoguard.Config{
		Guard: pruneguard.Guard{Budget: 2000, Policy: pruneguard.KeepLastToolUses{Keep: 3, Stub: true}},
		Tools: tools,
	})
	if err != nil {
		panic(err)
	}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: chatModel,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: agentTools},
		MessageModifier:  s.Modifier(),
		MaxStep:          40,
	})
	if err != nil {
		panic(err)
	}
	answer, err := agent.Generate(ctx, []*schema.Message{
		schema.SystemMessage("You are a coding agent."),
		schema.UserMessage("Read the project."),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(answer.Content)
	fmt.Println("tokens in the model's view:", s.Tokens())
	// Output:
	// done after 6 rounds
	// tokens in the model's view: 1711
}

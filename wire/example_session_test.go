package wire_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// A runtime feeds a session the messages it already has, in its
// provider's JSON, and asks for the guarded body before each model call.
func ExampleSession() {
	s, err := wire.NewSession(wire.SessionConfig{
		Dialect:  wire.Anthropic,
		Guard:    pruneguard.Guard{Budget: 400},
		Trigger:  500, // requests up to 500 tokens keep the last pruned prefix
		MinClear: 150, // a prune frees at least this much
		Config:   pruneguard.Config{TextClass: pruneguard.Reconstructible},
	})
	if err != nil {
		panic(err)
	}
	_ = s.SetRequest(json.RawMessage(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Be brief."}`))
	_, _ = s.Append(json.RawMessage(`{"role":"user","content":"Summarise the design doc."}`))
	for i := range 7 {
		_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"Part %d: %s"}`, i, strings.Repeat("detail ", 40))))
		_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"And part %d?"}`, i+1)))
		body, rep, err := s.Request()
		if err != nil {
			panic(err)
		}
		b, _ := wire.Read(body, wire.Anthropic)
		fmt.Printf("request %d: %d -> %d tokens, %d messages, evicted %v\n", i+1, rep.Before, rep.After, len(b.Messages), rep.Evicted)
	}
	// Output:
	// request 1: 126 -> 126 tokens, 3 messages, evicted []
	// request 2: 217 -> 217 tokens, 5 messages, evicted []
	// request 3: 308 -> 308 tokens, 7 messages, evicted []
	// request 4: 399 -> 399 tokens, 9 messages, evicted []
	// request 5: 490 -> 490 tokens, 11 messages, evicted []
	// request 6: 581 -> 399 tokens, 9 messages, evicted [m1 m2 m3 m4]
	// request 7: 490 -> 490 tokens, 11 messages, evicted []
}

// Render writes a Context a runtime built with events as a request body
// of any provider.
func ExampleRender() {
	c := pruneguard.NewContext(pruneguard.Config{})
	_ = c.RegisterTool(pruneguard.Tool{Name: "ls", Schema: json.RawMessage(`{"type":"object"}`)})
	_ = c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("What is here?")})
	_ = c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "toolu_1", Tool: "ls", Args: json.RawMessage(`{}`)}}})
	_ = c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Content: []byte("go.mod main.go"), Answers: []pruneguard.CallID{"toolu_1"}})
	body, err := wire.Render(wire.Anthropic, c, wire.RenderOptions{Fields: map[string]json.RawMessage{
		"model": json.RawMessage(`"claude-sonnet-4-5"`), "max_tokens": json.RawMessage(`256`)}})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(body))
	// Output:
	// {"max_tokens":256,"messages":[{"content":[{"text":"What is here?","type":"text"}],"role":"user"},{"content":[{"id":"toolu_1","input":{},"name":"ls","type":"tool_use"}],"role":"assistant"},{"content":[{"content":"go.mod main.go","tool_use_id":"toolu_1","type":"tool_result"}],"role":"user"}],"model":"claude-sonnet-4-5","tools":[{"input_schema":{"type":"object"},"name":"ls"}]}
}

package wire_test

import (
	"fmt"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// Validate predicts the 400 a provider would answer: here an OpenAI Chat
// history whose assistant turn lost one of its tool results.
func ExampleValidate() {
	body := []byte(`{"model":"gpt-4o","messages":[
		{"role":"user","content":"compare the two files"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}},
			{"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b.go\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"package a"},
		{"role":"user","content":"well?"}]}`)
	vs, err := wire.Validate(body, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range vs {
		fmt.Println(v.Rule, v.Index)
		fmt.Println(v.Message)
	}
	// Output:
	// openai-chat/tool-calls-without-response 1
	// An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b
}

// A guarded prune of a request body: the plan names the user turn that
// carries two tool results, the guard takes the assistant turn with both
// calls too, and the body written back is one the provider accepts.
func ExampleBody_Bind() {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,
		"tools":[{"name":"read_file","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":false}}],
		"messages":[
		{"role":"user","content":"summarise a.go and b.go"},
		{"role":"assistant","content":[
			{"type":"tool_use","id":"toolu_a","name":"read_file","input":{"path":"a.go"}},
			{"type":"tool_use","id":"toolu_b","name":"read_file","input":{"path":"b.go"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_b","content":"package b"},
			{"type":"tool_result","tool_use_id":"toolu_a","content":"package a"}]},
		{"role":"assistant","content":"Both are tiny packages."},
		{"role":"user","content":"thanks; now list the tests"}]}`)
	b, err := wire.Read(body, wire.Anthropic)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := b.Bind(wire.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// m2 is the user turn carrying the results.
	d, refused, err := g.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(2)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("evict:", d.Evict, "refused:", len(refused))
	if err := g.Apply(d); err != nil {
		fmt.Println(err)
		return
	}
	out := g.Body()
	fmt.Println("messages left:", len(out.Messages), "violations:", len(out.Validate()))
	// Output:
	// evict: [m1 m2] refused: 0
	// messages left: 3 violations: 0
}

package wire_test

import (
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// Agents reuse call ids across turns (tau-bench's gpt-4o does): pairing
// goes by adjacency, so pruning the first use leaves the second pair
// whole, in every dialect.
func TestReusedCallIDsPrune(t *testing.T) {
	bodies := map[wire.Dialect]string{
		wire.OpenAIChat: `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c","content":"` + longText + `"},
			{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c","content":"second"},{"role":"user","content":"more"}]}`,
		wire.OpenAIResponses: `{"input":[{"role":"user","content":"go"},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"` + longText + `"},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"second"},
			{"role":"user","content":"more"}]}`,
		wire.Anthropic: `{"system":"s","messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"` + longText + `"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"second"}]},
			{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`,
		wire.Gemini: `{"contents":[{"role":"user","parts":[{"text":"go"}]},
			{"role":"model","parts":[{"functionCall":{"id":"c","name":"f","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"c","name":"f","response":{"r":"` + longText + `"}}}]},
			{"role":"model","parts":[{"functionCall":{"id":"c","name":"f","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"c","name":"f","response":{"r":"second"}}}]},
			{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"more"}]}]}`,
		wire.Bedrock: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}]},"messages":[{"role":"user","content":[{"text":"go"}]},
			{"role":"assistant","content":[{"toolUse":{"toolUseId":"c","name":"f","input":{}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"c","content":[{"text":"` + longText + `"}]}}]},
			{"role":"assistant","content":[{"toolUse":{"toolUseId":"c","name":"f","input":{}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"c","content":[{"text":"second"}]}}]},
			{"role":"assistant","content":[{"text":"ok"}]},{"role":"user","content":[{"text":"more"}]}]}`,
	}
	for d, body := range bodies {
		t.Run(string(d), func(t *testing.T) {
			in, g := guarded(t, d, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
			if v := in.Validate(); len(v) > 0 {
				t.Fatalf("input violations %v", v)
			}
			if u := g.Unpaired(); len(u) > 0 {
				t.Fatalf("unpaired %+v", u)
			}
			g.Check(pruneguard.Guard{Budget: g.Context().Tokens() - 50, Policy: onePerRound()})
			noWorse(t, in, g)
			if v := g.Body().Validate(); len(v) > 0 {
				t.Errorf("pruned body: %v", v)
			}
		})
	}
}

// With thinking on, a prune may drop earlier turns' thinking but never
// touches the active tool loop, whose assistant turn keeps its thinking
// first.
func TestThinkingRulesAfterPrune(t *testing.T) {
	body := `{"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":1024},"system":"s","messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"sig1"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + longText + `"}]},
		{"role":"assistant","content":[{"type":"thinking","thinking":"done","signature":"sig2"},{"type":"text","text":"ok"}]},
		{"role":"user","content":"again"},
		{"role":"assistant","content":[{"type":"redacted_thinking","data":"xyz"},{"type":"tool_use","id":"t2","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"` + longText + `"}]}]}`
	in, g := guarded(t, wire.Anthropic, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
	if v := in.Validate(); len(v) > 0 {
		t.Fatalf("input violations %v", v)
	}
	g.Check(pruneguard.Guard{Budget: 1, Policy: pruneguard.LargestResultsFirst{Stub: true}})
	g.Check(pruneguard.Guard{Budget: 1})
	noWorse(t, in, g)
	out := g.Body()
	for _, i := range []int{4, 5, 6} {
		if !containsRaw(out, in.Messages[i].Raw) {
			t.Errorf("message %d of the active loop changed", i)
		}
	}
	if len(out.Messages) == len(in.Messages) {
		t.Errorf("nothing before the active loop went")
	}
}

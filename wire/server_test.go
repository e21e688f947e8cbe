package wire_test

import (
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// Results of tools the provider runs sit beside their call, inside the
// model's own turn. They are results of their tool, not plain text: web
// search and code execution are not reproducible, so their messages are
// irreducible unless the tool is annotated, and --unannotated regenerable
// does not vouch for them.
func TestServerToolResultsClass(t *testing.T) {
	cases := []struct {
		name string
		d    wire.Dialect
		body string
		at   int
	}{
		{"anthropic web search", wire.Anthropic, `{"system":"s","tools":[{"type":"web_search_20250305","name":"web_search"}],
			"messages":[{"role":"user","content":"news?"},
			{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"news"}},
				{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x.test","title":"x","encrypted_content":"` + longText + `"}]},
				{"type":"text","text":"here is the news"}]},
			{"role":"user","content":"thanks"},{"role":"assistant","content":"bye"},{"role":"user","content":"again"}]}`, 1},
		{"anthropic mcp connector", wire.Anthropic, `{"system":"s","mcp_servers":[{"type":"url","url":"https://mcp.test","name":"ops"}],
			"messages":[{"role":"user","content":"status?"},
			{"role":"assistant","content":[{"type":"mcp_tool_use","id":"mcptoolu_1","name":"status","server_name":"ops","input":{}},
				{"type":"mcp_tool_result","tool_use_id":"mcptoolu_1","is_error":false,"content":[{"type":"text","text":"` + longText + `"}]}]},
			{"role":"user","content":"thanks"},{"role":"assistant","content":"bye"},{"role":"user","content":"again"}]}`, 1},
		{"responses web search", wire.OpenAIResponses, `{"instructions":"s","tools":[{"type":"web_search"}],"input":[{"role":"user","content":"news?"},
			{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"news"}},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + longText + `"}]},
			{"role":"user","content":"thanks"}]}`, 1},
		{"responses mcp call", wire.OpenAIResponses, `{"instructions":"s","input":[{"role":"user","content":"status?"},
			{"type":"mcp_call","id":"mcp_1","name":"status","server_label":"ops","arguments":"{}","output":"` + longText + `"},
			{"role":"user","content":"thanks"}]}`, 1},
		{"gemini code execution", wire.Gemini, `{"systemInstruction":{"parts":[{"text":"s"}]},"tools":[{"codeExecution":{}}],"contents":[{"role":"user","parts":[{"text":"sum?"}]},
			{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1+1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"` + longText + `"}},{"text":"2"}]},
			{"role":"user","parts":[{"text":"thanks"}]}]}`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, g := guarded(t, c.d, c.body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
			if k, _ := g.Context().ClassOf(wire.ID(c.at)); k != pruneguard.Irreducible {
				t.Errorf("class %v, want irreducible", k)
			}
			g.Check(pruneguard.Guard{Budget: 1})
			if !containsRaw(g.Body(), in.Messages[c.at].Raw) {
				t.Errorf("the server tool's result was pruned")
			}
		})
	}
}

func containsRaw(b *wire.Body, raw []byte) bool {
	for _, m := range b.Messages {
		if string(m.Raw) == string(raw) {
			return true
		}
	}
	return false
}

// A manifest that annotates a server tool by name decides its class.
func TestServerToolAnnotated(t *testing.T) {
	body := `{"system":"s","messages":[{"role":"user","content":"status?"},
		{"role":"assistant","content":[{"type":"mcp_tool_use","id":"mcptoolu_1","name":"status","server_name":"ops","input":{}},
			{"type":"mcp_tool_result","tool_use_id":"mcptoolu_1","content":[{"type":"text","text":"` + longText + `"}]}]},
		{"role":"user","content":"thanks"},{"role":"assistant","content":"bye"},{"role":"user","content":"again"}]}`
	m, err := wire.ReadManifest([]byte(`{"tools":[{"name":"status","annotations":{"readOnlyHint":true,"openWorldHint":false}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, g := guarded(t, wire.Anthropic, body, wire.Options{Manifest: m})
	if k, _ := g.Context().ClassOf(wire.ID(1)); k != pruneguard.Reconstructible {
		t.Errorf("class %v, want reconstructible", k)
	}
}

// A server tool call whose result has not come yet (Anthropic pause_turn)
// is in flight: the assistant turn holding it is sent back unchanged, so
// no prune takes it.
func TestServerCallInFlightStays(t *testing.T) {
	body := `{"system":"s","tools":[{"type":"web_search_20250305","name":"web_search"}],
		"messages":[{"role":"user","content":"news?"},{"role":"assistant","content":"` + longText + `"},{"role":"user","content":"and today?"},
		{"role":"assistant","content":[{"type":"text","text":"` + longText + `"},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"news"}}]}]}`
	in, g := guarded(t, wire.Anthropic, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
	g.Check(pruneguard.Guard{Budget: 1})
	if !containsRaw(g.Body(), in.Messages[3].Raw) {
		t.Errorf("the paused turn was pruned")
	}
}

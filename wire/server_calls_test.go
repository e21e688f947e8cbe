package wire_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// serverRun is a history in which the model has the provider run a tool
// twice with the same arguments, far enough apart that the first run can
// be pruned before the second.
type serverRun struct {
	d      wire.Dialect
	tool   string   // the server tool's name
	first  []string // the history up to the last user message; the first run is message 1
	second string   // the message making the second run
	args   string   // the arguments both runs give, as the Context holds them
}

func serverRuns() []serverRun {
	big := strings.Repeat("result text of the search, ", 60)
	return []serverRun{{
		d: wire.Anthropic, tool: "web_search", args: `{"query":"pruneguard"}`,
		first: []string{
			`{"role":"user","content":"find pruneguard"}`,
			`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"pruneguard"}},` +
				`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://a.example","title":"A","encrypted_content":"` + big + `"}]}]}`,
			`{"role":"user","content":"and then?"}`,
			`{"role":"assistant","content":"It is a library."}`,
			`{"role":"user","content":"look again"}`,
		},
		second: `{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"pruneguard"}},` +
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_2","content":[{"type":"web_search_result","url":"https://a.example","title":"A","encrypted_content":"x"}]}]}`,
	}, {
		d: wire.OpenAIResponses, tool: "web_search", args: `{"type":"search","query":"pruneguard"}`,
		first: []string{
			`{"role":"user","content":"find pruneguard"}`,
			`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"pruneguard"}}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + big + `"}]}`,
			`{"role":"user","content":"look again"}`,
		},
		second: `{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"search","query":"pruneguard"}}`,
	}, {
		d: wire.Gemini, tool: "code_execution", args: `{"language":"PYTHON","code":"print(1)"}`,
		first: []string{
			`{"role":"user","parts":[{"text":"compute"}]}`,
			`{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"` + big + `"}}]}`,
			`{"role":"user","parts":[{"text":"and then?"}]}`,
			`{"role":"model","parts":[{"text":"It printed."}]}`,
			`{"role":"user","parts":[{"text":"run it again"}]}`,
		},
		second: `{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1"}}]}`,
	}}
}

// TestServerCallsRefetch: a tool the provider runs (Anthropic
// server_tool_use, a Responses web_search_call, Gemini executableCode)
// reaches the Context as a Call with Server set and its arguments, in a
// session and bound, so that the second run of a pruned first one raises
// a refetch alert. Before, such calls were no Calls at all and the alert
// never came.
func TestServerCallsRefetch(t *testing.T) {
	for _, r := range serverRuns() {
		t.Run(string(r.d), func(t *testing.T) {
			closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
			s, err := wire.NewSession(wire.SessionConfig{Dialect: r.d,
				Guard:    pruneguard.Guard{Budget: 1},
				Config:   pruneguard.Config{TextClass: pruneguard.Reconstructible},
				Manifest: &wire.Manifest{Tools: []wire.ManifestTool{{Name: r.tool, Annotations: &closed}}}})
			must(t, err)
			var ids []pruneguard.MessageID
			for _, m := range r.first {
				id, err := s.Append(json.RawMessage(m))
				must(t, err)
				ids = append(ids, id)
			}
			m, _ := s.Context().Message(ids[1])
			if len(m.Calls) != 1 || m.Calls[0].Tool != r.tool || !m.Calls[0].Server || !argsEq(m.Calls[0].Args, r.args) {
				t.Fatalf("session: the first run's calls are %+v", m.Calls)
			}
			var body bytes.Buffer
			_, err = s.WriteTo(&body)
			must(t, err)
			g, err := wire.Bind(body.Bytes(), r.d, wire.Options{})
			must(t, err)
			if bm, _ := g.Context().Message(wire.ID(1)); len(bm.Calls) != 1 || !bm.Calls[0].Server || !argsEq(bm.Calls[0].Args, r.args) {
				t.Errorf("bound: the first run's calls are %+v", bm.Calls)
			}
			_, rep, err := s.Request()
			must(t, err)
			if !slices.Contains(rep.Evicted, ids[1]) {
				t.Fatalf("the first run was not pruned: %+v", rep)
			}
			second, err := s.Append(json.RawMessage(r.second))
			must(t, err)
			alerts := s.Context().TakeAlerts()
			if len(alerts) != 1 || alerts[0].Tool != r.tool || alerts[0].Result != second || alerts[0].Pruned != ids[1] {
				t.Errorf("alerts %+v", alerts)
			}
		})
	}
}

func argsEq(a []byte, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	p, _ := json.Marshal(x)
	q, _ := json.Marshal(y)
	return bytes.Equal(p, q)
}

package wire_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// pruneAll names every message of the body for eviction and every result
// for a stub: what a careless policy proposes under a tiny budget.
var pruneAll = pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
	var p pruneguard.Plan
	for _, e := range es {
		if e.Result {
			p.Stub = append(p.Stub, e.ID)
		}
		p.Evict = append(p.Evict, e.ID)
	}
	return p
})

// A request body ends with the results the model has not read yet: the
// request is what shows them. In every dialect the model's messages (its
// turns, call items, reasoning) tell the Context what it has read, so
// that a check prunes the older round and never the trailing results,
// whatever the policy names.
func TestTrailingResultsAreNeverPruned(t *testing.T) {
	old := strings.Repeat("an old result the model has read; ", 12)
	fresh := strings.Repeat("a fresh result the model has not seen; ", 12)
	bodies := map[wire.Dialect]struct {
		body   string
		unread []int // the trailing results
	}{
		wire.OpenAIChat: {`{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[` +
			`{"role":"user","content":"find the ticket"},` +
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"` + old + `"},` +
			`{"role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{\"a\":2}"}},{"id":"c3","type":"function","function":{"name":"f","arguments":"{\"a\":3}"}}]},` +
			`{"role":"tool","tool_call_id":"c2","content":"` + fresh + `"},` +
			`{"role":"tool","tool_call_id":"c3","content":"` + fresh + `"}]}`, []int{4, 5}},
		wire.OpenAIResponses: {`{"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"input":[` +
			`{"role":"user","content":"find the ticket"},` +
			`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"` + old + `"},` +
			`{"type":"function_call","call_id":"c2","name":"f","arguments":"{\"a\":2}"},` +
			`{"type":"function_call","call_id":"c3","name":"f","arguments":"{\"a\":3}"},` +
			`{"type":"function_call_output","call_id":"c2","output":"` + fresh + `"},` +
			`{"type":"function_call_output","call_id":"c3","output":"` + fresh + `"}]}`, []int{5, 6}},
		wire.Anthropic: {`{"model":"m","max_tokens":9,"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[` +
			`{"role":"user","content":"find the ticket"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + old + `"}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"f","input":{"a":2}},{"type":"tool_use","id":"t3","name":"f","input":{"a":3}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"` + fresh + `"},{"type":"tool_result","tool_use_id":"t3","content":"` + fresh + `"}]}]}`, []int{4}},
		wire.Gemini: {`{"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"object"}}]}],"contents":[` +
			`{"role":"user","parts":[{"text":"find the ticket"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"r":"` + old + `"}}}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":2}}},{"functionCall":{"name":"f","args":{"a":3}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"r":"` + fresh + `"}}},{"functionResponse":{"name":"f","response":{"r":"` + fresh + `"}}}]}]}`, []int{4}},
		wire.Bedrock: {`{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[` +
			`{"role":"user","content":[{"text":"find the ticket"}]},` +
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"` + old + `"}]}}]},` +
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"t2","name":"f","input":{"a":2}}},{"toolUse":{"toolUseId":"t3","name":"f","input":{"a":3}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"t2","content":[{"text":"` + fresh + `"}]}},{"toolResult":{"toolUseId":"t3","content":[{"text":"` + fresh + `"}]}}]}]}`, []int{4}},
	}
	for d, tc := range bodies {
		t.Run(string(d), func(t *testing.T) {
			in, g := guarded(t, d, tc.body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
			var want []pruneguard.MessageID
			for _, i := range tc.unread {
				want = append(want, wire.ID(i))
			}
			if got := g.Context().Unread(); !slices.Equal(got, want) {
				t.Fatalf("unread %v, want %v", got, want)
			}
			for _, pol := range []pruneguard.Policy{pruneAll, pruneguard.OldestFirst{}, pruneguard.LargestResultsFirst{Stub: true}} {
				_, g := guarded(t, d, tc.body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
				res, refs, err := g.Check(pruneguard.Guard{Budget: 1, Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				noWorse(t, in, g)
				out, err := g.Body().Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(out, []byte(old)) {
					t.Errorf("%T: the round the model read stayed whole: %+v", pol, res.Decisions)
				}
				for _, i := range tc.unread {
					if !bytes.Contains(out, in.Messages[i].Raw) {
						t.Errorf("%T: unread message %d was pruned:\n%s", pol, i, out)
					}
				}
				if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
					return r.Gate == "boundary" && r.Code == string(pruneguard.CodeUnread) && slices.Contains(r.Indexes, tc.unread[0])
				}) {
					t.Errorf("%T: no unread refusal of message %d: %+v", pol, tc.unread[0], refs)
				}
			}
		})
	}
}

// A Responses item the provider ran within the model's turn (a web
// search) is the model's output too: what came before it has been read.
func TestResponsesServerItemIsTheModels(t *testing.T) {
	body := `{"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"web_search"}],"input":[` +
		`{"role":"user","content":"find the ticket"},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"` + strings.Repeat("read by the model; ", 20) + `"},` +
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"ticket"}},` +
		`{"role":"user","content":"and?"}]}`
	_, g := guarded(t, wire.OpenAIResponses, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
	if got := g.Context().Unread(); !slices.Equal(got, []pruneguard.MessageID{wire.ID(4)}) {
		t.Fatalf("unread %v: the search item is the model's", got)
	}
	d, err := g.Context().Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(2)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Evict) == 0 {
		t.Errorf("the result the model read was held back: %v", d.Refused)
	}
}

package wire_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

var longText = strings.Repeat("a long tool output line that costs tokens. ", 12)

// sameUnit reports whether the messages with body indexes i and j share a
// unit of the guarded Context.
func sameUnit(t *testing.T, g *wire.Guarded, i, j int) bool {
	t.Helper()
	u, ok := g.Context().UnitOf(wire.ID(i))
	v, ok2 := g.Context().UnitOf(wire.ID(j))
	if !ok || !ok2 {
		t.Fatalf("no unit for %d or %d", i, j)
	}
	return u.ID == v.ID
}

// field returns obj[key] of a raw JSON object, following keys.
func field(t *testing.T, raw json.RawMessage, keys ...string) json.RawMessage {
	t.Helper()
	for _, k := range keys {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s is not an object: %v", raw, err)
		}
		raw = obj[k]
	}
	return raw
}

func hasRule(vs []wire.Violation, rule string) bool {
	return slices.ContainsFunc(vs, func(v wire.Violation) bool { return v.Rule == rule })
}

// ---- OpenAI Chat legacy function calling -----------------------------------

const legacyChat = `{"model":"gpt-3.5-turbo","function_call":{"name":"other"},"functions":[
	{"name":"lookup","description":"Looks a word up in the dictionary and returns its definitions.","parameters":{"type":"object","properties":{"q":{"type":"string"}}}},
	{"name":"other","description":"Another function the model may call when it needs to.","parameters":{"type":"object"}}],
	"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"define x"},
	{"role":"assistant","content":null,"function_call":{"name":"lookup","arguments":"{\"q\":\"x\"}"}},
	{"role":"function","name":"lookup","content":"` + "LONG" + `"},
	{"role":"assistant","content":"x means y"},{"role":"user","content":"thanks"}]}`

func legacyBody() string { return strings.Replace(legacyChat, "LONG", longText, 1) }

// A legacy function_call and the function message right after it are a
// call and its result: read as such, in one unit, so a prune never
// orphans the result.
func TestChatLegacyFunctionCallPairs(t *testing.T) {
	in, g := guarded(t, wire.OpenAIChat, legacyBody(), wire.Options{Unannotated: wire.UnannotatedRegenerable})
	if c := in.Messages[2].Calls; len(c) != 1 || c[0].Name != "lookup" || string(c[0].Args) != `{"q":"x"}` {
		t.Fatalf("calls of the function_call message: %+v", c)
	}
	if r := in.Messages[3].Results; len(r) != 1 {
		t.Fatalf("results of the function message: %v", r)
	}
	if v := in.Validate(); len(v) > 0 {
		t.Fatalf("input violations %v", v)
	}
	if !sameUnit(t, g, 2, 3) {
		t.Fatalf("the function_call and its function message are in different units")
	}
	if u := g.Unpaired(); len(u) > 0 {
		t.Errorf("unpaired %+v", u)
	}
	d, _, err := g.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(3)}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Evict, []pruneguard.MessageID{wire.ID(2), wire.ID(3)}) {
		t.Errorf("evicts %v, want the call with its result", d.Evict)
	}
}

// A body that ends on a function_call is waiting for its result: the call
// is pending.
func TestChatLegacyFunctionCallPending(t *testing.T) {
	body := `{"functions":[{"name":"lookup","parameters":{"type":"object"}}],"messages":[{"role":"user","content":"define x"},
		{"role":"assistant","content":null,"function_call":{"name":"lookup","arguments":"{}"}}]}`
	_, g := guarded(t, wire.OpenAIChat, body, wire.Options{})
	if len(g.Context().Pending()) != 1 {
		t.Errorf("pending %v", g.Context().Pending())
	}
}

// The schema of a function whose function_call arguments stay in the
// history is not withdrawn without a tombstone.
func TestChatLegacyFunctionSchemaGate(t *testing.T) {
	_, g := guarded(t, wire.OpenAIChat, legacyBody(), wire.Options{})
	if ts, _ := g.Context().Tool("lookup"); ts.Args != 1 {
		t.Fatalf("lookup has %d call arguments in the Context, want 1", ts.Args)
	}
	d, _, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(d.DropSchemas, "lookup") && !slices.ContainsFunc(d.Tombstones, func(ts pruneguard.Tombstone) bool { return ts.Tool == "lookup" }) {
		t.Errorf("lookup withdrawn without a tombstone: %+v", d)
	}
}

// The request's function_call field names a function: withdrawing that
// function is refused, and a body whose function_call names an undeclared
// function breaks a rule.
func TestChatLegacyFunctionCallField(t *testing.T) {
	in, g := guarded(t, wire.OpenAIChat, legacyBody(), wire.Options{})
	d, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"other"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(d.DropSchemas, "other") {
		t.Fatalf("withdraws the function function_call names")
	}
	if !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Code == wire.RuleChatUnknownFunctionCall }) {
		t.Errorf("refusals %+v", refs)
	}
	if err := g.Apply(d); err != nil {
		t.Fatal(err)
	}
	noWorse(t, in, g)

	bad := strings.Replace(legacyBody(), `"function_call":{"name":"other"}`, `"function_call":{"name":"gone"}`, 1)
	if v := read(t, wire.OpenAIChat, bad).Validate(); !hasRule(v, wire.RuleChatUnknownFunctionCall) {
		t.Errorf("violations %v", v)
	}
	empty := `{"functions":[],"messages":[{"role":"user","content":"x"}]}`
	if v := read(t, wire.OpenAIChat, empty).Validate(); !hasRule(v, wire.RuleChatEmptyTools) {
		t.Errorf("empty functions: violations %v", v)
	}
	without := `{"function_call":"auto","messages":[{"role":"user","content":"x"}]}`
	if v := read(t, wire.OpenAIChat, without).Validate(); !hasRule(v, wire.RuleChatToolChoiceWithoutTools) {
		t.Errorf("function_call without functions: violations %v", v)
	}
}

// Withdrawing every function is refused for the last one: the functions
// array never goes empty.
func TestChatLegacyFunctionsNeverEmpty(t *testing.T) {
	body := `{"functions":[{"name":"lookup","description":"` + longText + `","parameters":{"type":"object"}}],
		"messages":[{"role":"system","content":"s"},{"role":"user","content":"x"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{})
	d, _, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Apply(d); err != nil {
		t.Fatal(err)
	}
	noWorse(t, in, g)
	if len(g.Body().Tools()) != 1 {
		t.Errorf("functions emptied")
	}
}

// ---- OpenAI Responses item types -------------------------------------------

// Every client-executed call item pairs with its output item, whatever
// the field that carries the answered id: a prune never separates them,
// and an output whose call is gone breaks the API's rule.
func TestResponsesCallKinds(t *testing.T) {
	cases := []struct{ name, call, output string }{
		{"local shell", `{"type":"local_shell_call","id":"lsh_1","call_id":"call_1","action":{"type":"exec","command":["ls"]},"status":"completed"}`,
			`{"type":"local_shell_call_output","id":"call_1","output":"` + longText + `"}`},
		{"shell", `{"type":"shell_call","call_id":"call_1","action":{"commands":["ls"]},"status":"completed"}`,
			`{"type":"shell_call_output","call_id":"call_1","output":[{"stdout":"` + longText + `","stderr":"","outcome":{"type":"exit","exit_code":0}}]}`},
		{"apply patch", `{"type":"apply_patch_call","call_id":"call_1","status":"completed","operation":{"type":"update_file","path":"a.go","diff":"-a\n+b"}}`,
			`{"type":"apply_patch_call_output","call_id":"call_1","status":"completed","output":"` + longText + `"}`},
		{"custom tool", `{"type":"custom_tool_call","call_id":"call_1","name":"grep","input":"x"}`,
			`{"type":"custom_tool_call_output","call_id":"call_1","output":"` + longText + `"}`},
		{"mcp approval", `{"type":"mcp_approval_request","id":"mcpr_1","name":"deploy","server_label":"ops","arguments":"{}"}`,
			`{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := `{"input":[{"role":"user","content":"go"},` + c.call + `,` + c.output + `,
				{"type":"message","role":"assistant","content":"done"},{"role":"user","content":"more"}]}`
			in, g := guarded(t, wire.OpenAIResponses, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
			if v := in.Validate(); len(v) > 0 {
				t.Fatalf("input violations %v", v)
			}
			if len(in.Messages[1].Calls) != 1 || len(in.Messages[2].Results) != 1 {
				t.Fatalf("call %+v, output results %v", in.Messages[1].Calls, in.Messages[2].Results)
			}
			if !sameUnit(t, g, 1, 2) {
				t.Errorf("call and output in different units")
			}
			orphan := `{"input":[{"role":"user","content":"go"},` + c.output + `]}`
			if v := read(t, wire.OpenAIResponses, orphan).Validate(); !hasRule(v, wire.RuleResponsesOutputWithoutCall) {
				t.Errorf("output without its call: violations %v", v)
			}
			g.Check(pruneguard.Guard{Budget: 1})
			noWorse(t, in, g)
		})
	}
}

// An approval request the user has not answered is not a violation; a
// trailing one is pending.
func TestResponsesApprovalRequestMayStayUnanswered(t *testing.T) {
	body := `{"input":[{"role":"user","content":"go"},{"type":"mcp_approval_request","id":"mcpr_1","name":"deploy","server_label":"ops","arguments":"{}"},
		{"role":"user","content":"never mind"}]}`
	if v := read(t, wire.OpenAIResponses, body).Validate(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
}

// With previous_response_id the input's outputs answer calls stored on
// the server: they are not violations, and no prune takes them away
// (the stored call would then have no output).
func TestResponsesContinuationOutputsStay(t *testing.T) {
	body := `{"previous_response_id":"resp_1","input":[
		{"type":"function_call_output","call_id":"call_stored","output":"` + longText + `"},
		{"type":"function_call_output","call_id":"call_stored2","output":"` + longText + `"}]}`
	in, g := guarded(t, wire.OpenAIResponses, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
	if v := in.Validate(); len(v) > 0 {
		t.Fatalf("violations %v", v)
	}
	g.Check(pruneguard.Guard{Budget: 1})
	if n := len(g.Body().Messages); n != 2 {
		t.Errorf("%d outputs left, want 2", n)
	}
	d, _, _ := g.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(0)}})
	if d != nil && len(d.Evict) > 0 {
		t.Errorf("a prune may evict %v", d.Evict)
	}
}

// Stubs keep each Responses output's envelope and ids, and its shape where
// the API requires one.
func TestResponsesStubShapes(t *testing.T) {
	body := `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"` + longText + `"},{"type":"input_image","image_url":"https://x/y.png"}]},
		{"type":"shell_call","call_id":"c2","action":{"commands":["ls"]}},
		{"type":"shell_call_output","call_id":"c2","output":[{"stdout":"` + longText + `","stderr":"warn","outcome":{"type":"exit","exit_code":3}}]},
		{"type":"computer_call","call_id":"c3","action":{"type":"screenshot"}},
		{"type":"computer_call_output","call_id":"c3","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,` + strings.Repeat("A", 400) + `"}},
		{"role":"user","content":"more"}]}`
	b := read(t, wire.OpenAIResponses, body)
	if err := b.Stub(2, "[pruned]"); err != nil {
		t.Fatal(err)
	}
	out := field(t, b.Messages[2].Raw, "output")
	var parts []map[string]string
	if err := json.Unmarshal(out, &parts); err != nil || len(parts) != 1 || parts[0]["type"] != "input_text" || parts[0]["text"] != "[pruned]" {
		t.Errorf("function_call_output array stubbed as %s", out)
	}
	if err := b.Stub(4, "[pruned]"); err != nil {
		t.Fatal(err)
	}
	var chunks []struct {
		Stdout  *string         `json:"stdout"`
		Stderr  *string         `json:"stderr"`
		Outcome json.RawMessage `json:"outcome"`
	}
	out = field(t, b.Messages[4].Raw, "output")
	if err := json.Unmarshal(out, &chunks); err != nil || len(chunks) != 1 || chunks[0].Stdout == nil || *chunks[0].Stdout != "[pruned]" ||
		chunks[0].Stderr == nil || string(chunks[0].Outcome) != `{"type":"exit","exit_code":3}` {
		t.Errorf("shell_call_output stubbed as %s", out)
	}
	if err := b.Stub(6, "[pruned]"); !errors.Is(err, wire.ErrUnstubbable) {
		t.Errorf("a computer_call_output (a screenshot) was stubbed with text: %s", b.Messages[6].Raw)
	}
	if v := b.Validate(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
}

// ---- Anthropic -------------------------------------------------------------

const toolSearchBody = `{"system":"s","tools":[{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"},
	{"name":"get_weather","description":"` + "DESC" + `","input_schema":{"type":"object"},"defer_loading":true},
	{"name":"other","input_schema":{"type":"object"}}],
	"messages":[{"role":"user","content":"weather?"},
	{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"query":"weather"}},
		{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}},
		{"type":"text","text":"found it"}]},
	{"role":"user","content":"ok"}]}`

// A tool_reference block (left by tool search) names a tool that must
// stay in tools: the API rejects the request otherwise. The message
// requires the tool in the Context (Message.Requires), so the schema
// gate refuses to withdraw it while the block stays, and a check that
// proposes it keeps it.
func TestAnthropicToolReference(t *testing.T) {
	body := strings.Replace(toolSearchBody, "DESC", longText, 1)
	in, g := guarded(t, wire.Anthropic, body, wire.Options{})
	if !slices.Equal(in.Messages[1].References, []string{"get_weather"}) {
		t.Fatalf("references %v", in.Messages[1].References)
	}
	if m, _ := g.Context().Message(wire.ID(1)); !slices.Equal(m.Requires, []string{"get_weather"}) {
		t.Fatalf("the Context's message requires %v", m.Requires)
	}
	_, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"get_weather"}})
	var pe *pruneguard.PruneError
	if !errors.As(err, &pe) || pe.Violations[0].Code != pruneguard.CodeRequiredTool {
		t.Fatalf("withdrawing a referenced tool: %v", err)
	}
	if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
		return r.Gate == "schema" && r.Code == string(pruneguard.CodeRequiredTool) && slices.Equal(r.Tools, []string{"get_weather"}) &&
			slices.Equal(r.Indexes, []int{1})
	}) {
		t.Errorf("refusals %+v", refs)
	}
	drop := pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan {
		return pruneguard.Plan{DropSchemas: []string{"get_weather"}}
	})
	if _, _, err := g.Check(pruneguard.Guard{Budget: 1, Policy: drop}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(g.Body().Tools(), func(td wire.ToolDecl) bool { return td.Name == "get_weather" }) {
		t.Errorf("a check withdrew a referenced tool")
	}
	noWorse(t, in, g)

	gone := strings.Replace(body, `{"name":"get_weather","description":"`+longText+`","input_schema":{"type":"object"},"defer_loading":true},`, "", 1)
	v := read(t, wire.Anthropic, gone).Validate()
	if !hasRule(v, wire.RuleAnthropicUnknownToolReference) || !strings.Contains(v[0].Message, "Tool reference 'get_weather' not found in available tools") {
		t.Errorf("violations %v", v)
	}
}

// A tool_reference returned inside a client tool_result (a custom tool
// search) counts too, and a stub keeps it while the rest of the content
// goes.
func TestAnthropicToolReferenceInToolResult(t *testing.T) {
	body := `{"system":"s","tools":[{"name":"search_tools","input_schema":{"type":"object"}},{"name":"get_weather","input_schema":{"type":"object"},"defer_loading":true}],
		"messages":[{"role":"user","content":"weather?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"search_tools","input":{"q":"weather"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"` + longText + `"},{"type":"tool_reference","tool_name":"get_weather"}]}]},
		{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`
	b := read(t, wire.Anthropic, body)
	if !slices.Equal(b.Messages[2].References, []string{"get_weather"}) {
		t.Fatalf("references %v", b.Messages[2].References)
	}
	if err := b.Stub(2, "[pruned]"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Messages[2].References, []string{"get_weather"}) {
		t.Errorf("the stub lost the tool_reference: %s", b.Messages[2].Raw)
	}
	if !strings.Contains(string(b.Messages[2].Raw), "[pruned]") || strings.Contains(string(b.Messages[2].Raw), "a long tool output") {
		t.Errorf("stubbed as %s", b.Messages[2].Raw)
	}
}

// A stub of a tool_result keeps its envelope: the id, is_error and
// cache_control stay, and image or document content becomes text.
func TestAnthropicStubKeepsEnvelope(t *testing.T) {
	body := `{"system":"s","messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"cache_control":{"type":"ephemeral"},
			"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", 200) + `"}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"` + longText + `"}}]},
			{"type":"text","text":"and a note"}]}]}`
	b := read(t, wire.Anthropic, body)
	if err := b.Stub(2, "[pruned]"); err != nil {
		t.Fatal(err)
	}
	var content []map[string]json.RawMessage
	if err := json.Unmarshal(field(t, b.Messages[2].Raw, "content"), &content); err != nil || len(content) != 2 {
		t.Fatalf("content %s", b.Messages[2].Raw)
	}
	tr := content[0]
	if string(tr["tool_use_id"]) != `"t1"` || string(tr["is_error"]) != "true" || string(tr["cache_control"]) != `{"type":"ephemeral"}` {
		t.Errorf("envelope lost: %s", b.Messages[2].Raw)
	}
	if s := string(tr["content"]); strings.Contains(s, "image") || strings.Contains(s, "document") || !strings.Contains(s, "[pruned]") {
		t.Errorf("content %s", s)
	}
	if string(content[1]["text"]) != `"and a note"` {
		t.Errorf("text beside the result changed: %s", content[1]["text"])
	}
}

// ---- Gemini and Bedrock stubs ----------------------------------------------

func TestGeminiStubKeepsIDs(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"id":"fc1","name":"snap","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"fc1","name":"snap","response":{"out":"` + longText + `"},
			"parts":[{"inlineData":{"mimeType":"image/png","data":"` + strings.Repeat("A", 200) + `"}}]}}]}]}`
	b := read(t, wire.Gemini, body)
	if err := b.Stub(2, "[pruned]"); err != nil {
		t.Fatal(err)
	}
	fr := field(t, b.Messages[2].Raw, "parts")
	var parts []map[string]map[string]json.RawMessage
	if err := json.Unmarshal(fr, &parts); err != nil || len(parts) != 1 {
		t.Fatalf("parts %s", fr)
	}
	got := parts[0]["functionResponse"]
	if string(got["id"]) != `"fc1"` || string(got["name"]) != `"snap"` || got["parts"] != nil || !strings.Contains(string(got["response"]), "[pruned]") {
		t.Errorf("stubbed functionResponse %s", fr)
	}
}

func TestBedrockStubKeepsStatus(t *testing.T) {
	body := `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}]},"messages":[{"role":"user","content":[{"text":"go"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"error","content":[{"image":{"format":"png","source":{"bytes":"` + strings.Repeat("A", 200) + `"}}},{"json":{"a":1}}]}}]}]}`
	b := read(t, wire.Bedrock, body)
	if err := b.Stub(2, "[pruned]"); err != nil {
		t.Fatal(err)
	}
	tr := field(t, b.Messages[2].Raw, "content")
	var blocks []map[string]map[string]json.RawMessage
	if err := json.Unmarshal(tr, &blocks); err != nil || len(blocks) != 1 {
		t.Fatalf("content %s", tr)
	}
	r := blocks[0]["toolResult"]
	if string(r["status"]) != `"error"` || string(r["toolUseId"]) != `"t1"` || string(r["content"]) != `[{"text":"[pruned]"}]` {
		t.Errorf("stubbed toolResult %s", tr)
	}
}

package wire_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// Each dialect's error marker on a tool result sets Message.IsError, and
// the Context's message reports the failed call with what it says.
func TestErrorMarkers(t *testing.T) {
	for _, c := range []struct {
		d    wire.Dialect
		body string
		at   int
	}{
		{wire.Anthropic, `{"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"missing field severity"}]}]}`, 2},
		{wire.Bedrock, `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"text":"go"}]},
			{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"error","content":[{"text":"missing field severity"}]}}]}]}`, 2},
		{wire.Gemini, `{"contents":[{"role":"user","parts":[{"text":"go"}]},
			{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"missing field severity"}}}]}]}`, 2},
		{wire.OpenAIResponses, `{"input":[{"role":"user","content":"go"},
			{"type":"mcp_call","id":"mcp_1","name":"f","server_label":"s","arguments":"{}","error":"missing field severity"}]}`, 1},
	} {
		t.Run(string(c.d), func(t *testing.T) {
			b := read(t, c.d, c.body)
			for i, m := range b.Messages {
				if m.IsError != (i == c.at) {
					t.Errorf("message %d: IsError %v", i, m.IsError)
				}
			}
			g, err := b.Bind(wire.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := g.Context().Message(wire.ID(c.at))
			if !m.IsError || !strings.Contains(string(m.Content), "severity") {
				t.Errorf("the Context's message: IsError %v, content %q", m.IsError, m.Content)
			}
			if m, _ := g.Context().Message(wire.ID(0)); m.IsError {
				t.Errorf("the first message reports an error")
			}
		})
	}
	// Results without a marker, or with a false one, report none.
	b := read(t, wire.Anthropic, `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":false,"content":"ok"}]}]}`)
	if b.Messages[2].IsError {
		t.Errorf("is_error false reads as an error")
	}
}

// A tool_reference block inside a client tool_result requires its tool
// in the Context, as one in a tool search result does.
func TestRequiresFromToolResult(t *testing.T) {
	body := `{"system":"s","tools":[{"name":"search","input_schema":{"type":"object"}},{"name":"get_weather","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"weather?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"search","input":{"q":"weather"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"get_weather"}]}]},
		{"role":"assistant","content":"found it"},{"role":"user","content":"ok"}]}`
	_, g := guarded(t, wire.Anthropic, body, wire.Options{})
	if m, _ := g.Context().Message(wire.ID(2)); !slices.Equal(m.Requires, []string{"get_weather"}) {
		t.Errorf("requires %v", m.Requires)
	}
	if m, _ := g.Context().Message(wire.ID(1)); len(m.Requires) > 0 {
		t.Errorf("the call requires %v", m.Requires)
	}
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	if _, _, err := s.Sync([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Context().Message("m2"); !slices.Equal(m.Requires, []string{"get_weather"}) {
		t.Errorf("the session's message requires %v", m.Requires)
	}
}

// dropPolicy withdraws the schemas named, once, and otherwise proposes
// the oldest units.
type dropPolicy struct{ tools []string }

func (p *dropPolicy) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	if len(p.tools) > 0 {
		q := pruneguard.Plan{DropSchemas: p.tools}
		p.tools = nil
		return q
	}
	return pruneguard.OldestFirst{}.Propose(v, need)
}

// anthropicSession is an Anthropic session with a system prompt, the
// tools given and a first user message, whose budget a withdrawal of the
// schema of tool drop meets: the first request withdraws it.
func anthropicSession(t *testing.T, tools, drop string, cfg pruneguard.Config) (*wire.Session, wire.Report) {
	t.Helper()
	fields := `{"model":"m","max_tokens":9,"system":"s","tools":` + tools + `}`
	first := `{"role":"user","content":"hello"}`
	full := wire.Tokens(read(t, wire.Anthropic, `{"model":"m","max_tokens":9,"system":"s","tools":`+tools+`,"messages":[`+first+`]}`), nil)
	cfg.TextClass = pruneguard.Reconstructible
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: full - 10, Policy: &dropPolicy{tools: []string{drop}}},
		Unannotated: wire.UnannotatedRegenerable, Config: cfg})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(fields)))
	_, err = s.Append(json.RawMessage(first))
	must(t, err)
	body, rep, err := s.Request()
	must(t, err)
	if !slices.Contains(rep.Withdrawn, drop) || bodyDeclares(t, body, drop) || rep.After > full-100 {
		t.Fatalf("%s not withdrawn: %+v", drop, rep)
	}
	return s, rep
}

func bodyDeclares(t *testing.T, body []byte, name string) bool {
	b := read(t, wire.Anthropic, string(body))
	return slices.ContainsFunc(b.Tools(), func(td wire.ToolDecl) bool { return td.Name == name })
}

// longDesc is a tool description of about a hundred tokens.
var longDesc = strings.Repeat("what the tool does, at length. ", 13)

var weatherTools = `[{"name":"tool_search","input_schema":{"type":"object"}},{"name":"get_weather","description":"` + longDesc + `","input_schema":{"type":"object","properties":{"place":{"type":"string"},"days":{"type":"integer"}}}}]`

// A message fed after a tool's schema was withdrawn that requires it
// (tool search named it again) brings the schema back before the next
// request is written: the provider rejects the reference otherwise.
func TestSessionRestoresRequiredTool(t *testing.T) {
	s, _ := anthropicSession(t, weatherTools, "get_weather", pruneguard.Config{})
	for _, m := range []string{
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"tool_search","input":{"q":"weather"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"get_weather"}]}]}`,
	} {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	body, rep, err := s.Request()
	must(t, err)
	if !slices.Equal(rep.Restored, []string{"get_weather"}) || !bodyDeclares(t, body, "get_weather") {
		t.Fatalf("restored %v; body %s", rep.Restored, body)
	}
	if v, _ := wire.Validate(body, wire.Anthropic); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
	if ts, _ := s.Context().Tool("get_weather"); !ts.Resident || ts.Ghost {
		t.Errorf("tool state %+v", ts)
	}
}

// A call the model makes to a tool whose schema was withdrawn, while no
// tombstone stood for it, gets the tombstone line the Context's next
// decision carries, written into the system prompt before the request.
func TestSessionRepairsGhostCall(t *testing.T) {
	s, _ := anthropicSession(t, weatherTools, "get_weather", pruneguard.Config{})
	for _, m := range []string{
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get_weather","input":{"place":"Oslo"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"rain"}]}`,
	} {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	if u := s.Context().Unsound(); !slices.Equal(u, []string{"get_weather"}) {
		t.Fatalf("unsound %v", u)
	}
	body, rep, err := s.Request()
	must(t, err)
	if !slices.Equal(rep.Tombstoned, []string{"get_weather"}) || len(rep.Restored) > 0 {
		t.Fatalf("report %+v", rep)
	}
	var top struct{ System string }
	must(t, json.Unmarshal(body, &top))
	if !strings.Contains(top.System, "get_weather") {
		t.Errorf("system prompt %q has no tombstone line", top.System)
	}
	if ts, _ := s.Context().Tool("get_weather"); !ts.Tombstoned || ts.Ghost {
		t.Errorf("tool state %+v", ts)
	}
	if len(s.Context().Unsound()) > 0 {
		t.Errorf("still unsound: %v", s.Context().Unsound())
	}
}

// Without tombstones, a mutating tool called after its schema was
// withdrawn cannot be repaired with a line: its schema comes back.
func TestSessionRestoresGhostMutationTool(t *testing.T) {
	tools := `[{"name":"read","input_schema":{"type":"object"}},{"name":"deploy","description":"` + longDesc + `","input_schema":{"type":"object","properties":{"cluster":{"type":"string"}}}}]`
	s, _ := anthropicSession(t, tools, "deploy", pruneguard.Config{NoTombstones: true})
	for _, m := range []string{
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"deploy","input":{"cluster":"eu"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}`,
	} {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	body, rep, err := s.Request()
	must(t, err)
	if !slices.Equal(rep.Restored, []string{"deploy"}) || !bodyDeclares(t, body, "deploy") {
		t.Fatalf("report %+v; body %s", rep, body)
	}
	if len(s.Context().Unsound()) > 0 {
		t.Errorf("still unsound: %v", s.Context().Unsound())
	}
}

// A result reporting an error for a call made while its tool's schema
// was withdrawn, naming a field of that schema, is the second leg of the
// ghost-tool triad: the session hands the Context is_error and the text.
func TestSessionGhostRejectedLeg(t *testing.T) {
	s, _ := anthropicSession(t, weatherTools, "get_weather", pruneguard.Config{})
	for _, m := range []string{
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Oslo"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"invalid input: place is required"}]}`,
	} {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	gs := s.Context().Ghosts()
	if len(gs) != 1 || gs[0].Tool != "get_weather" || gs[0].Rejected != "t1" || !slices.Equal(gs[0].Fields, []string{"place"}) {
		t.Fatalf("ghost evidence %+v", gs)
	}
}

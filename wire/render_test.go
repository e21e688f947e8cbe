package wire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

var closedWorld = pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}

// eventContext is a history a runtime built with events: a system
// prompt, the task, a parallel batch of two calls with their results, a
// single call with its result, an answer and a follow-up question.
func eventContext(t *testing.T) *pruneguard.Context {
	t.Helper()
	// Text may go, as the runtimes that accept losing it say.
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	must(t, c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: closedWorld,
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}))
	must(t, c.RegisterTool(pruneguard.Tool{Name: "grep", Annotations: closedWorld,
		Schema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)}))
	for _, m := range []pruneguard.Message{
		{ID: "sys", Role: pruneguard.RoleSystem, Content: []byte("You are a careful coding agent."), Pinned: true},
		{ID: "task", Role: pruneguard.RoleUser, Content: []byte("Find where the config is loaded."), Pinned: true},
		{ID: "a1", Role: pruneguard.RoleAssistant, Content: []byte("Let me look."), Calls: []pruneguard.Call{
			{ID: "c1", Tool: "read_file", Args: json.RawMessage(`{"path":"main.go"}`)},
			{ID: "c2", Tool: "grep", Args: json.RawMessage(`{"pattern":"LoadConfig"}`)}}},
		{ID: "r1", Role: pruneguard.RoleTool, Content: []byte("package main\nfunc main() { cfg := LoadConfig() }"), Answers: []pruneguard.CallID{"c1"}},
		{ID: "r2", Role: pruneguard.RoleTool, Content: []byte("config.go:12: func LoadConfig() Config {"), Answers: []pruneguard.CallID{"c2"}},
		{ID: "a2", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{
			{ID: "c3", Tool: "read_file", Args: json.RawMessage(`{"path":"config.go"}`)}}},
		{ID: "r3", Role: pruneguard.RoleTool, Content: []byte("func LoadConfig() Config { return parse(os.Getenv(\"CFG\")) }"), Answers: []pruneguard.CallID{"c3"}},
		{ID: "a3", Role: pruneguard.RoleAssistant, Content: []byte("It is loaded in config.go from $CFG.")},
		{ID: "u2", Role: pruneguard.RoleUser, Content: []byte("Thanks. Where is it validated?")},
	} {
		m.Tokens = len(m.Content)/4 + 4
		must(t, c.Append(m))
	}
	return c
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRenderEveryDialect(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			c := eventContext(t)
			body, err := wire.Render(d, c, wire.RenderOptions{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}})
			if err != nil {
				t.Fatal(err)
			}
			vs, err := wire.Validate(body, d)
			if err != nil || len(vs) > 0 {
				t.Fatalf("rendered body: %v %v\n%s", err, vs, body)
			}
			b, err := wire.Read(body, d)
			if err != nil {
				t.Fatal(err)
			}
			// Every call and every result made it, with the Context's ids.
			var calls, results []string
			for _, m := range b.Messages {
				for _, c := range m.Calls {
					calls = append(calls, c.ID+":"+c.Name)
				}
				results = append(results, m.Results...)
			}
			if got, want := strings.Join(calls, ","), "c1:read_file,c2:grep,c3:read_file"; got != want {
				t.Errorf("calls %s, want %s", got, want)
			}
			if got, want := strings.Join(results, ","), "c1,c2,c3"; got != want {
				t.Errorf("results %s, want %s", got, want)
			}
			names := map[string]bool{}
			for _, td := range b.Tools() {
				names[td.Name] = len(td.Schema) > 0
			}
			if !names["read_file"] || !names["grep"] || len(names) != 2 {
				t.Errorf("tools %v, want read_file and grep with schemas", names)
			}
			if !strings.Contains(string(body), "You are a careful coding agent.") {
				t.Errorf("system prompt lost:\n%s", body)
			}
			if !strings.Contains(string(body), `"model":"m"`) {
				t.Errorf("field model lost:\n%s", body)
			}
		})
	}
}

// TestRenderShapes checks where each dialect puts the system prompt and how
// it merges consecutive turns.
func TestRenderShapes(t *testing.T) {
	c := eventContext(t)
	for d, want := range map[wire.Dialect][]string{
		wire.OpenAIChat:      {`"role":"system"`, `"role":"tool"`, `"tool_call_id":"c2"`, `"arguments":"{\"path\":\"main.go\"}"`},
		wire.OpenAIResponses: {`"type":"function_call"`, `"type":"function_call_output"`, `"call_id":"c3"`},
		wire.Anthropic:       {`"system":[{"text":"You are a careful coding agent.","type":"text"}]`, `"type":"tool_use"`, `"tool_use_id":"c2"`, `"input_schema"`},
		wire.Gemini:          {`"systemInstruction":{"parts":[{"text":"You are a careful coding agent."}]}`, `"functionResponse"`, `"role":"model"`, `"functionDeclarations"`},
		wire.Bedrock:         {`"system":[{"text":"You are a careful coding agent."}]`, `"toolUse"`, `"toolResult"`, `"toolConfig"`},
	} {
		body, err := wire.Render(d, c, wire.RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s: body lacks %s:\n%s", d, w, body)
			}
		}
		if !turnBasedDialect(d) {
			continue
		}
		// The two results of the batch share one user turn.
		b, _ := wire.Read(body, d)
		for _, m := range b.Messages {
			if len(m.Results) == 1 && (m.Results[0] == "c1" || m.Results[0] == "c2") {
				t.Errorf("%s: the batch's results are split over turns:\n%s", d, body)
			}
		}
	}
}

func turnBasedDialect(d wire.Dialect) bool {
	return d == wire.Anthropic || d == wire.Gemini || d == wire.Bedrock
}

// TestRenderPruned renders a Context after a guarded prune: the evicted
// batch is gone, a stub stands in the stubbed result, a withdrawn schema
// leaves the tools declaration and its tombstone goes into the system
// prompt, and a spilled result shows its pointer.
func TestRenderPruned(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			c := eventContext(t)
			d1, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a1"}, Stub: []pruneguard.MessageID{"r3"}})
			must(t, err)
			must(t, c.Apply(d1))
			// grep's last call left with the batch: its schema may go too.
			d2, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"grep"}})
			must(t, err)
			must(t, c.Apply(d2))
			body, err := wire.Render(d, c, wire.RenderOptions{})
			must(t, err)
			s := string(body)
			if strings.Contains(s, "LoadConfig\"") || strings.Contains(s, `"c1"`) || strings.Contains(s, "main.go") {
				t.Errorf("evicted batch still in the body:\n%s", s)
			}
			if !strings.Contains(s, "tool result removed to save context") {
				t.Errorf("no stub text for r3:\n%s", s)
			}
			b, _ := wire.Read(body, d)
			for _, td := range b.Tools() {
				if td.Name == "grep" {
					t.Errorf("withdrawn schema of grep still declared")
				}
			}
		})
	}
}

func TestRenderTombstonesAndPointers(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			c := eventContext(t)
			// read_file's calls stay: withdrawing its schema needs a tombstone.
			dec, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"read_file"}})
			must(t, err)
			if len(dec.Tombstones) != 1 {
				t.Fatalf("tombstones %v", dec.Tombstones)
			}
			must(t, c.Apply(dec))
			p := pruneguard.Pointer{Store: "spill", Key: "seg-1"}
			body, err := wire.Render(d, c, wire.RenderOptions{
				Tombstones: dec.Tombstones,
				Spilled:    []pruneguard.SpillNote{{Message: "x", Pointer: p}, {Message: "y", Pointer: p}},
			})
			must(t, err)
			s := string(body)
			if strings.Count(s, "seg-1") != 2 { // the pointer text names the key twice
				t.Errorf("want one pointer line:\n%s", s)
			}
			text, _ := json.Marshal(dec.Tombstones[0].Text)
			if !strings.Contains(s, strings.Trim(string(text), `"`)) {
				t.Errorf("tombstone text missing:\n%s", s)
			}
			b, _ := wire.Read(body, d)
			for _, td := range b.Tools() {
				if td.Name == "read_file" {
					t.Errorf("withdrawn schema still declared")
				}
			}
			if want := spill.PointerText(p); !strings.Contains(s, strings.Trim(string(mustQuote(want)), `"`)) {
				t.Errorf("pointer text %q missing:\n%s", want, s)
			}
		})
	}
}

func mustQuote(s string) []byte { b, _ := json.Marshal(s); return b }

// TestRenderNoEmptyTools: a Context whose every schema was withdrawn
// renders without a tools field, never with an empty one.
func TestRenderNoEmptyTools(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	must(t, c.RegisterTool(pruneguard.Tool{Name: "t", Annotations: closedWorld, Schema: json.RawMessage(`{"type":"object"}`)}))
	must(t, c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("hi")}))
	d, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"t"}})
	must(t, err)
	must(t, c.Apply(d))
	for _, dl := range wire.Dialects {
		body, err := wire.Render(dl, c, wire.RenderOptions{})
		must(t, err)
		if strings.Contains(string(body), `"tools"`) || strings.Contains(string(body), `"toolConfig"`) {
			t.Errorf("%s: %s", dl, body)
		}
	}
}

// TestRenderRefusesBrokenBody: a body that a provider would reject is not
// returned; the error carries the rule.
func TestRenderRefusesBrokenBody(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	// Bedrock: a conversation must start with a user message.
	must(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Content: []byte("hello")}))
	_, err := wire.Render(wire.Bedrock, c, wire.RenderOptions{})
	var re *wire.RuleError
	if !errors.As(err, &re) || !errors.Is(err, wire.ErrProviderRule) {
		t.Fatalf("err %v, want a *RuleError", err)
	}
	if rules := re.Rules(); len(rules) == 0 || rules[0] != wire.RuleBedrockFirstNotUser {
		t.Errorf("rules %v", rules)
	}
}

func TestRenderFieldConflicts(t *testing.T) {
	c := eventContext(t)
	for d, key := range map[wire.Dialect]string{wire.OpenAIChat: "messages", wire.Anthropic: "system", wire.Bedrock: "toolConfig"} {
		_, err := wire.Render(d, c, wire.RenderOptions{Fields: map[string]json.RawMessage{key: json.RawMessage(`[]`)}})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: field %s given twice: err %v", d, key, err)
		}
	}
	if _, err := wire.Render("nope", c, wire.RenderOptions{}); err == nil {
		t.Error("unknown dialect rendered")
	}
}

// TestRenderPendingCalls: a history ending on calls still waiting renders;
// only the pending-calls rule applies to it.
func TestRenderPendingCalls(t *testing.T) {
	for _, d := range wire.Dialects {
		c := pruneguard.NewContext(pruneguard.Config{})
		must(t, c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("list files")}))
		must(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c", Tool: "ls"}}}))
		must(t, c.RegisterTool(pruneguard.Tool{Name: "ls"}))
		body, err := wire.Render(d, c, wire.RenderOptions{})
		must(t, err)
		vs, _ := wire.Validate(body, d)
		if len(vs) != 1 || !strings.HasSuffix(vs[0].Rule, "/pending-calls") {
			t.Errorf("%s: %v", d, vs)
		}
	}
}

package einoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

func TestApproxTokens(t *testing.T) {
	for _, c := range []struct {
		m    *schema.Message
		want int
	}{
		{nil, 0},
		{&schema.Message{}, 0},
		{schema.UserMessage("abcd"), 1},
		{schema.UserMessage("abcde"), 2},
		{&schema.Message{Role: schema.Assistant, Content: "ab", ReasoningContent: "cdefgh"}, 2},
		{schema.AssistantMessage("", []schema.ToolCall{{ID: "id-not-counted", Function: schema.FunctionCall{Name: "grep", Arguments: `{"q":"x"}`}}}), 4},
		{&schema.Message{Role: schema.User, UserInputMultiContent: []schema.MessageInputPart{{Type: schema.ChatMessagePartTypeText, Text: "12345678"}}}, 2},
		{&schema.Message{Role: schema.Assistant, AssistantGenMultiContent: []schema.MessageOutputPart{{Type: schema.ChatMessagePartTypeText, Text: "1234"}}}, 1},
		{&schema.Message{Role: schema.User, MultiContent: []schema.ChatMessagePart{{Type: schema.ChatMessagePartTypeText, Text: "123456789"}}}, 3},
	} {
		if got := einoguard.ApproxTokens(c.m); got != c.want {
			t.Errorf("ApproxTokens(%v) = %d, want %d", c.m, got, c.want)
		}
	}
}

func TestEvent(t *testing.T) {
	a := schema.AssistantMessage("thinking aloud", []schema.ToolCall{
		{ID: "call_1", Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`}},
		{ID: "call_2", Function: schema.FunctionCall{Name: "grep"}},
	})
	a.ReasoningContent = "reasons"
	e := einoguard.Event(a, "m1", 7)
	if e.ID != "m1" || e.Role != pruneguard.RoleAssistant || e.Tokens != 7 || e.Pinned || len(e.Answers) != 0 {
		t.Errorf("assistant event %+v", e)
	}
	if len(e.Calls) != 2 || e.Calls[0].ID != "call_1" || e.Calls[0].Tool != "read_file" || string(e.Calls[0].Args) != `{"path":"a"}` ||
		e.Calls[1].ID != "call_2" || e.Calls[1].Tool != "grep" || e.Calls[1].Args != nil {
		t.Errorf("calls %+v", e.Calls)
	}
	r := einoguard.Event(schema.ToolMessage("out", "call_1", schema.WithToolName("read_file")), "m2", 1)
	if r.Role != pruneguard.RoleTool || len(r.Answers) != 1 || r.Answers[0] != "call_1" || len(r.Calls) != 0 {
		t.Errorf("tool event %+v", r)
	}
	if s := einoguard.Event(schema.SystemMessage("p"), "m3", 1); !s.Pinned || s.Role != pruneguard.RoleSystem {
		t.Errorf("system event %+v", s)
	}
	if u := einoguard.Event(schema.UserMessage("q"), "m4", 1); u.Pinned || u.Role != pruneguard.RoleUser {
		t.Errorf("user event %+v", u)
	}
	if o := einoguard.Role("developer"); o != pruneguard.Role("developer") {
		t.Errorf("Role(developer) = %q", o)
	}
	// The event is fed to a Context as is.
	c := pruneguard.NewContext(pruneguard.Config{})
	if err := c.Append(e); err != nil {
		t.Fatal(err)
	}
	if err := c.Append(r); err != nil {
		t.Fatal(err)
	}
	if p := c.Pending(); len(p) != 1 || p[0] != "call_2" {
		t.Errorf("pending %v, want call_2", p)
	}
}

func TestStub(t *testing.T) {
	m := schema.ToolMessage("big output", "call_1", schema.WithToolName("read_file"))
	m.UserInputMultiContent = []schema.MessageInputPart{{Type: schema.ChatMessagePartTypeText, Text: "part"}}
	m.Extra = map[string]any{"k": "v"}
	s := einoguard.Stub(m, "[gone]")
	if s == m || s.Content != "[gone]" || s.ToolCallID != "call_1" || s.ToolName != "read_file" || s.Role != schema.Tool ||
		s.UserInputMultiContent != nil || s.Extra["k"] != "v" {
		t.Errorf("stub %+v", s)
	}
	if m.Content != "big output" || len(m.UserInputMultiContent) != 1 {
		t.Error("Stub changed its argument")
	}
}

func TestToolOf(t *testing.T) {
	info := &schema.ToolInfo{Name: "read_file", Desc: "read", ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
		"path": {Type: schema.String, Required: true},
		"mode": {Type: schema.String, Enum: []string{"text", "bytes"}},
	})}
	tl, err := einoguard.ToolOf(info, closedWorld)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema, &js); err != nil {
		t.Fatal(err)
	}
	if tl.Name != "read_file" || js.Type != "object" || len(js.Required) != 1 || js.Required[0] != "path" || len(js.Properties) != 2 {
		t.Errorf("tool %s schema %s", tl.Name, tl.Schema)
	}
	if tl.Mutating() || tl.OutputClass() != pruneguard.Reconstructible {
		t.Errorf("annotations lost: mutating %v, class %v", tl.Mutating(), tl.OutputClass())
	}
	bare, err := einoguard.ToolOf(&schema.ToolInfo{Name: "now"}, pruneguard.Annotations{})
	if err != nil || string(bare.Schema) != `{"type":"object","properties":{}}` || !bare.Mutating() || bare.OutputClass() != pruneguard.Irreducible {
		t.Errorf("a tool without parameters or annotations: %s %v %v, %v", bare.Schema, bare.Mutating(), bare.OutputClass(), err)
	}
	if _, err := einoguard.ToolOf(&schema.ToolInfo{}, closedWorld); !errors.Is(err, einoguard.ErrToolInfo) {
		t.Errorf("a nameless tool: %v", err)
	}
	if _, err := einoguard.ToolOf(nil, closedWorld); !errors.Is(err, einoguard.ErrToolInfo) {
		t.Errorf("a nil tool: %v", err)
	}
}

func TestTools(t *testing.T) {
	ts, err := einoguard.Tools(context.Background(), testTools(), map[string]pruneguard.Annotations{"read_file": closedWorld})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "read_file" || ts[0].Mutating() || ts[1].Name != "deploy" || !ts[1].Mutating() {
		t.Fatalf("tools %+v", ts)
	}
	if !json.Valid(ts[0].Schema) || len(ts[0].Schema) < 20 {
		t.Errorf("read_file schema %s", ts[0].Schema)
	}
	if _, err := einoguard.Tools(context.Background(), []tool.BaseTool{badTool{}}, nil); !errors.Is(err, einoguard.ErrToolInfo) || !errors.Is(err, context.Canceled) {
		t.Errorf("a tool whose Info fails: %v", err)
	}
}

type badTool struct{}

func (badTool) Info(context.Context) (*schema.ToolInfo, error) { return nil, context.Canceled }

// The model's prose beside its calls is text the model wrote: it is not
// the class of what it calls, and leaves only spilled.
func TestProseBesideCallsIsText(t *testing.T) {
	e := einoguard.Event(schema.AssistantMessage("thinking aloud", []schema.ToolCall{{ID: "c", Function: schema.FunctionCall{Name: "read_file"}}}), "m1", 3)
	if string(e.Content) != "thinking aloud" {
		t.Errorf("content %q, want the prose", e.Content)
	}
	if e := einoguard.Event(schema.AssistantMessage(" \n", []schema.ToolCall{{ID: "c", Function: schema.FunctionCall{Name: "read_file"}}}), "m1", 3); len(e.Content) != 0 {
		t.Errorf("blank prose gave content %q", e.Content)
	}
	if e := einoguard.Event(schema.ToolMessage("result", "c"), "m2", 3); len(e.Content) != 0 {
		t.Errorf("a result gave content %q: the guard sees only its count", e.Content)
	}

	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 300, Policy: pruneguard.OldestFirst{}},
		Tools: []pruneguard.Tool{readTool},
	})
	read := func(id, prose string) []*schema.Message {
		return []*schema.Message{
			schema.AssistantMessage(prose, []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "read_file", Arguments: `{}`}}}),
			schema.ToolMessage(strings.Repeat("r", 1000), id, schema.WithToolName("read_file")),
		}
	}
	msgs := append(newConv("task").msgs, read("c1", "The config must be wrong; I promised the user to check billing next.")...)
	msgs = append(msgs, read("c2", "")...)
	msgs = append(msgs, schema.AssistantMessage("read both", nil))
	out, r, _ := s.Prune(context.Background(), msgs)
	if slices.Contains(r.Evicted, msgs[2]) || !slices.Contains(out, msgs[2]) {
		t.Errorf("the prose beside a call was evicted: %v", contents(out))
	}
	if !slices.Contains(r.Evicted, msgs[4]) {
		t.Errorf("the unit of pure calls stayed: evicted %v", contents(r.Evicted))
	}
}

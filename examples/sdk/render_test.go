package sdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// eventHistory is a Context a runtime built with events: a system prompt,
// the task, a parallel batch of two calls with their results, a single
// call with its result, an answer and a follow-up.
func eventHistory(t *testing.T) *pruneguard.Context {
	t.Helper()
	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	c := pruneguard.NewContext(pruneguard.Config{})
	for _, tool := range []pruneguard.Tool{
		{Name: "get_weather", Annotations: closed, Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "get_time", Annotations: closed, Schema: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`)},
	} {
		if err := c.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []pruneguard.Message{
		{ID: "sys", Role: pruneguard.RoleSystem, Content: []byte("You are a travel assistant."), Pinned: true},
		{ID: "task", Role: pruneguard.RoleUser, Content: []byte("Weather in Paris and Berlin?"), Pinned: true},
		{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{
			{ID: "call_w1", Tool: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_w2", Tool: "get_weather", Args: json.RawMessage(`{"city":"Berlin"}`)}}},
		{ID: "r1", Role: pruneguard.RoleTool, Content: []byte(`{"temp_c":18,"conditions":"sunny"}`), Answers: []pruneguard.CallID{"call_w1"}},
		{ID: "r2", Role: pruneguard.RoleTool, Content: []byte(`{"temp_c":12,"conditions":"overcast"}`), Answers: []pruneguard.CallID{"call_w2"}},
		{ID: "a2", Role: pruneguard.RoleAssistant, Content: []byte("Let me check the time too."), Calls: []pruneguard.Call{
			{ID: "call_t1", Tool: "get_time", Args: json.RawMessage(`{"tz":"Europe/Paris"}`)}}},
		{ID: "r3", Role: pruneguard.RoleTool, Content: []byte(`{"time":"14:03"}`), Answers: []pruneguard.CallID{"call_t1"}},
		{ID: "a3", Role: pruneguard.RoleAssistant, Content: []byte("Paris is sunny at 18°C, Berlin overcast at 12°C; it is 14:03 in Paris.")},
		{ID: "u2", Role: pruneguard.RoleUser, Content: []byte("Which is better for a walk?")},
	} {
		m.Tokens = len(m.Content)/4 + 4
		if err := c.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// pruned applies a guarded prune to an event history: the batch is
// evicted, the time result stubbed, and get_weather's schema, whose calls
// left with the batch, withdrawn; get_time's schema, whose call stays,
// leaves behind a tombstone.
func pruned(t *testing.T, c *pruneguard.Context) []pruneguard.Tombstone {
	t.Helper()
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a1"}, Stub: []pruneguard.MessageID{"r3"},
		DropSchemas: []string{"get_weather"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(d); err != nil {
		t.Fatal(err)
	}
	d2, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"get_time"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(d2); err != nil {
		t.Fatal(err)
	}
	return d2.Tombstones
}

// TestRenderRoundTrip: a Context built by events renders, in each OpenAI
// and Anthropic dialect, to a body Validate finds clean and the SDK's
// request params unmarshal without loss (marshalled again, the same
// JSON), before and after a guarded prune.
func TestRenderRoundTrip(t *testing.T) {
	fields := map[wire.Dialect]map[string]json.RawMessage{
		wire.OpenAIChat:      {"model": json.RawMessage(`"gpt-4o"`), "temperature": json.RawMessage(`0.2`)},
		wire.OpenAIResponses: {"model": json.RawMessage(`"gpt-4o"`), "store": json.RawMessage(`false`)},
		wire.Anthropic:       {"model": json.RawMessage(`"claude-sonnet-4-5"`), "max_tokens": json.RawMessage(`1024`)},
	}
	for _, prune := range []bool{false, true} {
		for d, f := range fields {
			c := eventHistory(t)
			var tombs []pruneguard.Tombstone
			if prune {
				tombs = pruned(t, c)
			}
			body, err := wire.Render(d, c, wire.RenderOptions{Fields: f, Tombstones: tombs})
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			noViolations(t, body, d)
			if prune && !strings.Contains(string(body), tombs[0].Text[:17]) {
				t.Errorf("%s: tombstone missing:\n%s", d, body)
			}
			switch d {
			case wire.OpenAIChat:
				p := unmarshalChat(t, body)
				checkChatPairs(t, p.Messages)
				if n := len(p.Tools); (prune && n != 0) || (!prune && n != 2) {
					t.Errorf("chat: %d tools", n)
				}
			case wire.OpenAIResponses:
				p := unmarshalResponses(t, body)
				if len(p.Input.OfInputItemList) == 0 {
					t.Errorf("responses: no input items")
				}
			case wire.Anthropic:
				p := unmarshalAnthropic(t, body)
				if len(p.System) == 0 || p.Messages[0].OfUser == nil {
					t.Errorf("anthropic: system %v, first message %+v", p.System, p.Messages[0])
				}
			}
		}
	}
}

// TestSessionRoundTrip: SDK-built request bodies fed to a Session message
// by message, and synced whole, come back JSON-equal; pruned under a small
// budget, they still unmarshal into the SDK params without loss.
func TestSessionRoundTrip(t *testing.T) {
	bodies := map[wire.Dialect][]byte{
		wire.OpenAIChat:      mustJSON(t, chatParams()),
		wire.OpenAIResponses: mustJSON(t, responsesParams()),
		wire.Anthropic:       mustJSON(t, anthropicParams()),
	}
	for d, body := range bodies {
		s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := s.Sync(body)
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, string(d)+" synced", body, out)

		small, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: wire.Tokens(mustRead(t, body, d), nil) / 2},
			Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
		if err != nil {
			t.Fatal(err)
		}
		out, rep, err := small.Sync(body)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Guarded || len(rep.Evicted)+len(rep.Stubbed) == 0 {
			t.Errorf("%s: nothing pruned: %+v", d, rep)
		}
		noViolations(t, out, d)
		switch d {
		case wire.OpenAIChat:
			checkChatPairs(t, unmarshalChat(t, out).Messages)
		case wire.OpenAIResponses:
			unmarshalResponses(t, out)
		case wire.Anthropic:
			unmarshalAnthropic(t, out)
		}
	}
}

func mustRead(t *testing.T, body []byte, d wire.Dialect) *wire.Body {
	t.Helper()
	b, err := wire.Read(body, d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

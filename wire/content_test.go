package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// An assistant message that makes calls gives the Context the text it
// holds as Content, and nothing when it holds none, so that the Context
// tells the model's words from a message of calls alone; other messages
// give nothing. Body.Bind and Session agree.
func TestCallMessageContent(t *testing.T) {
	msgs := []string{
		`{"role":"user","content":"look"}`,
		`{"role":"assistant","content":"I will read both.","tool_calls":[{"id":"a","type":"function","function":{"name":"read","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"a","content":"one"}`,
		`{"role":"assistant","content":[{"type":"text","text":"Next"},{"type":"text","text":" "},{"type":"text","text":"the other."}],"tool_calls":[{"id":"b","type":"function","function":{"name":"read","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"b","content":"two"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"read","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c","content":"three"}`,
		`{"role":"assistant","content":"done"}`,
	}
	want := map[int]string{1: "I will read both.", 3: "Next\nthe other."}
	body := `{"messages":[` + msgs[0]
	for _, m := range msgs[1:] {
		body += "," + m
	}
	body += `]}`
	b, err := wire.Read([]byte(body), wire.OpenAIChat)
	must(t, err)
	g, err := b.Bind(wire.Options{})
	must(t, err)
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	for _, m := range msgs {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	for i := range msgs {
		gm, _ := g.Context().Message(wire.ID(i))
		sm, _ := s.Context().Message(pruneguard.MessageID("m" + string(rune('0'+i))))
		if string(gm.Content) != want[i] || string(sm.Content) != want[i] {
			t.Errorf("message %d: Content %q (Body.Bind) and %q (Session), want %q", i, gm.Content, sm.Content, want[i])
		}
	}
}

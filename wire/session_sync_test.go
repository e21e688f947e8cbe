package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// sessionState is what a caller sees of a session: how many messages it
// holds, its Context's messages, and the body it writes.
func sessionState(t *testing.T, s *wire.Session) string {
	t.Helper()
	var body bytes.Buffer
	_, err := s.WriteTo(&body)
	must(t, err)
	ms, err := json.Marshal(s.Context().Messages())
	must(t, err)
	return string(ms) + "\n" + body.String()
}

// chatOf is a Chat body of the messages given.
func chatOf(ms ...string) []byte {
	return []byte(`{"model":"m","messages":[` + strings.Join(ms, ",") + `]}`)
}

// TestSessionSyncAllOrNothing: a body whose new messages are refused in
// part is refused whole, and the session is left as it was: a message
// that does not parse after good ones, a body that does not continue the
// history (which would start the session over) with one that does not
// parse, request fields with bad annotations, a result the Context would
// refuse (its call was abandoned) after a good one. Before, the good
// messages before the bad one were fed, or the session was reset and left
// empty.
func TestSessionSyncAllOrNothing(t *testing.T) {
	const (
		user  = `{"role":"user","content":"read a and b"}`
		calls = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}}]}`
		r1    = `{"role":"tool","tool_call_id":"c1","content":"a"}`
		r2    = `{"role":"tool","tool_call_id":"c2","content":"b"}`
		done  = `{"role":"assistant","content":"done"}`
		bad   = `{"role":"assistant","tool_calls":[{"id":"c3","type":"function","function":{"name":7}}]}`
	)
	newSession := func() *wire.Session {
		s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20}})
		must(t, err)
		_, _, err = s.Sync(chatOf(user, calls))
		must(t, err)
		return s
	}
	refused := map[string][]byte{
		"a bad message after good ones": chatOf(user, calls, r1, r2, done, bad),
		"a new history with a bad one":  chatOf(`{"role":"user","content":"another"}`, done, bad),
		"bad annotations": []byte(`{"model":"m","tools":[{"type":"function","function":{"name":"read"},"annotations":{"readOnlyHint":true,"readOnlyHint":false}}],"messages":[` +
			strings.Join([]string{user, calls, r1, r2}, ",") + `]}`),
	}
	for name, body := range refused {
		s := newSession()
		before := sessionState(t, s)
		if _, _, err := s.Sync(body); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if after := sessionState(t, s); after != before || s.Len() != 2 {
			t.Errorf("%s: the session changed (%d messages):\n%s\nwas\n%s", name, s.Len(), after, before)
		}
		// The good part of it is taken in full once the bad part is gone.
		if _, _, err := s.Sync(chatOf(user, calls, r1, r2, done)); err != nil || s.Len() != 5 {
			t.Errorf("%s: then the good history: %v, %d messages", name, err, s.Len())
		}
	}
	// A result the Context would refuse, after one it would take: the
	// runtime abandoned c1, and the body answers c2, then c1.
	s := newSession()
	must(t, s.Abandon("c1"))
	before := sessionState(t, s)
	_, _, err := s.Sync(chatOf(user, calls, r2, r1))
	if !errors.Is(err, pruneguard.ErrAbandonedCall) {
		t.Errorf("a result for an abandoned call: %v", err)
	}
	if after := sessionState(t, s); after != before {
		t.Errorf("the session changed:\n%s\nwas\n%s", after, before)
	}
	// Append is all or nothing too: the refused result leaves the pairing
	// as it was, so c2's result still pairs with c2.
	if _, err := s.Append(json.RawMessage(r1)); !errors.Is(err, pruneguard.ErrAbandonedCall) {
		t.Errorf("Append of a result for an abandoned call: %v", err)
	}
	id, err := s.Append(json.RawMessage(r2))
	must(t, err)
	if m, _ := s.Context().Message(id); len(m.Answers) != 1 || m.Answers[0] != "c2" {
		t.Errorf("c2's result answers %v", m.Answers)
	}
}

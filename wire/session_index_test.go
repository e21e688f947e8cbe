package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// TestSessionErrorsGiveIndexes: the ids a session gives its messages
// (the provider's item ids, positional ones, positional ones with a
// suffix) are matched to the history the runtime fed by Session.Index,
// the index Refusal.Indexes gives; the errors of a request that name
// messages (a ceiling, a deferral) say the index of each, as a
// HistoryError errors.As still sees through; the errors of feeding a
// message say its index.
func TestSessionErrorsGiveIndexes(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIResponses, Guard: pruneguard.Guard{Budget: 40, Ceiling: 60}})
	must(t, err)
	// A runtime that names a message m2 before the session reaches it.
	_, err = s.AppendMessage(pruneguard.Message{ID: "m2", Role: pruneguard.RoleUser, Content: []byte("first")})
	must(t, err)
	var ids []pruneguard.MessageID
	for _, item := range []string{
		`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"` + strings.Repeat("an answer the user gave once. ", 20) + `"}]}`,
		`{"role":"user","content":"` + strings.Repeat("a constraint the user gave once. ", 20) + `"}`,
		`{"type":"function_call","call_id":"c1","name":"read","arguments":"{}"}`,
	} {
		id, err := s.Append(json.RawMessage(item))
		must(t, err)
		ids = append(ids, id)
	}
	if ids[0] != "msg_1" || ids[1] != "m2_1" || ids[2] != "m3" {
		t.Fatalf("ids %v", ids)
	}
	for want, id := range append([]pruneguard.MessageID{"m2"}, ids...) {
		if got, ok := s.Index(id); !ok || got != want {
			t.Errorf("Index(%s) = %d, %v; want %d", id, got, ok, want)
		}
	}
	if _, ok := s.Index("nope"); ok {
		t.Error("Index of an id never held")
	}
	// Irreducible text over the ceiling, and a call in flight: the error
	// names them, with their indexes.
	_, _, err = s.Request()
	var ce *pruneguard.CeilingError
	var he *wire.HistoryError
	if !errors.As(err, &ce) || !errors.As(err, &he) || !errors.Is(err, pruneguard.ErrDeferred) {
		t.Fatalf("Request: %v", err)
	}
	if len(he.Messages) == 0 || len(he.Messages) != len(he.Indexes) {
		t.Fatalf("HistoryError %+v", he)
	}
	for i, id := range he.Messages {
		if at, _ := s.Index(id); at != he.Indexes[i] || !strings.Contains(err.Error(), fmt.Sprintf("%s=%d", id, at)) {
			t.Errorf("%s at %d, said %d: %v", id, at, he.Indexes[i], err)
		}
	}
	if !strings.Contains(err.Error(), "m3=3") {
		t.Errorf("the message making the pending call is not named: %v", err)
	}
	// A ceiling the irreducible text keeps: the units the gates refused.
	c, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 40, Ceiling: 60}})
	must(t, err)
	for _, m := range []string{"first", strings.Repeat("a fact the user gave once. ", 20), "ok", "next"} {
		role := pruneguard.RoleUser
		if m == "ok" {
			role = pruneguard.RoleAssistant
		}
		_, err := c.AppendMessage(pruneguard.Message{Role: role, Content: []byte(m)})
		must(t, err)
	}
	_, _, err = c.Request()
	if !errors.As(err, &ce) || !errors.Is(err, pruneguard.ErrRegen) || !errors.As(err, &he) || len(he.Messages) == 0 {
		t.Fatalf("a ceiling of irreducible text: %v", err)
	}
	for i, id := range he.Messages {
		if at, _ := c.Index(id); at != he.Indexes[i] || !strings.Contains(err.Error(), fmt.Sprintf("%s=%d", id, at)) {
			t.Errorf("%s at %d, said %d: %v", id, at, he.Indexes[i], err)
		}
	}
	// Feeding: the index of the message refused, and of the one holding
	// an id given twice.
	_, err = s.AppendMessage(pruneguard.Message{ID: "msg_1", Role: pruneguard.RoleUser, Content: []byte("again")})
	if !errors.Is(err, pruneguard.ErrDuplicateMessage) || !strings.Contains(err.Error(), "input[4]") || !strings.Contains(err.Error(), "input[1]") {
		t.Errorf("a duplicate id: %v", err)
	}
	_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"nope"}})
	if !errors.Is(err, pruneguard.ErrUnknownCall) || !strings.Contains(err.Error(), "input[4]") {
		t.Errorf("an unknown call: %v", err)
	}
	if err := s.WriteText(ids[0], "more"); !errors.Is(err, pruneguard.ErrClosedMessage) || !strings.Contains(err.Error(), "input[1]") {
		t.Errorf("a write to a closed message: %v", err)
	}
}

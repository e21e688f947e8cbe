package pruneguard_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// A message streamed in chunks whose counts do not add up to the whole,
// then recounted before Close, is the message appended whole: the same
// Message, the same Tokens, and Close adds nothing for its calls.
func TestRecountSettlesAStream(t *testing.T) {
	cfg := pruneguard.Config{Counter: pruneguard.ApproxCounter{}}
	whole := pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 9, Content: []byte("Reading it."),
		Calls: []pruneguard.Call{{ID: "c1", Tool: "read", Args: json.RawMessage(`{"path":"main.go"}`)}}}
	appended := pruneguard.NewContext(cfg)
	if err := appended.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("go")}); err != nil {
		t.Fatal(err)
	}
	if err := appended.Append(whole); err != nil {
		t.Fatal(err)
	}
	streamed := pruneguard.NewContext(cfg)
	if err := streamed.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("go")}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(streamed.Open(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant}))
	for _, chunk := range []string{"Re", "ad", "ing", " it", "."} {
		must(streamed.Write("a", []byte(chunk), 0)) // five chunks count 5, the whole 3
	}
	must(streamed.Write("a", nil, 7)) // the call's arguments, as they streamed
	must(streamed.Recount("a", 9))
	must(streamed.Close("a", whole.Calls...))
	got, _ := streamed.Message("a")
	want, _ := appended.Message("a")
	if !reflect.DeepEqual(got, want) || streamed.Tokens() != appended.Tokens() {
		t.Errorf("streamed %+v (%d), appended %+v (%d)", got, streamed.Tokens(), want, appended.Tokens())
	}
	if !reflect.DeepEqual(streamed.Units(), appended.Units()) {
		t.Errorf("units %+v, %+v", streamed.Units(), appended.Units())
	}
	// Only an open message is recounted, never below zero.
	var ie *pruneguard.InputError
	if err := streamed.Recount("a", 3); !errors.Is(err, pruneguard.ErrClosedMessage) || !errors.As(err, &ie) || ie.ID != "a" {
		t.Errorf("a closed message: %v", err)
	}
	if err := streamed.Recount("nope", 3); !errors.Is(err, pruneguard.ErrUnknownMessage) {
		t.Errorf("an unknown message: %v", err)
	}
	must(streamed.Open(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c1"}}))
	if err := streamed.Recount("r", -1); !errors.Is(err, pruneguard.ErrNegativeTokens) {
		t.Errorf("a negative count: %v", err)
	}
	before := streamed.Tokens()
	must(streamed.Write("r", []byte("package main"), 0))
	must(streamed.Recount("r", 2))
	if streamed.Tokens() != before+2 {
		t.Errorf("Tokens %d after a recount to 2 from %d", streamed.Tokens(), before)
	}
}

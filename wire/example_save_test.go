package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/wire"
)

// A session saved by one process and restored by another renders the
// same body and goes on as if it had never stopped.
func ExampleSession_Save() {
	cfg := wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 300},
		Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}
	s, _ := wire.NewSession(cfg)
	_, _ = s.Append(json.RawMessage(`{"role":"user","content":"Start."}`))
	for i := range 5 {
		_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"Step %d: %s"}`, i, strings.Repeat("note ", 40))))
		_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"Next %d."}`, i)))
	}
	before, _, _ := s.Request()

	var state bytes.Buffer
	_ = s.Save(&state)
	r, err := wire.RestoreSession(&state, cfg) // in another process, with the same configuration
	if err != nil {
		panic(err)
	}
	var after bytes.Buffer
	_, _ = r.WriteTo(&after)
	fmt.Println("same body:", bytes.Equal(before, after.Bytes()))
	// Output:
	// same body: true
}

// Replicas of a fleet share a session store: any of them continues a
// conversation another began.
func ExampleConversationsConfig_sessions() {
	store := &sessions.Memory{} // sessions.Dir on one machine; the Redis or PostgreSQL store across machines
	cfg := wire.ConversationsConfig{
		Session:  wire.SessionConfig{Guard: pruneguard.Guard{Budget: 8000}},
		Sessions: store,
	}
	replicaA, _ := wire.NewConversations(cfg)
	replicaB, _ := wire.NewConversations(cfg)
	ctx := wire.WithTenant(wire.WithConversation(context.Background(), "ticket-42"), "acme")
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	_, _, errA := replicaA.Guard(ctx, wire.OpenAIChat, body)
	body = []byte(`{"model":"m","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"more"}]}`)
	_, rep, errB := replicaB.Guard(ctx, wire.OpenAIChat, body)
	_, _, errLoad := store.Load(ctx, sessions.ID("acme", "ticket-42"))
	fmt.Println("errors:", errA, errB, rep.Reset)
	fmt.Println("kept in process:", replicaA.Len(), replicaB.Len(), "in the store:", errLoad == nil)
	// Output:
	// errors: <nil> <nil> false
	// kept in process: 0 0 in the store: true
}

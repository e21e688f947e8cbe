package spill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// A pointer's text says what its segment holds, so that a model can
// choose what to recall. Keys come from the session and the content: the
// same messages give the same key.
func ExampleSpiller_PointerText() {
	ctx := context.Background()
	s := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-42"}
	p, _ := s.SpillMessages(ctx, []pruneguard.Message{
		{ID: "a3", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k3", Tool: "create_ticket", Args: json.RawMessage(`{"title":"flaky build"}`)}}},
		{ID: "r3", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"k3"}, Content: []byte(`{"ticket":"INC-4711","status":"open"}`)},
	})
	fmt.Println(s.PointerText(p))
	// Output:
	// [content moved to spill:seg-sess-42_b743e851d6ad2c6f937beb0a to save context (2 messages a3, r3; tools: create_ticket; facts: INC-4711); call recall with key "seg-sess-42_b743e851d6ad2c6f937beb0a" to read it back]
}

// Sessions sharing a store see nothing of each other's segments, even
// given a key.
func ExampleNamespace() {
	ctx := context.Background()
	store := &spill.Memory{}
	alice := &spill.Spiller{Store: store, Namespace: spill.Namespace("acme", "alice")}
	bob := &spill.Spiller{Store: store, Namespace: spill.Namespace("acme", "bob")}
	p, _ := alice.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("one-time code 8f3a")}})

	_, err := bob.Recall(ctx, p)
	fmt.Println(errors.Is(err, spill.ErrNotFound))
	hits, _ := bob.Search(ctx, "8f3a")
	fmt.Println(len(hits))
	hits, _ = alice.Search(ctx, "8f3a")
	fmt.Println(len(hits), hits[0].Pointer == p)
	// Output:
	// true
	// 0
	// 1 true
}

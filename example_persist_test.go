package pruneguard_test

import (
	"bytes"
	"fmt"

	"github.com/pruneguard/pruneguard"
)

// A session saved in one process and resumed in another makes the same
// decisions: the restored Context holds the same messages, units and
// pointers, and the Resolver is supplied again.
func ExampleRestore() {
	spilled := pruneguard.Pointer{Store: "scratch", Key: "seg-1"}
	resolver := pruneguard.ResolverFunc(func(p pruneguard.Pointer) bool { return p == spilled })

	c := pruneguard.NewContext(pruneguard.Config{Resolver: resolver})
	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 50, Pinned: true})
	c.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 400, Content: []byte("the logs"), Pointer: spilled})
	c.Append(pruneguard.Message{ID: "u2", Role: pruneguard.RoleUser, Tokens: 300, Content: []byte("keep this")})
	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 50, Content: []byte("read both")})

	var state bytes.Buffer
	if err := c.Save(&state); err != nil {
		panic(err)
	}

	// Elsewhere, later: the same Resolver (or one over the same store).
	r, err := pruneguard.Restore(&state, pruneguard.Config{Resolver: resolver})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Len(), "messages,", r.Tokens(), "tokens")
	d, err := r.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"u1"}})
	fmt.Println(d.Evict, d.Pointers, err)
	_, err = r.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"u2"}})
	fmt.Println(err != nil)

	_, err = pruneguard.Restore(bytes.NewReader([]byte(`{"format":"pruneguard.context"`)), pruneguard.Config{})
	fmt.Println(err)
	// Output:
	// 4 messages, 800 tokens
	// [u1] [{u1 {scratch seg-1}}] <nil>
	// true
	// pruneguard: restore.sha256: bad saved state
}

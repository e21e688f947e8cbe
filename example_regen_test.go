package pruneguard_test

import (
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
)

// A read is reconstructible until a mutating call that may change what it
// read is made after it: then reading again would not give the same
// bytes, and the result is the only record of what was there.
func ExampleTool_staleness() {
	c := pruneguard.NewContext(pruneguard.Config{})
	pure := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure, Scope: "workspace"})
	c.RegisterTool(pruneguard.Tool{Name: "query", Annotations: pure, Scope: "db"})
	c.RegisterTool(pruneguard.Tool{Name: "apply_patch", Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false)}, Scope: "workspace"})

	c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "read_file"}, {ID: "k2", Tool: "query"}}})
	c.Append(pruneguard.Message{ID: "file", Answers: []pruneguard.CallID{"k1"}})
	c.Append(pruneguard.Message{ID: "rows", Answers: []pruneguard.CallID{"k2"}})
	show := func(when string) {
		f, _ := c.ClassOf("file")
		r, _ := c.ClassOf("rows")
		fmt.Printf("%s: file %v, rows %v\n", when, f, r)
	}
	show("read")
	c.Append(pruneguard.Message{ID: "a2", Calls: []pruneguard.Call{{ID: "k3", Tool: "apply_patch"}}})
	show("patched")
	// Output:
	// read: file reconstructible, rows reconstructible
	// patched: file irreducible, rows reconstructible
}

// A call whose result will never come (the runtime lost it) holds every
// prune back until it is abandoned; then its unit is judged like any
// other, and a late result is refused.
func ExampleContext_Abandon() {
	c := pruneguard.NewContext(pruneguard.Config{})
	pure := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure})
	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k1", Tool: "read_file"}, {ID: "k2", Tool: "read_file"}}})
	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 4000, Answers: []pruneguard.CallID{"k1"}})

	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	fmt.Println(err)
	if err := c.Abandon("k2"); err != nil {
		fmt.Println(err)
		return
	}
	// The runtime sends the request; the model reads r1 and answers.
	c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 20, Content: []byte("one file is enough")})
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("evict:", d.Evict)
	err = c.Append(pruneguard.Message{ID: "late", Answers: []pruneguard.CallID{"k2"}})
	fmt.Println(errors.Is(err, pruneguard.ErrAbandonedCall), err)
	// Output:
	// pruneguard: prune deferred: pending calls k2
	// evict: [a1 r1]
	// true pruneguard: append "k2": call was abandoned
}

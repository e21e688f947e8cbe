package pruneguard_test

import (
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
)

// A tour: feed a Context the events of one turn, ask to prune while a
// call of a parallel batch is still pending, then once the batch has
// landed, then again once the model has read it, and apply the decision.
func Example() {
	c := pruneguard.NewContext(pruneguard.Config{})
	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: closed})
	c.RegisterTool(pruneguard.Tool{Name: "grep", Annotations: closed})

	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 900, Pinned: true})
	c.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 50})
	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 60, Calls: []pruneguard.Call{
		{ID: "c1", Tool: "read_file"}, {ID: "c2", Tool: "grep"},
	}})
	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 4000, Answers: []pruneguard.CallID{"c1"}})

	// The salience policy wants the big result gone, but grep is still
	// running: the Context is not at a commit boundary.
	plan := pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}}
	_, err := c.Prune(plan)
	fmt.Println("while c2 runs:", errors.Is(err, pruneguard.ErrDeferred), err)

	c.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 30, Answers: []pruneguard.CallID{"c2"}})
	// The batch has landed, but the model has not read it: the next
	// request shows it, and nothing of it goes before.
	d, _ := c.Prune(plan)
	fmt.Println("unread:", d.Evict, d.Refused[0].Code, d.Refused[0].Units)

	c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 80, Content: []byte("the TODO is in main.go")})
	d, err = c.Prune(plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The plan named one message; the decision is its whole unit.
	fmt.Println("evict:", d.Evict, "units:", d.Units, "freed:", d.Freed)
	if err := c.Apply(d); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range c.Messages() {
		fmt.Println("kept:", m.ID)
	}
	fmt.Println("tokens:", c.Tokens())
	// Output:
	// while c2 runs: true pruneguard: prune deferred: pending calls c2
	// unread: [] unread [a1]
	// evict: [a1 r1 r2] units: [a1] freed: 4090
	// kept: sys
	// kept: u1
	// kept: a2
	// tokens: 1030
}

// A plan that names only part of a unit: Plan.Split says whether the guard
// grows it to the whole unit (the default), shrinks it to leave the unit
// out, or refuses it.
func ExampleContext_Prune() {
	c := pruneguard.NewContext(pruneguard.Config{})
	c.RegisterTool(pruneguard.Tool{Name: "search", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false),
	}})
	// The runtime can give this user turn again: it says so.
	c.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 40, Class: pruneguard.Reconstructible})
	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 30, Calls: []pruneguard.Call{{ID: "s1", Tool: "search"}}})
	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 2000, Answers: []pruneguard.CallID{"s1"}})
	c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 30, Content: []byte("found it")})

	// The policy names u1 and the call a1, but not its result r1.
	evict := []pruneguard.MessageID{"u1", "a1"}

	d, _ := c.Prune(pruneguard.Plan{Evict: evict, Split: pruneguard.SplitGrow})
	fmt.Println("grow:  ", d.Evict, d.Freed)

	d, _ = c.Prune(pruneguard.Plan{Evict: evict, Split: pruneguard.SplitShrink})
	fmt.Println("shrink:", d.Evict, d.Freed, "refused:", d.Refused[0].Code, d.Refused[0].Units, "left out:", d.Refused[0].Messages)

	_, err := c.Prune(pruneguard.Plan{Evict: evict, Split: pruneguard.SplitStrict})
	fmt.Println("strict:", err)
	// Output:
	// grow:   [u1 a1 r1] 2070
	// shrink: [u1] 40 refused: split-unit [a1] left out: [r1]
	// strict: pruneguard: prune refused (1 violation): boundary gate: split-unit unit a1 messages r1
}

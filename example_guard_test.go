package pruneguard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// A guard left on: a trigger above the budget and a minimum to clear keep
// the provider's cache between prunes, and a spill store lets content
// that cannot be obtained again leave the prompt behind a pointer; the
// check's context governs the spills' I/O.
func ExampleGuard_CheckContext() {
	ctx := context.Background() // a request's context, in a server
	sp := &spill.Spiller{Store: &spill.Memory{}, Name: "scratch"}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp})
	c.RegisterTool(pruneguard.Tool{Name: "charge"}) // unannotated: its receipts are irreducible
	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true})
	for i := range 4 {
		k := pruneguard.CallID(fmt.Sprint("k", i))
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 20,
			Calls: []pruneguard.Call{{ID: k, Tool: "charge"}}})
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Tokens: 980,
			Content: []byte(fmt.Sprint("receipt ", i)), Answers: []pruneguard.CallID{k}})
	}
	// Over 4,000 tokens, prune to 3,500 and by at least 1,500: one unit
	// would reach the budget, two go.
	g := pruneguard.Guard{Budget: 3500, Trigger: 4000, MinClear: 1500, Spill: sp}
	fmt.Println("tokens:", c.Tokens())

	res, err := g.CheckContext(ctx, c)
	fmt.Println(res.Outcome, res.Before, "->", res.After, err)
	for _, s := range res.Spills {
		fmt.Println("spilled", s.Messages, "as one segment")
	}
	for _, d := range res.Decisions {
		for _, n := range d.Pointers {
			if n.Message == "r0" {
				back, _ := sp.Recall(ctx, n.Pointer)
				fmt.Printf("r0 reads back: %s\n", back[1].Content)
			}
		}
	}

	_, err = pruneguard.Guard{}.Check(c)
	fmt.Println(errors.Is(err, pruneguard.ErrConfig), err)
	// Output:
	// tokens: 4500
	// pruned 4500 -> 2500 <nil>
	// spilled [a0 r0 a1 r1] as one segment
	// r0 reads back: receipt 0
	// true pruneguard: invalid configuration: Guard.Budget 0: must be positive: a guard with no budget would prune everything it may, the user's task included
}

package pruneguard_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pruneguard/pruneguard"
)

// A custom salience policy behind a Guard. It scores messages by size and
// proposes the largest first, but never what the user wrote. It knows
// nothing of calls in flight: the guard does, and does not even ask it
// while a call is pending. Check answers under_budget, then deferred while
// a call is pending, then pruned once it is answered.
func ExampleGuard_Check() {
	largestFirst := pruneguard.PolicyFunc(func(entries []pruneguard.Entry, need int) pruneguard.Plan {
		var p pruneguard.Plan
		cands := slices.DeleteFunc(slices.Clone(entries), func(e pruneguard.Entry) bool {
			return e.Pinned || e.Role == pruneguard.RoleUser
		})
		slices.SortStableFunc(cands, func(a, b pruneguard.Entry) int { return b.Tokens - a.Tokens })
		for _, e := range cands {
			if need <= 0 {
				break
			}
			p.Evict = append(p.Evict, e.ID)
			need -= e.Tokens
		}
		fmt.Println("  policy proposes", p.Evict)
		return p
	})
	g := pruneguard.Guard{Budget: 1050, Ceiling: 5000, Policy: largestFirst}
	check := func(c *pruneguard.Context, when string) {
		res, err := g.Check(c)
		fmt.Printf("%s: %s, %d -> %d tokens\n", when, res.Outcome, res.Before, res.After)
		var de *pruneguard.DeferredError
		if errors.As(res.Reason, &de) {
			fmt.Println("  pending calls:", de.Pending)
		}
		for _, v := range res.Refused {
			fmt.Println("  held back:", v.Code, v.Units)
		}
		for _, d := range res.Decisions {
			fmt.Println("  evicted:", d.Evict, "units:", d.Units)
		}
		if err != nil {
			fmt.Println("  error:", err)
		}
	}

	c := pruneguard.NewContext(pruneguard.Config{})
	c.RegisterTool(pruneguard.Tool{Name: "fetch", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false),
	}})
	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true})
	c.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 200})
	check(c, "start")

	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 100, Calls: []pruneguard.Call{{ID: "f1", Tool: "fetch"}}})
	c.Append(pruneguard.Message{ID: "u2", Role: pruneguard.RoleUser, Tokens: 300})
	check(c, "f1 running")

	// r1 lands, but the model has not read it yet: it stays until the
	// request that shows it has been answered. The furthest safe prune
	// finds nothing else: the user's turns are irreducible text, and u2
	// is unread too.
	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 700, Answers: []pruneguard.CallID{"f1"}})
	check(c, "f1 answered")

	c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 20, Content: []byte("fetched")})
	check(c, "model read r1")
	// Output:
	// start: under_budget, 700 -> 700 tokens
	// f1 running: deferred, 1100 -> 1100 tokens
	//   pending calls: [f1]
	//   held back: unread [u2]
	//   policy proposes [r1 a1]
	//   policy proposes []
	// f1 answered: deferred, 1800 -> 1800 tokens
	//   held back: irreducible [u1]
	//   held back: unread [a1]
	//   held back: unread [u2]
	//   policy proposes [r1 a1]
	// model read r1: pruned, 1820 -> 1020 tokens
	//   evicted: [a1 r1] units: [a1]
}

// A policy built from the walks of a View: stub the largest tool results
// first, and once none is left worth stubbing, evict the oldest units.
// Each walk stops as soon as the plan frees enough, however long the
// session.
func ExampleViewFunc() {
	pol := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		p := pruneguard.LargestResultsFirst{Stub: true}.Propose(v, need)
		if p.Empty() {
			p = pruneguard.OldestFirst{}.Propose(v, need)
		}
		return p
	})

	c := pruneguard.NewContext(pruneguard.Config{})
	c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false),
	}})
	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true})
	for i, size := range []int{3000, 200, 5000} {
		call := pruneguard.CallID(fmt.Sprint("c", i))
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 20,
			Calls: []pruneguard.Call{{ID: call, Tool: "read_file"}}})
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Tokens: size,
			Answers: []pruneguard.CallID{call}})
	}
	c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Tokens: 40, Content: []byte("read all three")})
	res, err := pruneguard.Guard{Budget: 540, Policy: pol}.Check(c)
	if err != nil {
		fmt.Println(err)
	}
	for _, d := range res.Decisions {
		fmt.Println("stubbed", d.Stub, "evicted", d.Evict)
	}
	fmt.Println(res.Outcome, res.Before, "->", res.After)
	// Output:
	// stubbed [r0 r1 r2] evicted []
	// stubbed [] evicted [a0 r0 a1 r1 a2 r2]
	// pruned 8800 -> 540
}

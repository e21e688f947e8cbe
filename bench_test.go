package pruneguard_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// benchContext builds a settled Context of n messages: a system prompt,
// then rounds of a user message and an assistant turn with a parallel
// batch of three calls and their three results. The runtime accepts
// losing its user turns (Config.TextClass), so that every unit may go.
func benchContext(tb testing.TB, n int) *pruneguard.Context {
	tb.Helper()
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	for _, name := range []string{"read_file", "grep", "stat"} {
		if err := c.RegisterTool(pruneguard.Tool{Name: name, Annotations: pruneguard.Annotations{
			ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}); err != nil {
			tb.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true}))
	for i := 0; c.Len() < n; i++ {
		must(c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("u%d", i)), Role: pruneguard.RoleUser, Tokens: 20}))
		if c.Len()+4 > n {
			continue
		}
		calls := make([]pruneguard.Call, 3)
		for j, tool := range []string{"read_file", "grep", "stat"} {
			calls[j] = pruneguard.Call{ID: pruneguard.CallID(fmt.Sprintf("c%d_%d", i, j)), Tool: tool}
		}
		must(c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("a%d", i)), Role: pruneguard.RoleAssistant, Tokens: 40, Calls: calls}))
		for j := 2; j >= 0; j-- { // results land out of order
			must(c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("r%d_%d", i, j)), Role: pruneguard.RoleTool, Tokens: 300,
				Answers: []pruneguard.CallID{calls[j].ID}}))
		}
	}
	return c
}

// benchPlan names 100 messages: 20 rounds of five messages each (the
// user message is its own unit, the batch is one unit of four), taken
// from the middle of the context.
func benchPlan(n int) pruneguard.Plan {
	var p pruneguard.Plan
	start := (n / 5) / 2
	for i := start; len(p.Evict) < 100; i++ {
		p.Evict = append(p.Evict,
			pruneguard.MessageID(fmt.Sprintf("u%d", i)),
			pruneguard.MessageID(fmt.Sprintf("a%d", i)),
			pruneguard.MessageID(fmt.Sprintf("r%d_0", i)),
			pruneguard.MessageID(fmt.Sprintf("r%d_1", i)),
			pruneguard.MessageID(fmt.Sprintf("r%d_2", i)))
	}
	return p
}

// BenchmarkPrune decides the same 100-message plan over contexts of
// growing length. The cost must not grow with the length.
func BenchmarkPrune(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			c := benchContext(b, n)
			p := benchPlan(n)
			d, err := c.Prune(p)
			if err != nil {
				b.Fatal(err)
			}
			if len(d.Evict) != 100 {
				b.Fatalf("evicts %d messages, want 100", len(d.Evict))
			}
			runtime.GC() // start timing without the garbage of building the context
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Prune(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckUnderBudget is the check a runtime runs before every
// model call when nothing needs pruning: constant time, no allocation.
func BenchmarkCheckUnderBudget(b *testing.B) {
	c := benchContext(b, 100000)
	g := pruneguard.Guard{Budget: c.Tokens() + 1, Policy: pruneguard.OldestFirst{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := g.Check(c)
		if err != nil || r.Outcome != pruneguard.UnderBudget {
			b.Fatal(r.Outcome, err)
		}
	}
}

func TestCheckUnderBudgetDoesNotAllocate(t *testing.T) {
	c := benchContext(t, 1000)
	g := pruneguard.Guard{Budget: c.Tokens()}
	allocs := testing.AllocsPerRun(100, func() {
		if r, _ := g.Check(c); r.Outcome != pruneguard.UnderBudget {
			t.Fatal(r.Outcome)
		}
	})
	if allocs != 0 {
		t.Fatalf("under-budget check allocates %v times", allocs)
	}
}

// A prune's allocations depend on the plan, not on the context's length.
func TestPruneAllocationsDoNotGrowWithTheContext(t *testing.T) {
	allocs := func(n int) float64 {
		c := benchContext(t, n)
		p := benchPlan(n)
		return testing.AllocsPerRun(20, func() {
			if _, err := c.Prune(p); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(1000), allocs(20000)
	if small != large {
		t.Fatalf("a 100-message prune allocates %v times over 1,000 messages, %v times over 20,000", small, large)
	}
}

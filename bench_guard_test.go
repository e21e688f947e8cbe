package pruneguard_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// session is a long agent session at its steady state: rounds of a user
// message and an assistant turn with a parallel batch of three calls and
// their three results, each round coupled into one unit (so that every
// policy, which prunes whole units, holds the session at its length).
// Result sizes vary (150, 300 and 450 tokens, give or take 25), so that
// largest-first has an order to keep, while rounds stay about the same
// size.
type session struct {
	c      *pruneguard.Context
	round  int
	tokens int // a round's tokens, on average
}

var sessionTools = []string{"read_file", "grep", "stat"}

func newSession(tb testing.TB, n int) *session {
	tb.Helper()
	// The runtime accepts losing its user turns, so that every unit may go.
	s := &session{c: pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})}
	for _, name := range sessionTools {
		if err := s.c.RegisterTool(pruneguard.Tool{Name: name, Annotations: pruneguard.Annotations{
			ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true}); err != nil {
		tb.Fatal(err)
	}
	for s.c.Len()+5 <= n {
		s.add(tb)
	}
	s.tokens = (s.c.Tokens() - 500) / s.round
	return s
}

// add appends one round.
func (s *session) add(tb testing.TB) {
	i := s.round
	s.round++
	u := pruneguard.MessageID(fmt.Sprintf("u%d", i))
	a := pruneguard.MessageID(fmt.Sprintf("a%d", i))
	ms := []pruneguard.Message{
		{ID: u, Role: pruneguard.RoleUser, Tokens: 20},
		{ID: a, Role: pruneguard.RoleAssistant, Tokens: 40},
	}
	for j, tool := range sessionTools {
		id := pruneguard.CallID(fmt.Sprintf("c%d_%d", i, j))
		ms[1].Calls = append(ms[1].Calls, pruneguard.Call{ID: id, Tool: tool})
		ms = append(ms, pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("r%d_%d", i, j)), Role: pruneguard.RoleTool,
			Tokens: []int{150, 300, 450}[(i+j)%3] + (i*7919+j*104729)%50, Answers: []pruneguard.CallID{id}})
	}
	for _, m := range ms {
		if err := s.c.Append(m); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.c.Couple(u, a); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkGuardCheck is the path a runtime runs before every model call,
// in the steady state of a long session: each iteration is one turn, a
// round appended and a budget check. The budget is the session's starting
// size, and a check that finds it exceeded prunes a round's worth below
// it, so about every other turn prunes a little. Each policy keeps the
// session at its length: oldest first and largest first free what the
// budget asks; keep-last-tools keeps the tool uses of all rounds but two.
func BenchmarkGuardCheck(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			for _, pol := range []struct {
				name string
				make func(rounds int) pruneguard.Policy
			}{
				{"oldest", func(int) pruneguard.Policy { return pruneguard.OldestFirst{} }},
				{"largest", func(int) pruneguard.Policy { return pruneguard.LargestResultsFirst{} }},
				{"keep-last-tools", func(rounds int) pruneguard.Policy { return pruneguard.KeepLastToolUses{Keep: 3 * (rounds - 2)} }},
			} {
				b.Run("policy="+pol.name, func(b *testing.B) {
					s := newSession(b, n)
					trigger := s.c.Tokens()
					check := pruneguard.Guard{Budget: trigger - s.tokens, Policy: pol.make(s.round)}
					idle := pruneguard.Guard{Budget: trigger}
					pruned := 0
					runtime.GC()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						s.add(b)
						g := idle
						if s.c.Tokens() > trigger {
							g = check
						}
						res, err := g.Check(s.c)
						if err != nil {
							b.Fatal(err)
						}
						if res.Outcome == pruneguard.Pruned {
							pruned++
						}
					}
					b.StopTimer()
					if b.N >= 100 && (pruned < b.N/5 || pruned > b.N*4/5) {
						b.Fatalf("%d of %d turns pruned", pruned, b.N)
					}
					if l := s.c.Len(); l < n*9/10 || l > n*12/10+10 {
						b.Fatalf("the session holds %d messages, not about %d", l, n)
					}
					b.ReportMetric(float64(pruned)/float64(b.N), "prunes/turn")
				})
			}
		})
	}
}

// A budget check allocates in proportion to what it prunes, not to the
// length of the session: no snapshot, no map of every unit.
func TestGuardCheckAllocationsDoNotGrowWithTheSession(t *testing.T) {
	for _, pol := range []struct {
		name string
		make func(rounds int) pruneguard.Policy
	}{
		{"oldest", func(int) pruneguard.Policy { return pruneguard.OldestFirst{} }},
		{"largest", func(int) pruneguard.Policy { return pruneguard.LargestResultsFirst{} }},
		{"keep-last-tools", func(rounds int) pruneguard.Policy { return pruneguard.KeepLastToolUses{Keep: 3 * (rounds - 2)} }},
	} {
		t.Run(pol.name, func(t *testing.T) {
			allocs := func(n int) float64 {
				s := newSession(t, n)
				trigger := s.c.Tokens()
				g := pruneguard.Guard{Budget: trigger - s.tokens, Policy: pol.make(s.round)}
				return testing.AllocsPerRun(200, func() {
					s.add(t)
					if s.c.Tokens() > trigger {
						if _, err := g.Check(s.c); err != nil {
							t.Fatal(err)
						}
					}
				})
			}
			small, large := allocs(1000), allocs(30000)
			t.Logf("allocations per turn: %v at 1,000 messages, %v at 30,000", small, large)
			if large > small*1.2+2 {
				t.Fatalf("a turn allocates %v times at 1,000 messages, %v at 30,000", small, large)
			}
		})
	}
}

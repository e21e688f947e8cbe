package pruneguard_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// chatContext is a request body's Context as the command builds it: a
// pinned system prompt and task, then rounds of an assistant message
// calling one to three tools and their results, every eighth round ending
// with a reply and a user follow-up. With free set, the tools' results
// and the text may go; without, as MCP's defaults and the default text
// class say, nothing may.
func chatContext(tb testing.TB, n int, free bool) *pruneguard.Context {
	tb.Helper()
	cfg := pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, Regen: pruneguard.RegenDropUnsafe}
	tool := pruneguard.Tool{}
	if free {
		cfg.TextClass = pruneguard.Reconstructible
		tool.Output = pruneguard.Reconstructible
	}
	c := pruneguard.NewContext(cfg)
	tools := []string{"read_file", "grep", "run_tests", "list_dir"}
	for _, name := range tools {
		tool.Name = name
		if err := c.RegisterTool(tool); err != nil {
			tb.Fatal(err)
		}
	}
	must := func(m pruneguard.Message) {
		if err := c.Append(m); err != nil {
			tb.Fatal(err)
		}
	}
	must(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 300, Pinned: true})
	must(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 60, Pinned: true})
	for i := 0; c.Len() < n; i++ {
		a := pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 30}
		var rs []pruneguard.Message
		for j := 0; j <= i%3; j++ {
			id := pruneguard.CallID(fmt.Sprintf("c%d_%d", i, j))
			a.Calls = append(a.Calls, pruneguard.Call{ID: id, Tool: tools[(i+j)%4]})
			rs = append(rs, pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("r%d_%d", i, j)), Role: pruneguard.RoleTool,
				Tokens: 50 + (i*7919+j*104729)%400, Answers: []pruneguard.CallID{id}})
		}
		must(a)
		for _, r := range rs {
			must(r)
		}
		if i%8 == 7 {
			must(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("reply", i)), Role: pruneguard.RoleAssistant, Tokens: 40, Content: []byte("done")})
			must(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("user", i)), Role: pruneguard.RoleUser, Tokens: 20, Content: []byte("next")})
		}
	}
	return c
}

// BenchmarkGuardCheckFirst is the one check a command makes on a freshly
// built Context of 20,000 messages, at nine tenths and half of its
// tokens: when everything may go (free) and when nothing may (refused).
// A check that finds no safe way should cost no more than one that
// finds it.
func BenchmarkGuardCheckFirst(b *testing.B) {
	for _, pct := range []int{90, 50} {
		for _, free := range []bool{true, false} {
			name := map[bool]string{true: "free", false: "refused"}[free]
			b.Run(fmt.Sprintf("budget=%d%%/%s", pct, name), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					c := chatContext(b, 20000, free)
					g := pruneguard.Guard{Budget: c.Tokens() * pct / 100, Rounds: 32}
					runtime.GC() // the collection of the setup's garbage is not the check's
					b.StartTimer()
					res, _ := g.Check(c)
					if free != (res.Outcome == pruneguard.Pruned && res.After <= g.Budget) {
						b.Fatalf("outcome %v, %d tokens of %d", res.Outcome, res.After, g.Budget)
					}
				}
			})
		}
	}
}

// BenchmarkGuardCheckAgain is the check after BenchmarkGuardCheckFirst's
// refusing one, on the same Context with nothing new: it passes over the
// refusals remembered and lists them in its Reason.
func BenchmarkGuardCheckAgain(b *testing.B) {
	for _, pct := range []int{90, 50} {
		b.Run(fmt.Sprintf("budget=%d%%/refused", pct), func(b *testing.B) {
			b.ReportAllocs()
			c := chatContext(b, 20000, false)
			g := pruneguard.Guard{Budget: c.Tokens() * pct / 100, Rounds: 32}
			if res, _ := g.Check(c); res.Outcome != pruneguard.Deferred {
				b.Fatalf("outcome %v", res.Outcome)
			}
			for b.Loop() {
				if res, _ := g.Check(c); res.Outcome != pruneguard.Deferred || res.Reason == nil {
					b.Fatalf("outcome %v, reason %v", res.Outcome, res.Reason)
				}
			}
		})
	}
}

// mallocs returns how many heap allocations f makes.
func mallocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// A check that finds no safe way allocates about as often for 20,000
// messages as for 2,000: its refusals come from chunks, a unit's
// messages held for one reason share one, and the refusals met are
// found again by the place of their message, not by a key made for
// each.
func TestRefusingCheckAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	check := func(n int) (uint64, pruneguard.Result) {
		c := chatContext(t, n, false)
		g := pruneguard.Guard{Budget: c.Tokens() / 2, Rounds: 32}
		var res pruneguard.Result
		m := mallocs(func() { res, _ = g.Check(c) })
		return m, res
	}
	small, _ := check(2000)
	large, res := check(20000)
	require.Equal(t, pruneguard.Deferred, res.Outcome, "nothing may go")
	require.Greater(t, len(refusedUnits(res.Refused)), 6000, "every unit's refusal is met and listed")
	t.Logf("allocations: %d at 2,000 messages, %d at 20,000", small, large)
	assert.Less(t, large, 2*small+200, "allocations grow with the refusals' chunks, not with each refusal")
}

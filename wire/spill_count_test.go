package wire_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// With Config.PointerTokens set, the Context counts the pointer lines a
// guarded check writes, and the body's count stays the body's: what the
// Context counts more, the overhead counts less, and the same check
// makes the same decisions within the same budget. (Zero means the
// default; two settings are compared.)
func TestGuardedSpillPointerTokens(t *testing.T) {
	const lo, per = 45, 60
	for d, body := range spillBodies(true) {
		t.Run(string(d), func(t *testing.T) {
			run := func(pt int) (*wire.Guarded, pruneguard.Result, int) {
				sp := &spill.Spiller{Store: &spill.Memory{}}
				in, g := guarded(t, d, body, wire.Options{Spiller: sp, Config: pruneguard.Config{PointerTokens: pt}})
				budget := g.Tokens() - 300
				res, _, err := g.Check(pruneguard.Guard{Budget: budget})
				if err != nil {
					t.Fatal(err)
				}
				noWorse(t, in, g)
				if g.Tokens() > budget {
					t.Fatalf("PointerTokens %d: body %d tokens, budget %d", pt, g.Tokens(), budget)
				}
				return g, res, budget
			}
			g0, res0, _ := run(lo)
			g1, res1, _ := run(per)
			var ev0, ev1 []pruneguard.MessageID
			for _, dd := range res0.Decisions {
				ev0 = append(ev0, dd.Evict...)
			}
			lines := map[pruneguard.Pointer]bool{}
			for _, dd := range res1.Decisions {
				ev1 = append(ev1, dd.Evict...)
				for _, n := range dd.Pointers {
					if _, ok := g1.Context().Message(n.Message); !ok {
						lines[n.Pointer] = true
					}
				}
			}
			if fmt.Sprint(ev0) != fmt.Sprint(ev1) || len(lines) == 0 {
				t.Fatalf("evicted %v with PointerTokens %d, %v with %d; lines %v", ev0, lo, ev1, per, lines)
			}
			msgs := 0
			for _, m := range g1.Context().Messages() {
				msgs += m.Tokens
			}
			if got, want := g1.Context().Tokens()-msgs, per*len(lines); got < want {
				t.Errorf("the Context counts %d tokens beside its messages, want at least the lines' %d", got, want)
			}
			if g0.Tokens() != g1.Tokens() {
				t.Errorf("body %d tokens with PointerTokens %d, %d with %d", g0.Tokens(), lo, g1.Tokens(), per)
			}
			if got, want := g1.Overhead(), g0.Overhead()-(per-lo)*len(lines); got != want {
				t.Errorf("overhead %d, want %d: the lines are counted once", got, want)
			}
		})
	}
}

// With a Spiller and no PointerTokens, a Guarded and a Session count a
// pointer line as the Counter counts one: the longest line of a
// *spill.Spiller's pointer, its description included.
func TestSpillerPointerTokensDefault(t *testing.T) {
	var count pruneguard.ApproxCounter
	sp := &spill.Spiller{Store: &spill.Memory{}}
	q, _ := json.Marshal("\n" + sp.LongestPointerText())
	want := count.Count(q)
	_, g := guarded(t, wire.Anthropic, spillBodies(true)[wire.Anthropic], wire.Options{Spiller: sp})
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1 << 20}, Spiller: sp})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*pruneguard.Context{g.Context(), s.Context()} {
		if got := c.Config().PointerTokens; got < want-1 || got > want+1 {
			t.Errorf("PointerTokens %d, want about %d", got, want)
		}
	}
	// Without a Spiller nothing is spilled, and nothing is set.
	_, g = guarded(t, wire.Anthropic, spillBodies(true)[wire.Anthropic], wire.Options{})
	if got := g.Context().Config().PointerTokens; got != 0 {
		t.Errorf("PointerTokens %d without a Spiller", got)
	}
}

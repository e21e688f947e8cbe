package pruneguard_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// BenchmarkGuardCheckRefused is a turn of a session whose oldest units
// the gates refused (irreducible, by the oracle) at earlier checks: a
// round arrives, and the check prunes the oldest reconstructible one. The
// refused units are remembered and crossed at once, so the turn costs
// the same however many there are.
func BenchmarkGuardCheckRefused(b *testing.B) {
	for _, refused := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprintf("refused=%d", refused), func(b *testing.B) {
			o := &keepOracle{}
			c := keepSession(b, o, refused, 200)
			g := pruneguard.Guard{Budget: c.Tokens() - 105}
			if _, err := g.Check(c); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				addRound(b, c, 1_000_000+i, 100, "plain")
				if res, err := g.Check(c); err != nil || res.Outcome != pruneguard.Pruned {
					b.Fatal(res.Outcome, err)
				}
			}
		})
	}
}

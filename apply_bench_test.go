package pruneguard

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkApply times Apply carrying out a decision that evicts the
// oldest units of a Context of 20,000 messages: more than half, which
// leaves a compaction to follow, or a tenth, which takes each message
// out of the indexes. The Context is built again between iterations.
func BenchmarkApply(b *testing.B) {
	const n = 20_000
	for _, pct := range []int{55, 10} {
		b.Run(fmt.Sprintf("evict=%d%%", pct), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				c := NewContext(Config{TextClass: Reconstructible})
				if err := c.RegisterTool(Tool{Name: "read_file", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}); err != nil {
					b.Fatal(err)
				}
				compactRounds(b, c, 0, n/5)
				var plan Plan
				for u, gone := c.firstUnit(), 0; u != none && gone < n*pct/100; u = c.unit(u).next {
					plan.Evict = append(plan.Evict, c.id(c.unit(u).head))
					for range c.members(u) {
						gone++
					}
				}
				d, err := c.Prune(plan)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				b.StartTimer()
				if err := c.Apply(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

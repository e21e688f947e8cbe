package main

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// BenchmarkPruneRefusing times what prune_ms reports (the guard's check
// through the wire layer, the body bound outside the timer) on a body
// of 20,000 generated messages, at half and nine tenths of its tokens:
// when everything may go (--unannotated regenerable --text
// reconstructible) and when nothing may (the defaults), which exits 3.
// It runs bench/cmd/genchat for the body.
func BenchmarkPruneRefusing(b *testing.B) {
	data, err := exec.Command("go", "run", "../../bench/cmd/genchat", "-messages", "20000").Output()
	if err != nil {
		b.Skip("genchat:", err)
	}
	g, err := wire.Bind(data, wire.OpenAIChat, wire.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tokens := g.Tokens()
	for _, pct := range []int{90, 50} {
		for _, free := range []bool{true, false} {
			name := map[bool]string{true: "free", false: "refused"}[free]
			b.Run(fmt.Sprintf("budget=%d%%/%s", pct, name), func(b *testing.B) {
				o := pruneOpts{budget: tokens * pct / 100, policy: "oldest", boundary: pruneguard.BoundaryRelaxed}
				if free {
					o.unannotated, o.text = wire.UnannotatedRegenerable, pruneguard.Reconstructible
				}
				total := 0.0
				for b.Loop() {
					_, rep, code, err := prune(data, wire.OpenAIChat, o)
					if err != nil || (code == 0) != free {
						b.Fatalf("exit %d, %v", code, err)
					}
					total += rep.PruneMS
				}
				b.ReportMetric(total/float64(b.N), "prune_ms")
			})
		}
	}
}

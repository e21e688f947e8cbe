package wire

import (
	"os"
	"testing"
	"time"

	"github.com/pruneguard/pruneguard"
)

func BenchmarkZZPrune(b *testing.B) {
	data, err := os.ReadFile("/tmp/wperf/chat-20k.json")
	if err != nil {
		b.Skip()
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		g, err := Bind(data, OpenAIChat, Options{Config: pruneguard.Config{Regen: pruneguard.RegenDropUnsafe}, Unannotated: UnannotatedRegenerable})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t := time.Now()
		g.Check(pruneguard.Guard{Budget: 1718000 - g.Overhead(), Rounds: 32})
		total += time.Since(t)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/check")
}

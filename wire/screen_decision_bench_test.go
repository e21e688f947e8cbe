package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// BenchmarkScreenDecision measures what the wire layer spends on one
// large decision of a guarded check, the core's work left out: the
// screen of a decision evicting the oldest half (or tenth) of a
// 20,000-message Chat body and carrying it out on the edit state. The
// decision is made once; each iteration screens and records it and is
// then undone, untimed. ns/removed is the time per message removed.
func BenchmarkScreenDecision(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"the task"}`)
	for k := 0; k < 4999; k++ {
		fmt.Fprintf(&sb, `,{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"read","arguments":"{\"path\":\"f%d\"}"}}]}`, k, k)
		fmt.Fprintf(&sb, `,{"role":"tool","tool_call_id":"c%d","content":"%s"}`, k, strings.Repeat("output ", 40+k%60))
		sb.WriteString(`,{"role":"assistant","content":"Read it; on to the next."},{"role":"user","content":"Go on."}`)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	for _, part := range []int{2, 10} {
		b.Run(fmt.Sprintf("evict=1/%d", part), func(b *testing.B) {
			opts := Options{Unannotated: UnannotatedRegenerable,
				Config: pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, TextClass: pruneguard.Reconstructible}}
			g, err := Bind(body, OpenAIChat, opts)
			if err != nil {
				b.Fatal(err)
			}
			res, _, err := g.Check(pruneguard.Guard{Budget: g.Tokens() - g.Tokens()/part})
			if err != nil || len(res.Decisions) != 1 {
				b.Fatalf("check: %v, %d decisions", err, len(res.Decisions))
			}
			d := res.Decisions[0]
			if g, err = Bind(body, OpenAIChat, opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.journal = []undo{}
				sc := &guardedScreen{g: g}
				if vs := sc.Screen(d); len(vs) > 0 {
					b.Fatalf("screen refused: %v", vs[0])
				}
				g.record(sc.last)
				b.StopTimer()
				if g.seq.kept != g.Len()-len(d.Evict) {
					b.Fatalf("%d kept after evicting %d of %d", g.seq.kept, len(d.Evict), g.Len())
				}
				g.undo()
				g.journal = nil
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(d.Evict)), "ns/removed")
		})
	}
}

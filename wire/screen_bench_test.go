package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// retryBody builds a Bedrock body of a user message and n rounds of an
// assistant and a user message, bound to a Context in which each round
// is one unit and nothing is pinned, and a plan that evicts every round
// and then the last user message alone: that last unit would leave two
// assistant messages side by side, so the decision is refused as a whole
// and the screen takes the rounds one by one.
func retryBody(tb testing.TB, n int) (*Guarded, pruneguard.Plan) {
	var sb strings.Builder
	sb.WriteString(`{"messages":[{"role":"user","content":[{"text":"u"}]}`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `,{"role":"assistant","content":[{"text":"a%d"}]},{"role":"user","content":[{"text":"u%d"}]}`, i, i)
	}
	sb.WriteString(`,{"role":"assistant","content":[{"text":"end"}]}]}`)
	b, err := Read([]byte(sb.String()), Bedrock)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := b.Bind(Options{})
	if err != nil {
		tb.Fatal(err)
	}
	g.ctx = pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	for i, m := range b.Messages {
		if err := g.ctx.Append(pruneguard.Message{ID: ID(i), Role: pruneguard.Role(m.Role), Tokens: 5}); err != nil {
			tb.Fatal(err)
		}
	}
	var p pruneguard.Plan
	for i := 0; i < n-1; i++ {
		if err := g.ctx.Couple(ID(1+2*i), ID(2+2*i)); err != nil {
			tb.Fatal(err)
		}
		p.Evict = append(p.Evict, ID(1+2*i), ID(2+2*i))
	}
	p.Evict = append(p.Evict, ID(2*n))
	return g, p
}

// BenchmarkScreenRetry prunes a plan of n units refused as a whole by
// the screen, so that it is taken unit by unit.
func BenchmarkScreenRetry(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("units=%d", n), func(b *testing.B) {
			g, p := retryBody(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d, refs, err := g.Prune(p)
				if err != nil || len(refs) != 1 || len(d.Evict) != 2*(n-1) {
					b.Fatalf("decision of %d, refusals %v, err %v", len(d.Evict), refs, err)
				}
			}
		})
	}
}

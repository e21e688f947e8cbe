package wire_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// bigAnthropic builds an Anthropic body of n tool rounds, each an
// assistant tool_use turn and a user turn with a result of about 2 KB
// (half as a string, half as a block array).
func bigAnthropic(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","max_tokens":99,"system":"be brief","tools":[{"name":"read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"start"}`)
	res := strings.Repeat("line of output ", 130)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `,{"role":"assistant","content":[{"type":"text","text":"step %d"},{"type":"tool_use","id":"t%d","name":"read","input":{"path":"f%d"}}]}`, i, i, i)
		if i%2 == 0 {
			fmt.Fprintf(&sb, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}`, i, res)
		} else {
			fmt.Fprintf(&sb, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":[{"type":"text","text":"%s"}]}]}`, i, res)
		}
	}
	sb.WriteString(`,{"role":"assistant","content":"done"},{"role":"user","content":"next"}]}`)
	return []byte(sb.String())
}

// BenchmarkRead reads and validates a large body.
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{100, 2000} {
		body := bigAnthropic(n)
		b.Run(fmt.Sprintf("rounds=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for i := 0; i < b.N; i++ {
				bd, err := wire.Read(body, wire.Anthropic)
				if err != nil {
					b.Fatal(err)
				}
				bd.Validate()
			}
		})
	}
}

// BenchmarkCheck builds the Context of a large body and prunes it to half
// its tokens.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{100, 2000} {
		body := bigAnthropic(n)
		b.Run(fmt.Sprintf("rounds=%d", n), func(b *testing.B) {
			bd, err := wire.Read(body, wire.Anthropic)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g, err := bd.Context(wire.Options{Unannotated: wire.UnannotatedRegenerable})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := g.Check(pruneguard.Guard{Budget: g.Context().Tokens() / 2}); err != nil {
					b.Fatal(err)
				}
				if _, err := g.Body().Marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

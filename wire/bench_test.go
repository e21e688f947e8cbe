package wire_test

import (
	"encoding/json"
	"fmt"
	"runtime"
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
				g, err := bd.Bind(wire.Options{Unannotated: wire.UnannotatedRegenerable})
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

// chatSession builds an OpenAI Chat body of about n messages: a system
// prompt and a task, then rounds of an assistant message calling one to
// three tools in parallel and their results (300 to 1,500 bytes), with
// an assistant reply and a user follow-up every eighth round. The shape
// of bench/cmd/genchat, deterministically.
func chatSession(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"gpt-4o","tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}},{"type":"function","function":{"name":"grep","parameters":{"type":"object"}}}],"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"Fix the failing test."}`)
	line := "    func (g *Guarded) Check(guard pruneguard.Guard) (pruneguard.Result, []Refusal, error) {\n"
	left, call := n-2, 0
	for round := 0; left > 0; round++ {
		calls := 1 + round%3
		if calls+1 > left {
			sb.WriteString(`,{"role":"assistant","content":"done"}`)
			left--
			continue
		}
		sb.WriteString(`,{"role":"assistant","content":null,"tool_calls":[`)
		for k := range calls {
			if k > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"f%d.go\"}"}}`, call+k, round)
		}
		sb.WriteString(`]}`)
		for k := range calls {
			out, _ := json.Marshal(strings.Repeat(line, 4+(round*7+k*5)%15))
			fmt.Fprintf(&sb, `,{"role":"tool","tool_call_id":"call_%d","content":%s}`, call+k, out)
		}
		call += calls
		left -= 1 + calls
		if round%8 == 7 && left >= 2 {
			sb.WriteString(`,{"role":"assistant","content":"Found it; now the next file."},{"role":"user","content":"Good, go on."}`)
			left -= 2
		}
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// BenchmarkGuardedCheck measures one guarded check that prunes a little,
// per iteration, on a Chat body of 1,000 and of 100,000 messages: the
// budget is the body's tokens less 600, about one round, so that each
// check evicts the oldest round or two behind the screen. Reading and
// binding the body is outside the timer: it is redone, untimed, once the
// checks have taken half the body away.
func BenchmarkGuardedCheck(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		body := chatSession(n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			var g *wire.Guarded
			var floor int
			bind := func() {
				b.StopTimer()
				var err error
				g, err = wire.Bind(body, wire.OpenAIChat, wire.Options{Unannotated: wire.UnannotatedRegenerable})
				if err != nil {
					b.Fatal(err)
				}
				floor = g.Tokens() / 2
				runtime.GC()
				b.StartTimer()
			}
			bind()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				budget := g.Tokens() - 600
				if budget < floor {
					bind()
					budget = g.Tokens() - 600
				}
				res, _, err := g.Check(pruneguard.Guard{Budget: budget})
				if err != nil || len(res.Decisions) == 0 {
					b.Fatalf("check: %v, %+v", err, res)
				}
			}
		})
	}
}

// BenchmarkPruneBody measures what `pruneguard prune` reports as prune_ms
// on a Chat body of 20,000 messages (chatSession): one guarded check that
// brings a freshly bound body to half, or nine tenths, of its tokens, with
// the options the comparison with other trimmers uses (`--unannotated
// regenerable --text reconstructible`, the relaxed boundary, oldest
// first). Binding the body is outside the timer.
func BenchmarkPruneBody(b *testing.B) {
	body := chatSession(20000)
	opts := wire.Options{
		Config:      pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, Regen: pruneguard.RegenDropUnsafe, TextClass: pruneguard.Reconstructible},
		Unannotated: wire.UnannotatedRegenerable,
	}
	for _, pct := range []int{50, 90} {
		b.Run(fmt.Sprintf("budget=%d%%", pct), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				g, err := wire.Bind(body, wire.OpenAIChat, opts)
				if err != nil {
					b.Fatal(err)
				}
				budget := g.Tokens() * pct / 100
				b.StartTimer()
				res, _, err := g.Check(pruneguard.Guard{Budget: budget, Policy: pruneguard.OldestFirst{}, Rounds: 32})
				if err != nil || res.Outcome != pruneguard.Pruned || g.Tokens() > budget {
					b.Fatalf("outcome %v, %d tokens over a budget of %d: %v", res.Outcome, g.Tokens(), budget, err)
				}
			}
		})
	}
}

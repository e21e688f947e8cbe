package wire_test

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// BenchmarkSessionSync measures a request of a 1,000-message conversation
// synced whole, as SDK middleware sees it, under the trigger: the read of
// the body, the prefix check, one new message, the body written back.
func BenchmarkSessionSync(b *testing.B) {
	all := chatTurns(500, 200)
	bodies := [][]byte{chatBody(all[:len(all)-2]), chatBody(all)}
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.Sync(bodies[0]); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(bodies[1])))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Sync(bodies[1]); err != nil {
			b.Fatal(err)
		}
	}
}

// chatRound is one round of the shape chatSession writes, k-th of its
// kind: an assistant message calling one to three tools and their
// results.
func chatRound(k int) []json.RawMessage {
	line := "    func (g *Guarded) Check(guard pruneguard.Guard) (pruneguard.Result, []Refusal, error) {\n"
	calls := 1 + k%3
	var tc []string
	var out []json.RawMessage
	for c := range calls {
		tc = append(tc, fmt.Sprintf(`{"id":"r%d_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"g%d.go\"}"}}`, k, c, k))
	}
	out = append(out, json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[`+strings.Join(tc, ",")+`]}`))
	for c := range calls {
		res, _ := json.Marshal(strings.Repeat(line, 4+(k*7+c*5)%15))
		out = append(out, json.RawMessage(fmt.Sprintf(`{"role":"tool","tool_call_id":"r%d_%d","content":%s}`, k, c, res)))
	}
	return out
}

// BenchmarkSessionRequest measures the guarded half of a request
// (Session.Check) on a Chat session holding 1,000 and 100,000 messages,
// the bodies BenchmarkGuardedCheck prunes, synced whole outside the
// timer: each iteration feeds one round (an assistant message calling
// one to three tools, and their results) and checks the session, whose
// budget, 600 tokens under the body it started from, makes the check
// prune a round or two whenever it is over (prunes/op says how often).
// The session holds about the same number of messages throughout. Writing the body (Session.WriteTo) is linear in
// its bytes and is measured by BenchmarkSessionWrite.
func BenchmarkSessionRequest(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		body := chatSession(n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			probe, err := wire.Read(body, wire.OpenAIChat)
			if err != nil {
				b.Fatal(err)
			}
			budget := wire.Tokens(probe, nil) - 600
			s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: budget},
				Unannotated: wire.UnannotatedRegenerable})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.Sync(body); err != nil {
				b.Fatal(err)
			}
			// Each round calls with arguments of its own, as new work does.
			rounds := make([][]json.RawMessage, b.N)
			for k := range rounds {
				rounds[k] = chatRound(k)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			prunes := 0
			for i := 0; i < b.N; i++ {
				for _, m := range rounds[i] {
					if _, err := s.Append(m); err != nil {
						b.Fatal(err)
					}
				}
				rep, err := s.Check()
				if err != nil || rep.After > rep.Before || rep.After > budget {
					b.Fatalf("check: %v, %+v", err, rep)
				}
				if len(rep.Evicted) > 0 {
					prunes++
				}
			}
			b.ReportMetric(float64(prunes)/float64(b.N), "prunes/op")
		})
	}
}

// BenchmarkSessionWrite writes the body of a Chat session of 1,000 and
// 100,000 messages (Session.WriteTo), as a request sends it.
func BenchmarkSessionWrite(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		body := chatSession(n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 30}})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.Sync(body); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

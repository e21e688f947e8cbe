package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// savedChat returns a Chat session of about n messages (rounds of tool
// calls and their results), synced a hundred messages at a time under a
// budget that prunes and spills, its configuration and its state.
func savedChat(b *testing.B, n int) (*wire.Session, wire.SessionConfig, []byte) {
	var all []json.RawMessage
	all = append(all, json.RawMessage(`{"role":"user","content":"read the files"}`))
	for k := 0; len(all) < n; k++ {
		all = append(all, chatRound(k)...)
	}
	cfg := wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 60_000}, Trigger: 80_000,
		Spiller: &spill.Spiller{Store: &spill.Memory{}}}
	s, err := wire.NewSession(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for end := 100; ; end += 100 {
		end = min(end, len(all))
		if _, _, err := s.Sync(chatBody(all[:end])); err != nil {
			b.Fatal(err)
		}
		if end == len(all) {
			break
		}
	}
	var state bytes.Buffer
	if err := s.Save(&state); err != nil {
		b.Fatal(err)
	}
	return s, cfg, state.Bytes()
}

// BenchmarkSessionSaveRestore reports what saving and restoring a Chat
// session of 1,000 and 10,000 messages costs (pruned, some of it
// spilled), and the bytes per message of its state.
func BenchmarkSessionSaveRestore(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		s, cfg, state := savedChat(b, n)
		b.Run(fmt.Sprintf("save/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var w bytes.Buffer
			for b.Loop() {
				w.Reset()
				if err := s.Save(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.Len())/float64(s.Len()), "B/msg")
		})
		b.Run(fmt.Sprintf("restore/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.RestoreSession(bytes.NewReader(state), cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

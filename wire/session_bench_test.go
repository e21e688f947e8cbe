package wire_test

import (
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

// BenchmarkSessionRequest measures Request on a session fed message by
// message, under the trigger: the body written from what is held.
func BenchmarkSessionRequest(b *testing.B) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	for range 500 {
		if _, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("a question of some length, asked again")}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleAssistant, Content: []byte("an answer of some length, given again")}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := s.Request(); err != nil {
			b.Fatal(err)
		}
	}
}

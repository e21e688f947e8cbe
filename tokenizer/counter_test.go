package tokenizer_test

import (
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/tokenizer"
)

// An Encoding is a pruneguard.Counter.
var (
	_ pruneguard.Counter = tokenizer.O200k()
	_ pruneguard.Counter = (*tokenizer.Encoding)(nil)
)

// A Context configured with an encoding counts with it: a message given
// no count, and a registered schema.
func TestEncodingCountsForAContext(t *testing.T) {
	enc := tokenizer.O200k()
	c := pruneguard.NewContext(pruneguard.Config{Counter: enc})
	content := []byte("checked /etc/limits, ulimit is unlimited, so the OOM is not from the shell")
	if err := c.Append(pruneguard.Message{ID: "m", Content: content}); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Tokens(), enc.Count(content); got != want || want == 0 {
		t.Fatalf("Tokens() = %d, want %d", got, want)
	}
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	if err := c.RegisterTool(pruneguard.Tool{Name: "read_file", Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Tokens(), enc.Count(content)+enc.Count(schema); got != want {
		t.Fatalf("with a schema, Tokens() = %d, want %d", got, want)
	}
}

package wire_test

import (
	"bytes"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// The former names keep old code compiling: wire.Spiller is the core's
// interface, wire.Violation is RuleViolation.
var (
	_ wire.Spiller                                          = (*spill.Spiller)(nil)
	_ pruneguard.Spiller                                    = wire.Spiller(nil)
	_ wire.RuleViolation                                    = wire.Violation{}
	_ func(before, after []wire.Violation) []wire.Violation = wire.NewViolations
)

// Body.Context, the former name of Body.Bind, binds the body as Bind does.
func TestBodyContextIsBind(t *testing.T) {
	body := spillBodies(true)[wire.Anthropic]
	old, err := read(t, wire.Anthropic, body).Context(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now, err := read(t, wire.Anthropic, body).Bind(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if _, err := old.WriteTo(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := now.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || old.Context().Len() != now.Context().Len() || old.Tokens() != now.Tokens() {
		t.Errorf("Body.Context and Body.Bind differ: %d and %d messages, %d and %d tokens", old.Context().Len(), now.Context().Len(), old.Tokens(), now.Tokens())
	}
}

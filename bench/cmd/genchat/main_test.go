package main

import (
	"bytes"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// The generator writes a Chat body of exactly the messages asked for,
// that breaks no provider rule, the same for the same seed.
func TestGenerate(t *testing.T) {
	for _, n := range []int{2, 3, 57, 400} {
		var a, b bytes.Buffer
		if err := write(&a, n, 7); err != nil {
			t.Fatal(err)
		}
		if err := write(&b, n, 7); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%d messages: two runs differ", n)
		}
		body, err := wire.Read(a.Bytes(), wire.OpenAIChat)
		if err != nil {
			t.Fatalf("%d messages: %v", n, err)
		}
		if len(body.Messages) != n {
			t.Errorf("%d messages asked, %d written", n, len(body.Messages))
		}
		if vs := body.Validate(); len(vs) > 0 {
			t.Errorf("%d messages: %v", n, vs)
		}
	}
	if err := write(&bytes.Buffer{}, 1, 1); err == nil {
		t.Errorf("one message accepted")
	}
}

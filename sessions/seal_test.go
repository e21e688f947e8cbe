package sessions_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
)

func TestSealRoundTrip(t *testing.T) {
	for _, state := range [][]byte{nil, {}, []byte("state"), bytes.Repeat([]byte{0, 0xff}, 5000)} {
		rec := sessions.Seal("acme__s1", 42, state)
		got, v, err := sessions.Unseal("acme__s1", rec)
		if err != nil || v != 42 || !bytes.Equal(got, state) {
			t.Fatalf("Unseal(Seal(%q)) = %q, %d, %v", state, got, v, err)
		}
	}
}

// Every truncation and every change of one byte of a record is refused
// with ErrCorrupt, as are records for another id or of version 0.
func TestUnsealRefusesDamage(t *testing.T) {
	rec := sessions.Seal("acme__s1", 7, []byte("a conversation's state"))
	for n := range len(rec) {
		if _, _, err := sessions.Unseal("acme__s1", rec[:n]); !errors.Is(err, sessions.ErrCorrupt) {
			t.Fatalf("record truncated to %d bytes: %v", n, err)
		}
	}
	for i := range rec {
		for _, flip := range []byte{1, 0x80, 0xff} {
			b := bytes.Clone(rec)
			b[i] ^= flip
			if got, _, err := sessions.Unseal("acme__s1", b); !errors.Is(err, sessions.ErrCorrupt) {
				t.Fatalf("byte %d changed by %#x: %q, %v", i, flip, got, err)
			}
		}
	}
	if _, _, err := sessions.Unseal("acme__s2", rec); !errors.Is(err, sessions.ErrCorrupt) {
		t.Fatalf("record of another id: %v", err)
	}
	if _, _, err := sessions.Unseal("acme__s1", append(bytes.Clone(rec), 0)); !errors.Is(err, sessions.ErrCorrupt) {
		t.Fatalf("record with a byte appended: %v", err)
	}
	if _, _, err := sessions.Unseal("x", sessions.Seal("x", sessions.Absent, nil)); !errors.Is(err, sessions.ErrCorrupt) {
		t.Fatalf("record of version 0: %v", err)
	}
}

func FuzzUnseal(f *testing.F) {
	f.Add(sessions.Seal("id", 1, []byte("state")))
	f.Add([]byte("pgsessn\x01"))
	f.Fuzz(func(t *testing.T, rec []byte) {
		state, v, err := sessions.Unseal("id", rec)
		if err != nil {
			if !errors.Is(err, sessions.ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		// Whatever unseals is exactly what Seal makes of it.
		if !bytes.Equal(sessions.Seal("id", v, state), rec) {
			t.Fatalf("%q unseals but is not the record of what it holds", rec)
		}
	})
}

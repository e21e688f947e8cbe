package einoguard_test

import (
	"bytes"
	"errors"
	"testing"

	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
	"github.com/pruneguard/pruneguard/spill"
)

// Any state object, sealed, either restores or is refused with
// ErrBadState; a session restored from it saves a state that restores
// to a session saving the same bytes, and takes its next list without
// panicking.
func FuzzRestore(f *testing.F) {
	script := fleetScript(8)
	for _, m := range fleetModes {
		s := mustNew(f, fleetConfig(m, &spill.Memory{}, nil))
		for _, l := range script {
			if _, _, err := s.Prune(f.Context(), cloneList(l)); err != nil {
				f.Fatal(err)
			}
			var buf bytes.Buffer
			if err := s.Save(&buf); err != nil {
				f.Fatal(err)
			}
			b := buf.Bytes()
			f.Add(append(bytes.Clone(b[:bytes.LastIndex(b, []byte(`,"sha256":"`))]), '}'))
		}
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if len(obj) < 2 || obj[len(obj)-1] != '}' {
			return
		}
		m := fleetModes[2]
		s := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
		err := s.Restore(t.Context(), bytes.NewReader(einoguard.SealForTest(bytes.Clone(obj))))
		if err != nil {
			if !errors.Is(err, einoguard.ErrBadState) {
				t.Fatalf("Restore = %v, want nil or ErrBadState", err)
			}
			return
		}
		var once, twice bytes.Buffer
		if err := s.Save(&once); err != nil {
			t.Fatal(err)
		}
		again := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
		if err := again.Restore(t.Context(), bytes.NewReader(once.Bytes())); err != nil {
			t.Fatalf("a restored session's state does not restore: %v", err)
		}
		if err := again.Save(&twice); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("a restored state saves other bytes")
		}
		_, _, _ = s.Prune(t.Context(), cloneList(script[len(script)-1]))
	})
}

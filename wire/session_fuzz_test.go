package wire

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// FuzzSession syncs arbitrary bodies into a session under half their
// tokens, then a history that continues them with events and a stream:
// nothing panics, a session never writes a body that breaks a rule the
// body given kept, its count is that of the body written, and a body
// synced twice comes back the same.
func FuzzSession(f *testing.F) {
	for _, c := range ruleCases {
		f.Add(uint8(dialectIndex(c.d)), []byte(c.body))
	}
	files, _ := filepath.Glob("../testdata/bodies/*.json")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(uint8(dialectIndex(Anthropic)), data)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		d := Dialects[int(k)%len(Dialects)]
		b, err := Read(data, d)
		if err != nil {
			return
		}
		before := b.Validate()
		cfg := SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: max(1, Tokens(b, nil)/2)}, Unannotated: Unannotated(k >> 7 & 1)}
		if k&0x40 != 0 {
			cfg.Config.Boundary = pruneguard.BoundaryRelaxed
		}
		if k&0x20 != 0 {
			cfg.Config.TextClass = pruneguard.Reconstructible
		}
		s, err := NewSession(cfg)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, out []byte, rep Report, base []RuleViolation) {
			ob, err := Read(out, d)
			if err != nil {
				t.Fatalf("%s: the session wrote a body it cannot read: %v", what, err)
			}
			if nv := NewViolations(base, ob.Validate()); len(nv) > 0 {
				t.Fatalf("%s: the body written breaks %v", what, nv)
			}
			if n := Tokens(ob, nil); n != rep.After {
				t.Fatalf("%s: report says %d tokens, the body has %d", what, rep.After, n)
			}
			if len(base) == 0 && len(b.facts) > 0 && len(ob.facts) == 0 {
				t.Fatalf("%s: the history was emptied", what)
			}
		}
		out, rep, err := s.Sync(data)
		var ie *pruneguard.InputError
		if errors.As(err, &ie) {
			return // the body's own ids or pairing refused by the Context
		}
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
		check("sync", out, rep, before)
		again, rep2, err := s.Sync(data)
		if err != nil || rep2.Reset || !bytes.Equal(again, out) {
			t.Fatalf("a second sync: reset %v, err %v, same %v", rep2.Reset, err, bytes.Equal(again, out))
		}
		// The history goes on with events and a stream closed; the
		// session then prunes it breaking no rule it kept.
		if _, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("and then?")}); err != nil {
			return
		}
		id, err := s.Open(pruneguard.RoleAssistant)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteText(id, "an answer"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(id); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("thanks")}); err != nil {
			t.Fatal(err)
		}
		var now bytes.Buffer
		if _, err := s.WriteTo(&now); err != nil {
			t.Fatal(err)
		}
		base, err := Validate(now.Bytes(), d)
		if err != nil {
			t.Fatalf("the session wrote a body it cannot read: %v", err)
		}
		out, rep, err = s.Request()
		if err != nil {
			return
		}
		check("events", out, rep, base)
	})
}

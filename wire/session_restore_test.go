package wire_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// savedFacts returns the state of a session that synced a history of n
// units of facts in dialect d, pruned, spilled and summarized, with the
// configuration it was saved with.
func savedFacts(t testing.TB, d wire.Dialect, n int) ([]byte, wire.SessionConfig) {
	t.Helper()
	body := []byte(factBody(d, n))
	bodies, _ := growingBodies(t, d, body)
	rb, err := wire.Read(body, d)
	must(t, err)
	total := wire.Tokens(rb, nil)
	cfg := twinConfig(d, total, &spill.Memory{})
	s, err := wire.NewSession(cfg)
	must(t, err)
	for _, b := range bodies {
		_, _, err := s.Sync(b)
		must(t, err)
	}
	var buf bytes.Buffer
	must(t, s.Save(&buf))
	return buf.Bytes(), cfg
}

// refusedState checks that state b is refused with a bad-state error and
// no session.
func refusedState(t *testing.T, what string, b []byte, cfg wire.SessionConfig) {
	t.Helper()
	s, err := wire.RestoreSession(bytes.NewReader(b), cfg)
	var ie *pruneguard.InputError
	if s != nil || !errors.Is(err, pruneguard.ErrBadState) || !errors.Is(err, pruneguard.ErrInvalidInput) || !errors.As(err, &ie) {
		t.Fatalf("%s: %v, %v", what, s, err)
	}
}

// TestRestoreSessionTruncatedOrCorrupt: every prefix of a saved session,
// and the state with bytes or numbers changed, is refused with
// ErrBadState, or (once sealed again, a change inside content may still
// be a valid state) restores to a session that saves the same state and
// renders a body. Under the race detector, or with -short, it takes a
// stride of the prefixes and fewer changes.
func TestRestoreSessionTruncatedOrCorrupt(t *testing.T) {
	small, scfg := savedFacts(t, wire.Anthropic, 6)
	large, lcfg := savedFacts(t, wire.OpenAIChat, 40)
	tries, stride := 400, 13
	if testing.Short() || raceEnabled {
		tries, stride = 40, 97
	}
	t.Logf("states of %d and %d bytes", len(small), len(large))
	for n := 0; n < len(small); n++ {
		refusedState(t, "prefix", small[:n], scfg)
	}
	for n := 0; n < len(large); n += stride {
		refusedState(t, "prefix", large[:n], lcfg)
	}
	r := rand.New(rand.NewPCG(3, 4))
	valid := 0
	check := func(bad []byte) {
		refusedState(t, "changed", bad, lcfg)
		s, err := wire.RestoreSession(bytes.NewReader(wire.ResealSession(bad)), lcfg)
		if err != nil {
			if s != nil || !errors.Is(err, pruneguard.ErrBadState) {
				t.Fatalf("resealed: %v, %v", s, err)
			}
			return
		}
		valid++
		var again, body bytes.Buffer
		must(t, s.Save(&again))
		if !bytes.Equal(again.Bytes(), wire.ResealSession(bad)) {
			t.Fatalf("a state restored saves another state")
		}
		_, err = s.WriteTo(&body)
		must(t, err)
	}
	for range tries {
		bad := bytes.Clone(large)
		bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		check(bad)
	}
	spots := regexp.MustCompile(`-?[0-9]+`).FindAllIndex(large, -1)
	for range tries {
		at := spots[r.IntN(len(spots))]
		v := []string{"-1", "0", "1", "2", "7", "255", "65536", "2147483648"}[r.IntN(8)]
		bad := append(append(bytes.Clone(large[:at[0]]), v...), large[at[1]:]...)
		if !bytes.Equal(bad, large) {
			check(bad)
		}
	}
	t.Logf("%d of %d changed states, sealed again, were still sound", valid, 2*tries)
}

// TestRestoreSessionRefuses: a state of another dialect than the
// configuration's, of another format or version, or with unknown
// members, is refused as bad state; a configuration NewSession refuses is
// refused with ErrSessionConfig.
func TestRestoreSessionRefuses(t *testing.T) {
	b, cfg := savedFacts(t, wire.Bedrock, 4)
	other := cfg
	other.Dialect = wire.Gemini
	refusedState(t, "other dialect", b, other)
	for _, edit := range [][2]string{
		{`"version":1`, `"version":2`},
		{`"format":"pruneguard.session"`, `"format":"pruneguard.context"`},
		{`"dialect":"bedrock"`, `"dialect":"bedrock","extra":1`},
		{`"journal":[`, `"journal":[{"op":"nothing"},`},
	} {
		bad := bytes.Replace(b, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("%s not in the state", edit[0])
		}
		refusedState(t, edit[1], wire.ResealSession(bad), cfg)
	}
	bad := cfg
	bad.Guard.Budget = 0
	if _, err := wire.RestoreSession(bytes.NewReader(b), bad); !errors.Is(err, wire.ErrSessionConfig) {
		t.Fatalf("a config without budget: %v", err)
	}
	empty := cfg
	empty.Dialect = ""
	s, err := wire.RestoreSession(bytes.NewReader(b), empty)
	must(t, err)
	if s.Dialect() != wire.Bedrock {
		t.Fatalf("dialect %s, want the state's", s.Dialect())
	}
}

// FuzzRestoreSession: any state that restores saves back to the same
// bytes, and what does not restore is refused as bad state.
func FuzzRestoreSession(f *testing.F) {
	for _, d := range wire.Dialects {
		b, _ := savedFacts(f, d, 1)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := wire.SessionConfig{Guard: pruneguard.Guard{Budget: 400, Summarizer: pruneguard.Digest{}}, Trigger: 533,
			Spiller: &spill.Spiller{Store: &spill.Memory{}}}
		for _, in := range [][]byte{b, wire.ResealSession(b)} {
			s, err := wire.RestoreSession(bytes.NewReader(in), cfg)
			if err != nil {
				if s != nil || !errors.Is(err, pruneguard.ErrBadState) {
					t.Fatalf("%v, %v", s, err)
				}
				continue
			}
			var again bytes.Buffer
			must(t, s.Save(&again))
			if !bytes.Equal(again.Bytes(), bytes.TrimRight(in, " \t\r\n")) {
				t.Fatalf("restored, saves another state")
			}
		}
	})
}

package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard/sessions"
)

func roundTrip(ctx context.Context, s sessions.Store, k *ids) error {
	id := k.id("a")
	v1, err := save(ctx, s, id, []byte(`{"turn":1,"messages":["hello"]}`), sessions.Absent)
	if err != nil {
		return err
	}
	v2, err := save(ctx, s, id, []byte(`{"turn":2,"messages":["hello","world"]}`), v1)
	if err != nil {
		return err
	}
	other := k.id("b")
	if _, err := save(ctx, s, other, []byte("another session"), sessions.Absent); err != nil {
		return err
	}
	_, err = save(ctx, s, id, []byte(`{"turn":3}`), v2)
	return err
}

func emptyAndBinary(ctx context.Context, s sessions.Store, k *ids) error {
	all := make([]byte, 0, 512)
	for i := range 256 {
		all = append(all, byte(i), byte(255-i))
	}
	var errs []error
	for name, state := range map[string][]byte{
		"bytes":        all,
		"invalid-utf8": []byte("\xff\xfe\x00ok\xc3\x28\x00"),
		"nul":          {0},
		"crlf":         []byte("a\r\nb\r\n\n"),
	} {
		_, err := save(ctx, s, k.id(name), state, sessions.Absent)
		errs = append(errs, err)
	}
	id := k.id("empty")
	v, err := s.Save(ctx, id, nil, sessions.Absent)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("Save(%q, nil, Absent): %w", id, err))...)
	}
	errs = append(errs, wantEmpty(ctx, s, id, v))
	if v, err = save(ctx, s, id, []byte("not empty"), v); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if v, err = s.Save(ctx, id, []byte{}, v); err != nil {
		return errors.Join(append(errs, fmt.Errorf("Save(%q, empty, %d): %w", id, v, err))...)
	}
	return errors.Join(append(errs, wantEmpty(ctx, s, id, v))...)
}

// wantEmpty checks that id holds empty state at version v.
func wantEmpty(ctx context.Context, s sessions.Store, id string, v sessions.Version) error {
	got, gv, err := s.Load(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("Load(%q) of empty state: %w", id, err)
	case gv != v:
		return fmt.Errorf("Load(%q) = version %d, want %d", id, gv, v)
	case len(got) != 0:
		return fmt.Errorf("Load(%q) = %s, want empty state", id, describe(got))
	}
	return nil
}

func largeState(ctx context.Context, s sessions.Store, k *ids) error {
	b := make([]byte, LargeSize)
	rand.Read(b)
	id := k.id("large")
	v, err := save(ctx, s, id, b, sessions.Absent)
	if err != nil {
		return err
	}
	b[LargeSize/2]++
	b = append(b, "one more turn"...)
	_, err = save(ctx, s, id, b, v)
	return err
}

func notFound(ctx context.Context, s sessions.Store, k *ids) error {
	id := k.id("missing")
	got, v, err := s.Load(ctx, id)
	if err == nil {
		return fmt.Errorf("Load(%q) of an id never saved = %s, version %d, want an error", id, describe(got), v)
	}
	return identified("Load", id, err, sessions.ErrNotFound)
}

func createTwice(ctx context.Context, s sessions.Store, k *ids) error {
	id := k.id("once")
	first := []byte("created first")
	v, err := save(ctx, s, id, first, sessions.Absent)
	if err != nil {
		return err
	}
	_, err = s.Save(ctx, id, []byte("created again"), sessions.Absent)
	_, err2 := s.Save(ctx, id, first, sessions.Absent)
	return errors.Join(
		conflict("second Save with Absent", id, err, sessions.Absent, v),
		conflict("Save of the same state with Absent", id, err2, sessions.Absent, v),
		want(ctx, s, id, first, v),
	)
}

func staleVersion(ctx context.Context, s sessions.Store, k *ids) error {
	id := k.id("stale")
	v1, err := save(ctx, s, id, []byte("one"), sessions.Absent)
	if err != nil {
		return err
	}
	v2, err := save(ctx, s, id, []byte("two"), v1)
	if err != nil {
		return err
	}
	_, stale := s.Save(ctx, id, []byte("from a stale replica"), v1)
	_, madeUp := s.Save(ctx, id, []byte("from a confused replica"), v2+1000)
	missing := k.id("never-created")
	_, onMissing := s.Save(ctx, missing, []byte("expecting a session"), v2)
	_, _, loadErr := s.Load(ctx, missing)
	return errors.Join(
		conflict("Save with the version before last", id, stale, v1, v2),
		conflict("Save with a version never returned", id, madeUp, v2+1000, v2),
		want(ctx, s, id, []byte("two"), v2),
		conflict("Save with a version to a missing session", missing, onMissing, v2, sessions.Absent),
		identified("Load after a refused Save to a missing session", missing, loadErr, sessions.ErrNotFound),
	)
}

func copies(ctx context.Context, s sessions.Store, k *ids) error {
	var errs []error
	orig := []byte("saved once, then changed by the caller")
	b := bytes.Clone(orig)
	id := k.id("copy")
	v, err := s.Save(ctx, id, b, sessions.Absent)
	if err != nil {
		return fmt.Errorf("Save(%q): %w", id, err)
	}
	b[0] = 'X'
	if err := want(ctx, s, id, orig, v); err != nil {
		errs = append(errs, fmt.Errorf("after changing the slice given to Save: %w", err))
	}
	got, _, err := s.Load(ctx, id)
	if err == nil && len(got) > 0 {
		got[0] = 'Y'
		if err := want(ctx, s, id, orig, v); err != nil {
			errs = append(errs, fmt.Errorf("after changing the slice Load returned: %w", err))
		}
	}
	return errors.Join(errs...)
}

// firstVersions checks that first versions differ, as they do when they
// are random: a store that numbers every session from 1 fails it.
func firstVersions(ctx context.Context, s sessions.Store, k *ids) error {
	seen := map[sessions.Version]string{}
	for i := range 16 {
		id := k.id(fmt.Sprintf("first%d", i))
		v, err := s.Save(ctx, id, []byte("first"), sessions.Absent)
		if err != nil {
			return fmt.Errorf("Save(%q): %w", id, err)
		}
		if other, ok := seen[v]; ok {
			return fmt.Errorf("Save(%q) and Save(%q) both created version %d; first versions must be random", other, id, v)
		}
		seen[v] = id
	}
	return nil
}

func tenants(ctx context.Context, s sessions.Store, k *ids) error {
	// Pairs that a careless join of tenant and session would confuse.
	pairs := [][2]string{
		{"acme", "s1"}, {"globex", "s1"}, {"acme_", "_s1"}, {"acme", "_s1"},
		{"acme__s1", ""}, {"", "acme__s1"}, {"ACME", "s1"}, {"acme/s1", ""},
		{"acme", "s1\x00"}, {"a", "cme__s1"},
	}
	prefix := k.id("")
	var errs []error
	versions := make([]sessions.Version, len(pairs))
	for i, p := range pairs {
		id := sessions.ID(prefix+p[0], p[1])
		v, err := save(ctx, s, id, []byte(fmt.Sprintf("tenant %q session %q", p[0], p[1])), sessions.Absent)
		if err != nil {
			errs = append(errs, fmt.Errorf("tenant %q, session %q: %w", p[0], p[1], err))
		}
		versions[i] = v
	}
	for i, p := range pairs {
		id := sessions.ID(prefix+p[0], p[1])
		if err := want(ctx, s, id, []byte(fmt.Sprintf("tenant %q session %q", p[0], p[1])), versions[i]); err != nil {
			errs = append(errs, fmt.Errorf("tenant %q, session %q, after saving the others: %w", p[0], p[1], err))
		}
	}
	return errors.Join(errs...)
}

func badIDs(ctx context.Context, s sessions.Store, k *ids) error {
	bad := []string{
		"", ".", "..", "a/b", "../x", "/abs", `a\b`, "a b", "a:b", "a.b",
		"Upper", "ü", "a\x00b", "a\nb", "*", "%2e%2e",
		strings.Repeat("k", sessions.MaxIDLen+1),
		k.id("") + strings.Repeat("x", sessions.MaxIDLen),
	}
	var errs []error
	for _, id := range bad {
		_, err := s.Save(ctx, id, []byte("x"), sessions.Absent)
		errs = append(errs, identified("Save", id, err, sessions.ErrBadID))
		_, _, err = s.Load(ctx, id)
		errs = append(errs, identified("Load", id, err, sessions.ErrBadID))
		if d, ok := s.(sessions.Deleter); ok {
			errs = append(errs, identified("Delete", id, d.Delete(ctx, id, 1), sessions.ErrBadID))
		}
		if t, ok := s.(sessions.Toucher); ok {
			errs = append(errs, identified("Touch", id, t.Touch(ctx, id), sessions.ErrBadID))
		}
	}
	return errors.Join(errs...)
}

func validIDs(ctx context.Context, s sessions.Store, k *ids) error {
	long := k.id("")
	long += strings.Repeat("z", sessions.MaxIDLen-len(long))
	hashed := sessions.ID(strings.Repeat("T", 100), k.id("long"))
	var errs []error
	for _, c := range []struct{ id, state string }{
		{long, "longest id"},
		{k.id("-_0123456789abcdefghijklmnopqrstuvwxyz"), "every character"},
		{k.id("_-"), "punctuation"},
		{hashed, "an id ID hashed"},
	} {
		_, err := save(ctx, s, c.id, []byte(c.state), sessions.Absent)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

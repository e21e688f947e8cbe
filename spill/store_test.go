package spill_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/spill/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) spill.Store { return &spill.Memory{} })
	require.NoError(t, storetest.TestStore(func() (spill.Store, error) { return &spill.Memory{}, nil }))
}

func TestDirConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) spill.Store { return spill.Dir(t.TempDir()) })
	dir := t.TempDir()
	// One directory for every check: keys of different checks never meet.
	require.NoError(t, storetest.TestStore(func() (spill.Store, error) { return spill.Dir(dir), nil }))
}

// lossy acknowledges every Put and stores nothing.
type lossy struct{ spill.Memory }

func (*lossy) Put(context.Context, string, []byte) error { return nil }

// garbling returns other bytes than were put, once content is longer
// than a few bytes.
type garbling struct{ spill.Memory }

func (g *garbling) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := g.Memory.Get(ctx, key)
	if len(b) > 4 {
		b[len(b)/2] ^= 1
	}
	return b, err
}

// overwriting replaces content under a used key.
type overwriting struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (o *overwriting) Put(_ context.Context, key string, b []byte) error {
	if !spill.ValidKey(key) {
		return &spill.KeyError{Op: "put", Key: key, Err: spill.ErrBadKey}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string][]byte{}
	}
	o.m[key] = bytes.Clone(b)
	return nil
}

func (o *overwriting) Get(_ context.Context, key string) ([]byte, error) {
	if !spill.ValidKey(key) {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: spill.ErrBadKey}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.m[key]
	if !ok {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: spill.ErrNotFound}
	}
	return bytes.Clone(b), nil
}

// sharing returns the stored slice itself, and keeps the caller's.
type sharing struct{ overwriting }

func (s *sharing) Put(ctx context.Context, key string, b []byte) error {
	if _, err := s.overwriting.Get(ctx, key); err == nil {
		return &spill.KeyError{Op: "put", Key: key, Err: spill.ErrKeyExists}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = b
	return nil
}

func (s *sharing) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[key]; ok {
		return b, nil
	}
	return nil, errors.New("no such key") // untyped, and bad keys pass
}

// unsorted lists its keys backwards.
type unsorted struct{ spill.Memory }

func (u *unsorted) List(ctx context.Context, prefix string) ([]string, error) {
	keys, err := u.Memory.List(ctx, prefix)
	slices.Reverse(keys)
	return keys, err
}

// undead touches keys that hold nothing, and ignores its context.
type undead struct{ spill.Memory }

func (*undead) Touch(context.Context, string) error { return nil }

func TestSuiteCatchesBrokenStores(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func() spill.Store
		fails []string // checks that must be reported
		pass  []string // checks that must not be
	}{
		{"loses writes", func() spill.Store { return &lossy{} },
			[]string{"round trip", "empty content", "large content", "binary content", "key reuse", "concurrent use", "copies", "valid keys", "bad keys"},
			[]string{"not found"}},
		{"returns other bytes", func() spill.Store { return &garbling{} },
			[]string{"round trip", "large content", "binary content", "concurrent use", "copies"},
			[]string{"empty content", "not found", "bad keys"}},
		{"overwrites keys", func() spill.Store { return &overwriting{} },
			[]string{"key reuse", "concurrent puts to one key"},
			[]string{"round trip", "large content", "binary content", "not found", "copies", "bad keys", "valid keys"}},
		{"lists out of order", func() spill.Store { return &unsorted{} },
			[]string{"list"},
			[]string{"round trip", "namespaces", "touch"}},
		{"touches missing keys", func() spill.Store { return &undead{} },
			[]string{"touch"},
			[]string{"round trip", "namespaces", "list"}},
		{"shares slices, untyped errors", func() spill.Store { return &sharing{} },
			[]string{"copies", "not found", "bad keys"},
			[]string{"round trip", "key reuse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := storetest.TestStore(func() (spill.Store, error) { return tc.store(), nil })
			require.Error(t, err)
			msg := err.Error()
			for _, name := range tc.fails {
				assert.Contains(t, msg, "storetest: "+name, "the suite must report %q", name)
			}
			for _, name := range tc.pass {
				assert.NotContains(t, msg, "storetest: "+name, "the suite must not report %q", name)
			}
			// Every failure is on a line of its own, not only the first.
			assert.GreaterOrEqual(t, strings.Count(msg, "\n")+1, len(tc.fails))
		})
	}
}

func TestSuiteStopsOnNewStoreError(t *testing.T) {
	boom := errors.New("cannot connect")
	err := storetest.TestStore(func() (spill.Store, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
}

func TestMemoryDeleteKeepsKeyUsed(t *testing.T) {
	ctx := t.Context()
	var m spill.Memory
	require.NoError(t, m.Put(ctx, "k", []byte("v")))
	m.Delete("k")
	_, err := m.Get(ctx, "k")
	assert.ErrorIs(t, err, spill.ErrNotFound)
	assert.ErrorIs(t, m.Put(ctx, "k", []byte("w")), spill.ErrKeyExists, "a deleted key is never reused")
	m.Delete("never-put")
	require.NoError(t, m.Put(ctx, "never-put", nil), "deleting an unused key does not use it")
}

func TestValidKey(t *testing.T) {
	for _, k := range []string{"a", "seg-0f6e1c2a", "_", "-", strings.Repeat("9", spill.MaxKeyLen)} {
		assert.True(t, spill.ValidKey(k), k)
	}
	for _, k := range []string{"", "A", "a.b", "a/b", "é", strings.Repeat("9", spill.MaxKeyLen+1)} {
		assert.False(t, spill.ValidKey(k), k)
	}
}

func TestKeyError(t *testing.T) {
	err := &spill.KeyError{Op: "get", Key: "k1", Err: spill.ErrNotFound}
	assert.Equal(t, `spill: get "k1": not found`, err.Error())
	assert.ErrorIs(t, err, spill.ErrNotFound)
}

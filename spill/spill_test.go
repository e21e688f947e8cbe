package spill_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

func nonceContext(t *testing.T, r pruneguard.Resolver) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(pruneguard.Config{Resolver: r})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "pay"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r1", Tokens: 50, Content: []byte(`{"nonce":"8f3a"}`),
		Answers: []pruneguard.CallID{"k1"}, Facts: pruneguard.OneTimeSecret}))
	return c
}

func TestSpillThenEvict(t *testing.T) {
	for name, store := range map[string]spill.Store{"memory": &spill.Memory{}, "dir": spill.Dir(t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			s := &spill.Spiller{Store: store, Name: "scratch"}
			c := nonceContext(t, s)
			_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
			require.ErrorIs(t, err, pruneguard.ErrRegen, "not spilled yet")

			p, err := s.Spill(c, "r1")
			require.NoError(t, err)
			assert.Equal(t, "scratch", p.Store)
			assert.True(t, s.Resolvable(p))
			m, _ := c.Message("r1")
			assert.Equal(t, p, m.Pointer)

			d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
			require.NoError(t, err)
			assert.Equal(t, []pruneguard.SpillNote{{Message: "r1", Pointer: p}}, d.Pointers)
			require.NoError(t, c.Apply(d))

			back, err := s.Rehydrate(p)
			require.NoError(t, err)
			assert.Equal(t, `{"nonce":"8f3a"}`, string(back))
		})
	}
}

func TestForgottenPointerHoldsTheMessage(t *testing.T) {
	s := &spill.Spiller{Store: &spill.Memory{}}
	c := nonceContext(t, s)
	p, err := s.Spill(c, "r1")
	require.NoError(t, err)
	assert.Equal(t, "spill", p.Store)
	s.Forget(p)
	assert.False(t, s.Resolvable(p))
	_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	assert.ErrorIs(t, err, pruneguard.ErrRegen)
	_, err = s.Rehydrate(p)
	assert.ErrorIs(t, err, spill.ErrNotFound)
	assert.False(t, s.Resolvable(pruneguard.Pointer{Store: "other", Key: p.Key}))
}

type brokenStore struct{ put, get error }

func (b brokenStore) Put(string, []byte) error   { return b.put }
func (b brokenStore) Get(string) ([]byte, error) { return []byte("other"), b.get }

func TestSpillFailures(t *testing.T) {
	c := nonceContext(t, nil)
	_, err := (&spill.Spiller{Store: &spill.Memory{}}).Spill(c, "nope")
	assert.ErrorIs(t, err, pruneguard.ErrUnknownMessage)

	boom := errors.New("disk full")
	_, err = (&spill.Spiller{Store: brokenStore{put: boom}}).Spill(c, "r1")
	assert.ErrorIs(t, err, boom)
	_, err = (&spill.Spiller{Store: brokenStore{get: boom}}).Spill(c, "r1")
	assert.ErrorIs(t, err, boom)
	_, err = (&spill.Spiller{Store: brokenStore{}}).Spill(c, "r1")
	assert.ErrorContains(t, err, "differs")
	m, _ := c.Message("r1")
	assert.True(t, m.Pointer.IsZero(), "a failed spill records no pointer")
}

func TestDirKeys(t *testing.T) {
	d := spill.Dir(t.TempDir())
	for _, bad := range []string{"", ".", "..", "a/b", "../x"} {
		assert.Error(t, d.Put(bad, nil), bad)
		_, err := d.Get(bad)
		assert.Error(t, err, bad)
	}
	_, err := d.Get("missing")
	assert.ErrorIs(t, err, spill.ErrNotFound)
	require.NoError(t, d.Put("k", []byte("v")))
	b, err := os.ReadFile(filepath.Join(string(d), "k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(b))
	entries, _ := os.ReadDir(string(d))
	assert.Len(t, entries, 1, "no temporary file left behind")
}

func TestMemoryDelete(t *testing.T) {
	var m spill.Memory
	_, err := m.Get("k")
	assert.ErrorIs(t, err, spill.ErrNotFound)
	require.NoError(t, m.Put("k", []byte("v")))
	m.Delete("k")
	_, err = m.Get("k")
	assert.ErrorIs(t, err, spill.ErrNotFound)
}

// Spill a one-time nonce before evicting it: the regenerability gate
// lets an irreducible message go once its pointer resolves.
func ExampleSpiller() {
	s := &spill.Spiller{Store: &spill.Memory{}, Name: "scratch"}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: s})
	c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "pay"}}})
	c.Append(pruneguard.Message{ID: "r1", Content: []byte("nonce=8f3a"), Answers: []pruneguard.CallID{"k1"}, Facts: pruneguard.OneTimeSecret})

	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	fmt.Println("before spilling:", errors.Is(err, pruneguard.ErrRegen))

	p, _ := s.Spill(c, "r1")
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	fmt.Println("after spilling:", d.Evict, err)
	c.Apply(d)
	back, _ := s.Rehydrate(p)
	fmt.Println("rehydrated:", string(back))
	// Output:
	// before spilling: true
	// after spilling: [a1 r1] <nil>
	// rehydrated: nonce=8f3a
}

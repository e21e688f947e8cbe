package pruneguard_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// lockProbe is a spill.Store that notes, at each call, whether the lock
// of the Context it watches is held: the gates hold it while they ask
// the Resolver, which must answer from memory.
type lockProbe struct {
	spill.Memory

	mu            sync.Mutex
	c             *pruneguard.Context
	calls, locked int
}

func (p *lockProbe) watch(c *pruneguard.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c, p.calls, p.locked = c, 0, 0
}

func (p *lockProbe) note() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.c != nil && p.c.LockHeld() {
		p.locked++
	}
}

func (p *lockProbe) counts() (calls, locked int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, p.locked
}

func (p *lockProbe) Put(ctx context.Context, key string, b []byte) error {
	p.note()
	return p.Memory.Put(ctx, key, b)
}

func (p *lockProbe) Get(ctx context.Context, key string) ([]byte, error) {
	p.note()
	return p.Memory.Get(ctx, key)
}

// earlierPointers spills the units of r0 and r1 with a Spiller of
// store, as an earlier process would, and returns their pointers.
func earlierPointers(t *testing.T, store spill.Store) (p0, p1 pruneguard.Pointer) {
	t.Helper()
	earlier := &spill.Spiller{Store: store}
	c := postContext(t, pruneguard.Config{Resolver: earlier}, 100, 200)
	p0, err := earlier.Spill(t.Context(), c, "a0", "r0")
	require.NoError(t, err)
	p1, err = earlier.Spill(t.Context(), c, "a1", "r1")
	require.NoError(t, err)
	return p0, p1
}

// withPointers is postContext with the units of r0 and r1 behind p0 and
// p1.
func withPointers(t *testing.T, cfg pruneguard.Config, p0, p1 pruneguard.Pointer) *pruneguard.Context {
	t.Helper()
	c := postContext(t, cfg, 100, 200, 300)
	for id, p := range map[pruneguard.MessageID]pruneguard.Pointer{"a0": p0, "r0": p0, "a1": p1, "r1": p1} {
		require.NoError(t, c.Spill(id, p))
	}
	return c
}

// Prune and Apply ask the Resolver while they hold the Context's lock:
// a spill.Spiller answers from memory, so a pointer it has not verified
// counts for nothing and the store is not read; a guard check spills
// with the lock released.
func TestNoStoreIOUnderTheContextLock(t *testing.T) {
	ctx := t.Context()
	probe := &lockProbe{}
	p0, p1 := earlierPointers(t, probe)
	fresh := &spill.Spiller{Store: probe}
	c := withPointers(t, pruneguard.Config{Resolver: fresh}, p0, p1)
	probe.watch(c)

	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r0"}})
	calls, locked := probe.counts()
	assert.Zero(t, locked, "the prune read the store under the lock")
	assert.Zero(t, calls, "the prune read the store")
	require.ErrorIs(t, err, pruneguard.ErrRegen, "a pointer not verified does not resolve")

	require.NoError(t, fresh.Verify(ctx, p0))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r0"}})
	require.NoError(t, err, "a verified pointer resolves")
	require.NoError(t, c.Apply(d))
	calls, locked = probe.counts()
	assert.Equal(t, 1, calls, "Verify's read, and no other")
	assert.Zero(t, locked, "Verify read the store under the lock")

	res, err := pruneguard.Guard{Budget: 200, Spill: fresh}.CheckContext(ctx, c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Spills, "the guard spilled")
	calls, locked = probe.counts()
	assert.Greater(t, calls, 1, "the spills wrote and read back")
	assert.Zero(t, locked, "the guard spilled under the lock")
}

// RestoreContext verifies the pointers of a saved state before it
// returns the Context, so the prunes after resolve them from memory.
func TestRestoreVerifiesBeforeTheLock(t *testing.T) {
	probe := &lockProbe{}
	p0, p1 := earlierPointers(t, probe)
	var state bytes.Buffer
	require.NoError(t, withPointers(t, pruneguard.Config{}, p0, p1).Save(&state))

	probe.watch(nil)
	fresh := &spill.Spiller{Store: probe}
	c, err := pruneguard.RestoreContext(t.Context(), &state, pruneguard.Config{Resolver: fresh})
	require.NoError(t, err)
	calls, _ := probe.counts()
	assert.Equal(t, 2, calls, "one read for each segment")

	probe.watch(c)
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r0", "r1"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"a0", "r0", "a1", "r1"}, d.Evict)
	require.NoError(t, c.Apply(d))
	calls, locked := probe.counts()
	assert.Zero(t, calls, "the prune read the store")
	assert.Zero(t, locked)
}

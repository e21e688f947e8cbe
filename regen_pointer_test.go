package pruneguard_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// The lifetime of a spill pointer: it holds only content that is final,
// and it must still resolve when the decision that relies on it is
// applied.

func TestSpillRefusesAStreamingMessage(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Resolver: yes})
	mustDo(t, c.Open(pruneguard.Message{ID: "s", Role: pruneguard.RoleAssistant, Content: []byte("half")}))
	err := c.Spill("s", somewhere)
	assert.ErrorIs(t, err, pruneguard.ErrOpenMessage)
	assert.ErrorIs(t, err, pruneguard.ErrInvalidInput)
	var ie *pruneguard.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "spill", ie.Op)
	assert.Equal(t, "s", ie.ID)
	assert.ErrorIs(t, c.Spill("s", pruneguard.Pointer{}), pruneguard.ErrOpenMessage)
	m, _ := c.Message("s")
	assert.True(t, m.Pointer.IsZero(), "nothing recorded")

	// The stream goes on; once closed, its content is final and may be
	// spilled.
	mustDo(t, c.Write("s", []byte(" and the rest"), 5), c.Close("s"))
	require.NoError(t, c.Spill("s", somewhere))
	m, _ = c.Message("s")
	assert.Equal(t, somewhere, m.Pointer)
	assert.Equal(t, "half and the rest", string(m.Content))
	// Closed, it takes no more chunks: the spilled content stays what it is.
	assert.ErrorIs(t, c.Write("s", []byte("more"), 1), pruneguard.ErrClosedMessage)
	assert.ErrorIs(t, c.Close("s"), pruneguard.ErrClosedMessage)
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"s"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.SpillNote{{Message: "s", Pointer: somewhere}}, d.Pointers)
}

func TestOpenRefusesAPointer(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	err := c.Open(pruneguard.Message{ID: "s", Pointer: somewhere})
	assert.ErrorIs(t, err, pruneguard.ErrOpenMessage)
	var ie *pruneguard.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "open", ie.Op)
	assert.Equal(t, 0, c.Len())
	require.NoError(t, c.Append(pruneguard.Message{ID: "s", Pointer: somewhere}), "a closed message may carry one")
}

// spilledContext: text spilled behind p, an irreducible payment and its
// result spilled behind p, then a reconstructible read (made after the
// payment, so not stale) that carries the pointer too; the resolver
// answers what live says.
func spilledContext(t *testing.T, live *atomic.Bool) *pruneguard.Context {
	t.Helper()
	p := pruneguard.Pointer{Store: "scratch", Key: "seg-1"}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: pruneguard.ResolverFunc(func(q pruneguard.Pointer) bool {
		return q == p && live.Load()
	})})
	mustDo(t,
		c.RegisterTool(pruneguard.Tool{Name: "pay"}),
		c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}),
	)
	mustDo(t,
		c.Append(pruneguard.Message{ID: "note", Content: []byte("the user's constraint"), Tokens: 50, Pointer: p}),
		c.Append(pruneguard.Message{ID: "a2", Calls: []pruneguard.Call{{ID: "k2", Tool: "pay"}}, Pointer: p}),
		c.Append(pruneguard.Message{ID: "r2", Tokens: 300, Answers: []pruneguard.CallID{"k2"}, Pointer: p}),
		c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "read_file"}}, Pointer: p}),
		c.Append(pruneguard.Message{ID: "r1", Tokens: 300, Answers: []pruneguard.CallID{"k1"}, Pointer: p}),
	)
	modelRead(t, c, "seen")
	return c
}

// A resolver that stops resolving between Prune and Apply: Apply refuses,
// naming the messages whose going relied on the pointer, and changes
// nothing.
func TestApplyReasksTheResolver(t *testing.T) {
	var live atomic.Bool
	live.Store(true)
	c := spilledContext(t, &live)
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"note", "a1", "a2"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"note", "a2", "r2", "a1", "r1"}, d.Evict)

	live.Store(false) // the store lost the segment
	before := c.Messages()
	err = c.Apply(d)
	assert.ErrorIs(t, err, pruneguard.ErrStaleDecision)
	var se *pruneguard.StaleError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []pruneguard.MessageID{"note", "a2", "r2"}, se.Messages, "a1 and r1 are reconstructible: their pointer is not relied on")
	assert.Contains(t, err.Error(), "messages note,a2,r2")
	assert.Equal(t, before, c.Messages(), "nothing changed")

	// With the pointer back the same decision holds again; applied, it is
	// spent.
	live.Store(true)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 1, c.Len(), "only the model's answer, pinned, stays")
	assert.ErrorIs(t, c.Apply(d), pruneguard.ErrForeignDecision)
}

// Only the pointers a decision relies on are asked about again: content
// that is reconstructible goes, whatever its pointer does.
func TestApplyIgnoresPointersNotReliedOn(t *testing.T) {
	var live atomic.Bool
	live.Store(true)
	c := spilledContext(t, &live)
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a1"}})
	require.NoError(t, err)
	live.Store(false)
	require.NoError(t, c.Apply(d))
	_, ok := c.Message("r1")
	assert.False(t, ok)
}

// A stubbed result loses its content as an evicted one does: the pointer
// it relies on is asked about again.
func TestApplyReasksForStubs(t *testing.T) {
	var live atomic.Bool
	live.Store(true)
	c := spilledContext(t, &live)
	d, err := c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r2"}})
	require.NoError(t, err)
	live.Store(false)
	var se *pruneguard.StaleError
	require.ErrorAs(t, c.Apply(d), &se)
	assert.Equal(t, []pruneguard.MessageID{"r2"}, se.Messages)
	m, _ := c.Message("r2")
	assert.Equal(t, 300, m.Tokens, "not stubbed")
}

// The race: the resolver changes its mind from another goroutine while
// decisions are made and applied. An Apply that succeeds found every
// pointer it relied on resolving at that moment; one that refuses changes
// nothing.
func TestApplyRaceWithAFlippingResolver(t *testing.T) {
	var live atomic.Bool
	var mu sync.Mutex // held while the resolver's answer must not change
	p := pruneguard.Pointer{Store: "scratch", Key: "seg"}
	var asked atomic.Int64
	resolver := pruneguard.ResolverFunc(func(q pruneguard.Pointer) bool {
		asked.Add(1)
		return q == p && live.Load()
	})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			mu.Lock()
			live.Store(!live.Load())
			mu.Unlock()
		}
	}()
	applied, refused := 0, 0
	for i := 0; i < 300; i++ {
		c := pruneguard.NewContext(pruneguard.Config{Resolver: resolver})
		mustDo(t, c.Append(pruneguard.Message{ID: "secret", Facts: pruneguard.OneTimeSecret, Pointer: p}))
		modelRead(t, c, "seen")
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"secret"}})
		if err != nil {
			assert.ErrorIs(t, err, pruneguard.ErrRegen)
			continue
		}
		runtime.Gosched() // let the resolver change its mind
		mu.Lock()         // freeze the answer for Apply and the check after it
		now := live.Load()
		err = c.Apply(d)
		mu.Unlock()
		_, kept := c.Message("secret")
		if err == nil {
			applied++
			assert.True(t, now, "applied while the pointer did not resolve")
			assert.False(t, kept)
		} else {
			refused++
			assert.False(t, now)
			assert.ErrorIs(t, err, pruneguard.ErrStaleDecision)
			assert.True(t, kept)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("applied %d, refused %d, resolver asked %d times", applied, refused, asked.Load())
	assert.Positive(t, asked.Load())
}

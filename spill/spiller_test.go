package spill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// counting counts the calls a Store gets and the keys it was given.
type counting struct {
	spill.Store
	puts, gets atomic.Int64
	mu         sync.Mutex
	keys       []string
}

func (c *counting) Put(ctx context.Context, key string, b []byte) error {
	c.puts.Add(1)
	err := c.Store.Put(ctx, key, b)
	if err == nil {
		c.mu.Lock()
		c.keys = append(c.keys, key)
		c.mu.Unlock()
	}
	return err
}

func (c *counting) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func nonceContext(t *testing.T, r pruneguard.Resolver) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(pruneguard.Config{Resolver: r})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k1", Tool: "pay", Args: json.RawMessage(`{"amount": 5}`)}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 50, Content: []byte(`{"nonce":"8f3a"}`),
		Answers: []pruneguard.CallID{"k1"}, Facts: pruneguard.OneTimeSecret}))
	// The model has read the receipt and answered.
	require.NoError(t, c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("paid"), Pinned: true}))
	return c
}

func stores(t *testing.T) map[string]spill.Store {
	return map[string]spill.Store{"memory": &spill.Memory{}, "dir": spill.Dir(t.TempDir())}
}

func TestSpillThenEvict(t *testing.T) {
	ctx := t.Context()
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := &spill.Spiller{Store: store, Name: "scratch"}
			c := nonceContext(t, s)
			_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
			require.ErrorIs(t, err, pruneguard.ErrRegen, "not spilled yet")

			// The payment call is irreducible too: the unit is spilled whole.
			p, err := s.Spill(ctx, c, "a1", "r1")
			require.NoError(t, err)
			assert.Equal(t, "scratch", p.Store)
			assert.True(t, s.Resolvable(p))
			m, _ := c.Message("r1")
			assert.Equal(t, p, m.Pointer)

			d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
			require.NoError(t, err)
			assert.Equal(t, []pruneguard.SpillNote{{Message: "a1", Pointer: p}, {Message: "r1", Pointer: p}}, d.Pointers)
			require.NoError(t, c.Apply(d))

			back, err := s.Recall(ctx, p)
			require.NoError(t, err)
			require.Len(t, back, 2)
			assert.Equal(t, `{"nonce":"8f3a"}`, string(back[1].Content))
			assert.Equal(t, pruneguard.OneTimeSecret, back[1].Facts)
		})
	}
}

func TestSegmentSharesOnePointer(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: &spill.Memory{}}
	s := &spill.Spiller{Store: store}
	c := nonceContext(t, s)
	p, err := s.Spill(ctx, c, "a1", "r1", "a1")
	require.NoError(t, err)
	assert.Equal(t, int64(1), store.puts.Load(), "one spill, one Put")
	for _, id := range []pruneguard.MessageID{"a1", "r1"} {
		m, _ := c.Message(id)
		assert.Equal(t, p, m.Pointer, id)
	}
	ms, err := s.Recall(ctx, p)
	require.NoError(t, err)
	require.Len(t, ms, 2, "a repeated id is stored once")
	assert.Equal(t, pruneguard.MessageID("a1"), ms[0].ID)
	assert.Equal(t, `{"amount": 5}`, string(ms[0].Calls[0].Args))
	assert.Equal(t, pruneguard.MessageID("r1"), ms[1].ID)

	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.NoError(t, err)
	assert.Len(t, d.Pointers, 2)
}

func TestSpillMessagesManyToOneKey(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: &spill.Memory{}}
	s := &spill.Spiller{Store: store}
	ptrs := map[pruneguard.Pointer]bool{}
	for round := range 3 {
		var ms []pruneguard.Message
		for i := range 200 {
			ms = append(ms, pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("m", i)), Content: []byte(fmt.Sprint("content ", round, i))})
		}
		p, err := s.SpillMessages(ctx, ms)
		require.NoError(t, err)
		ptrs[p] = true
		back, err := s.Recall(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, ms, back)
	}
	assert.Len(t, ptrs, 3, "pointers grow with spills")
	assert.Len(t, store.keys, 3, "not with messages")
}

func TestSpillMessagesRoundTripsEveryField(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	ms := []pruneguard.Message{
		{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 12, Content: []byte("<b>&</b> \u2028 ok"),
			Calls:    []pruneguard.Call{{ID: "c1", Tool: "t", Args: json.RawMessage("{ \"x\" :\n 1 }")}, {ID: "c2", Tool: "u", Args: json.RawMessage("\xff\x00")}},
			Class:    pruneguard.Irreducible,
			Facts:    pruneguard.NegativeResult | pruneguard.UserConstraint | 1<<7,
			Pinned:   true,
			NeededBy: []pruneguard.StepID{"s1", "s2"}},
		{ID: "b", Role: "custom", Content: []byte{0, 1, 2, 0xff, 0xc3, 0x28}, Answers: []pruneguard.CallID{"c1", "c2"}, Class: pruneguard.Durable},
		{ID: "c", Class: pruneguard.Reconstructible, Facts: pruneguard.TransientState | pruneguard.OneTimeSecret},
	}
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	back, err := s.Recall(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, ms, back)
}

func TestSpillRefusesStreamingMessage(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: &spill.Memory{}}
	s := &spill.Spiller{Store: store}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: s})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "sh"}}}))
	require.NoError(t, c.Open(pruneguard.Message{ID: "r1", Answers: []pruneguard.CallID{"k1"}}))
	require.NoError(t, c.Write("r1", []byte("partial "), 2))

	_, err := s.Spill(ctx, c, "a1", "r1")
	require.ErrorIs(t, err, spill.ErrOpenMessage)
	var me *spill.MessageError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, pruneguard.MessageID("r1"), me.ID)
	assert.Zero(t, store.puts.Load(), "nothing stored")
	for _, id := range []pruneguard.MessageID{"a1", "r1"} {
		m, _ := c.Message(id)
		assert.True(t, m.Pointer.IsZero(), id)
	}

	require.NoError(t, c.Write("r1", []byte("rest"), 1))
	require.NoError(t, c.Close("r1"))
	p, err := s.Spill(ctx, c, "a1", "r1")
	require.NoError(t, err)
	ms, err := s.Recall(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "partial rest", string(ms[1].Content), "the whole content, once closed")
}

func TestZeroSpiller(t *testing.T) {
	ctx := t.Context()
	c := nonceContext(t, nil)
	before := c.Messages()
	p := pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-x"}
	for _, s := range []*spill.Spiller{{}, nil, {Name: "x"}} {
		_, err := s.Spill(ctx, c, "r1")
		assert.ErrorIs(t, err, spill.ErrNoStore)
		_, err = s.SpillMessages(ctx, []pruneguard.Message{{ID: "m"}})
		assert.ErrorIs(t, err, spill.ErrNoStore)
		_, err = s.Recall(ctx, p)
		assert.ErrorIs(t, err, spill.ErrNoStore)
		assert.ErrorIs(t, s.Verify(ctx, p), spill.ErrNoStore)
		_, err = s.HandleRecall(ctx, json.RawMessage(`{"key":"seg-x"}`))
		assert.ErrorIs(t, err, spill.ErrNoStore)
		assert.False(t, s.Resolvable(p))
		s.Forget(p)
	}
	assert.Equal(t, before, c.Messages(), "nothing changed")
}

func TestNothingToSpill(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	_, err := s.SpillMessages(ctx, nil)
	assert.ErrorIs(t, err, spill.ErrNothingToSpill)
	_, err = s.Spill(ctx, nonceContext(t, s))
	assert.ErrorIs(t, err, spill.ErrNothingToSpill)
}

func TestForgottenPointerHoldsTheMessage(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	c := nonceContext(t, s)
	p, err := s.Spill(ctx, c, "r1")
	require.NoError(t, err)
	assert.Equal(t, spill.DefaultName, p.Store)
	s.Forget(p)
	assert.False(t, s.Resolvable(p), "forgotten, though the store still holds it")
	_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	assert.ErrorIs(t, err, pruneguard.ErrRegen)
	_, err = s.Recall(ctx, p)
	assert.ErrorIs(t, err, spill.ErrNotFound)
	assert.False(t, s.Resolvable(pruneguard.Pointer{Store: "other", Key: p.Key}))
	_, err = s.Recall(ctx, pruneguard.Pointer{Store: "other", Key: p.Key})
	assert.ErrorIs(t, err, spill.ErrForeignPointer)
}

type brokenStore struct{ put, get error }

func (b brokenStore) Put(context.Context, string, []byte) error   { return b.put }
func (b brokenStore) Get(context.Context, string) ([]byte, error) { return []byte("other"), b.get }

func TestSpillFailures(t *testing.T) {
	ctx := t.Context()
	c := nonceContext(t, nil)
	_, err := (&spill.Spiller{Store: &spill.Memory{}}).Spill(ctx, c, "nope")
	assert.ErrorIs(t, err, pruneguard.ErrUnknownMessage)
	var me *spill.MessageError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, pruneguard.MessageID("nope"), me.ID)

	boom := errors.New("disk full")
	for _, tc := range []struct {
		store spill.Store
		want  error
	}{
		{brokenStore{put: boom}, boom},
		{brokenStore{get: boom}, boom},
		{brokenStore{}, spill.ErrCorrupt},
		// The key is used, and holds something else.
		{brokenStore{put: &spill.KeyError{Op: "put", Key: "k", Err: spill.ErrKeyExists}}, spill.ErrCorrupt},
	} {
		s := &spill.Spiller{Store: tc.store}
		p, err := s.Spill(ctx, c, "a1", "r1")
		assert.ErrorIs(t, err, tc.want)
		var ke *spill.KeyError
		assert.ErrorAs(t, err, &ke)
		assert.Zero(t, p)
		for _, m := range c.Messages() {
			assert.True(t, m.Pointer.IsZero(), "a failed spill records no pointer")
		}
	}
}

func TestPointerTakenBackWhenRecordingFails(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{}
	old := pruneguard.Pointer{Store: "elsewhere", Key: "k0"}
	// A store whose Put evicts y from the Context: recording its pointer
	// then fails, after x's was recorded.
	c2 := pruneguard.NewContext(pruneguard.Config{})
	require.NoError(t, c2.Append(pruneguard.Message{ID: "x", Content: []byte("x")}))
	require.NoError(t, c2.Append(pruneguard.Message{ID: "y", Content: []byte("y"), Class: pruneguard.Reconstructible}))
	require.NoError(t, c2.Append(pruneguard.Message{ID: "z", Role: pruneguard.RoleAssistant, Pinned: true})) // the model read x and y
	s.Store = putHook{Store: &spill.Memory{}, hook: func() {
		d, err := c2.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"y"}})
		require.NoError(t, err)
		require.NoError(t, c2.Apply(d))
	}}
	require.NoError(t, c2.Spill("x", old))
	p, err := s.Spill(ctx, c2, "x", "y")
	assert.ErrorIs(t, err, pruneguard.ErrUnknownMessage)
	assert.Zero(t, p)
	m, _ := c2.Message("x")
	assert.Equal(t, old, m.Pointer, "the earlier pointer is restored")
}

type putHook struct {
	spill.Store
	hook func()
}

func (h putHook) Put(ctx context.Context, key string, b []byte) error {
	err := h.Store.Put(ctx, key, b)
	h.hook()
	return err
}

func TestRestartResolvesEarlierPointers(t *testing.T) {
	ctx := t.Context()
	dir := spill.Dir(t.TempDir())
	first := &spill.Spiller{Store: dir, Name: "disk"}
	c := nonceContext(t, first)
	p, err := first.Spill(ctx, c, "a1", "r1")
	require.NoError(t, err)
	want, err := first.Recall(ctx, p)
	require.NoError(t, err)

	store := &counting{Store: dir}
	second := &spill.Spiller{Store: store, Name: "disk"}
	assert.False(t, second.Resolvable(p), "not verified yet")
	assert.Zero(t, store.gets.Load(), "Resolvable never reads the store")
	require.NoError(t, second.Verify(ctx, p), "a new process resolves what an earlier one wrote")
	assert.Equal(t, int64(1), store.gets.Load())
	assert.True(t, second.Resolvable(p))
	assert.Equal(t, int64(1), store.gets.Load(), "the answer is remembered")
	got, err := second.Recall(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	missing := pruneguard.Pointer{Store: "disk", Key: "seg-00000000-0000-4000-8000-000000000000"}
	assert.ErrorIs(t, second.Verify(ctx, missing), spill.ErrNotFound)
	gets := store.gets.Load()
	assert.ErrorIs(t, second.Verify(ctx, missing), spill.ErrNotFound)
	assert.Equal(t, gets, store.gets.Load(), "a missing segment is remembered too")
	assert.False(t, second.Resolvable(missing))
	bad := pruneguard.Pointer{Store: "disk", Key: "../etc/passwd"}
	assert.ErrorIs(t, second.Verify(ctx, bad), spill.ErrBadKey)
	assert.False(t, second.Resolvable(bad))
	other := &spill.Spiller{Store: dir}
	assert.ErrorIs(t, other.Verify(ctx, p), spill.ErrForeignPointer, "another store name")
	assert.False(t, other.Resolvable(p), "another store name")

	// A restored session: its messages carry the pointers, and the gate
	// lets them go on the new Spiller's word.
	restored := pruneguard.NewContext(pruneguard.Config{Resolver: second})
	require.NoError(t, restored.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "pay"}}, Pointer: p}))
	require.NoError(t, restored.Append(pruneguard.Message{ID: "r1", Content: []byte(`{"nonce":"8f3a"}`), Answers: []pruneguard.CallID{"k1"},
		Facts: pruneguard.OneTimeSecret, Pointer: p}))
	require.NoError(t, restored.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Pinned: true}))
	d, err := restored.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"a1", "r1"}, d.Evict)
	lacking := &spill.Spiller{Store: &spill.Memory{}, Name: "disk"}
	assert.ErrorIs(t, lacking.Verify(ctx, p), spill.ErrNotFound)
	elsewhere := pruneguard.NewContext(pruneguard.Config{Resolver: lacking})
	for _, m := range restored.Messages() {
		require.NoError(t, elsewhere.Append(m))
	}
	_, err = elsewhere.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.ErrorIs(t, err, pruneguard.ErrRegen, "a store that lacks the segment resolves nothing")

	// A new Spiller of the same store writes to keys of its own.
	c2 := nonceContext(t, second)
	p2, err := second.Spill(ctx, c2, "r1")
	require.NoError(t, err)
	assert.NotEqual(t, p.Key, p2.Key)
}

func TestDamagedSegmentsDoNotResolve(t *testing.T) {
	ctx := t.Context()
	mem := &spill.Memory{}
	s := &spill.Spiller{Store: mem}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Content: []byte("measurement taken once")}})
	require.NoError(t, err)
	good, err := mem.Get(ctx, p.Key)
	require.NoError(t, err)

	for name, damage := range map[string]func([]byte) []byte{
		"flipped content": func(b []byte) []byte { return bytesReplace(b, "taken once", "taken twice") },
		"truncated":       func(b []byte) []byte { return b[:len(b)/2] },
		"not json":        func([]byte) []byte { return []byte("hello") },
		"other format":    func(b []byte) []byte { return bytesReplace(b, "segment/2", "segment/9") },
		"wrong count":     func(b []byte) []byte { return bytesReplace(b, `"count":1`, `"count":2`) },
		"description":     func(b []byte) []byte { return bytesReplace(b, `"description":"1 message`, `"description":"2 message`) },
		"first layout":    func(b []byte) []byte { return bytesReplace(b, "segment/2", "segment/1") },
	} {
		t.Run(name, func(t *testing.T) {
			other := &spill.Memory{}
			require.NoError(t, other.Put(ctx, p.Key, damage(good)))
			fresh := &spill.Spiller{Store: other}
			assert.ErrorIs(t, fresh.Verify(ctx, p), spill.ErrCorrupt)
			assert.False(t, fresh.Resolvable(p))
			_, err := fresh.Recall(ctx, p)
			assert.ErrorIs(t, err, spill.ErrCorrupt)
		})
	}
	t.Run("under another key", func(t *testing.T) {
		other := &spill.Memory{}
		require.NoError(t, other.Put(ctx, "seg-moved", good))
		err := (&spill.Spiller{Store: other}).Verify(ctx, pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-moved"})
		assert.ErrorIs(t, err, spill.ErrCorrupt)
	})
	t.Run("lost after it was written", func(t *testing.T) {
		mem.Delete(p.Key)
		assert.True(t, s.Resolvable(p), "answered from memory")
		assert.ErrorIs(t, s.Verify(ctx, p), spill.ErrNotFound, "Verify reads the store")
		assert.False(t, s.Resolvable(p), "and the loss is remembered")
	})
}

func bytesReplace(b []byte, old, new string) []byte {
	s := string(b)
	out := []byte(replaceOnce(s, old, new))
	if string(out) == s {
		panic("nothing replaced: " + old)
	}
	return out
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

func TestConcurrentSpills(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: spill.Dir(t.TempDir())}
	var wg sync.WaitGroup
	ptrs := make([]pruneguard.Pointer, 16)
	for i := range ptrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: pruneguard.MessageID(fmt.Sprint(i)), Content: []byte(fmt.Sprint("c", i))}})
			assert.NoError(t, err)
			ptrs[i] = p
			assert.True(t, s.Resolvable(p))
		}()
	}
	wg.Wait()
	fresh := &spill.Spiller{Store: s.Store}
	for i, p := range ptrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms, err := fresh.Recall(ctx, p)
			if assert.NoError(t, err) {
				assert.Equal(t, fmt.Sprint("c", i), string(ms[0].Content))
			}
		}()
	}
	wg.Wait()
}

// Spill a one-time nonce before evicting it: the regenerability gate
// lets an irreducible message go once its pointer resolves.
func ExampleSpiller() {
	ctx := context.Background()
	s := &spill.Spiller{Store: &spill.Memory{}, Name: "scratch"}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: s})
	c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "pay"}}})
	c.Append(pruneguard.Message{ID: "r1", Content: []byte("nonce=8f3a"), Answers: []pruneguard.CallID{"k1"}, Facts: pruneguard.OneTimeSecret})
	c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Content: []byte("paid")}) // the model read the nonce

	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	fmt.Println("before spilling:", errors.Is(err, pruneguard.ErrRegen))

	p, _ := s.Spill(ctx, c, "a1", "r1") // the whole unit, one segment
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	fmt.Println("after spilling:", d.Evict, err)
	c.Apply(d)
	back, _ := s.Recall(ctx, p)
	fmt.Println("recalled:", back[0].ID, back[1].ID, string(back[1].Content))
	// Output:
	// before spilling: true
	// after spilling: [a1 r1] <nil>
	// recalled: a1 r1 nonce=8f3a
}

func TestContextGovernsIO(t *testing.T) {
	ctx := t.Context()
	done, cancel := context.WithCancel(ctx)
	cancel()
	store := &counting{Store: &spill.Memory{}}
	s := &spill.Spiller{Store: store}
	ms := []pruneguard.Message{{ID: "m1", Content: []byte("measurement taken once")}}

	_, err := s.SpillMessages(done, ms)
	assert.ErrorIs(t, err, context.Canceled, "a done context stops the spill")
	assert.Empty(t, store.keys, "and nothing is stored")

	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	fresh := &spill.Spiller{Store: store}
	assert.ErrorIs(t, fresh.Verify(done, p), context.Canceled)
	assert.False(t, fresh.Resolvable(p))
	require.NoError(t, fresh.Verify(ctx, p), "a failure of the context is not remembered")
	assert.True(t, fresh.Resolvable(p))

	_, err = (&spill.Spiller{Store: store}).Recall(done, p)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = (&spill.Spiller{Store: store}).HandleRecall(done, json.RawMessage(`{"key":"`+p.Key+`"}`))
	assert.ErrorIs(t, err, context.Canceled)
	c := nonceContext(t, s)
	_, err = s.Spill(done, c, "r1")
	assert.ErrorIs(t, err, context.Canceled)
	m, _ := c.Message("r1")
	assert.Zero(t, m.Pointer, "no pointer is recorded")
}

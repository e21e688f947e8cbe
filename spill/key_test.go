package spill_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

func ticketMessages(text string) []pruneguard.Message {
	return []pruneguard.Message{
		{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k1", Tool: "create_ticket", Args: json.RawMessage(`{"title":"flaky build"}`)}}},
		{ID: "r1", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"k1"}, Content: []byte(text)},
	}
}

var (
	plainKey = regexp.MustCompile(`^seg-[0-9a-f]{24}$`)
	nsKey    = regexp.MustCompile(`^seg-([a-z0-9-]{1,32}|_[0-9a-f]{24})_[0-9a-f]{24}$`)
)

// The same session spilling the same messages gets the same key, in any
// process; other messages, or another session, get another.
func TestKeysFromContent(t *testing.T) {
	ctx := t.Context()
	dir := spill.Dir(t.TempDir())
	key := func(ns string, ms []pruneguard.Message) string {
		t.Helper()
		p, err := (&spill.Spiller{Store: dir, Namespace: ns}).SpillMessages(ctx, ms)
		require.NoError(t, err)
		return p.Key
	}
	a := ticketMessages(`{"ticket":"INC-4711"}`)
	b := ticketMessages(`{"ticket":"INC-4712"}`)
	assert.Regexp(t, plainKey, key("", a))
	assert.Equal(t, key("", a), key("", a), "a new Spiller, the same key")
	assert.NotEqual(t, key("", a), key("", b))
	assert.Equal(t, "seg-sess-1_", key("sess-1", a)[:len("seg-sess-1_")])
	assert.Equal(t, key("sess-1", a), key("sess-1", a))
	assert.NotEqual(t, key("sess-1", a), key("sess-2", a), "another session, another key")
	assert.NotEqual(t, key("sess-1", a), key("", a))
	tokens := a
	tokens[1].Tokens = 9
	assert.NotEqual(t, key("sess-1", ticketMessages(`{"ticket":"INC-4711"}`)), key("sess-1", tokens), "every field counts")
}

// Namespaces of any shape give valid keys of a bounded length; namespaces
// that differ, even only in case or in a character a key cannot hold,
// give different keys.
func TestNamespaceKeys(t *testing.T) {
	ctx := t.Context()
	ms := ticketMessages("x")
	seen := map[string]string{}
	for _, ns := range []string{
		"s", "sess-1", "Sess-1", "SESS-1", "sess_1", "sess 1", "sess/1", "sess.1", "ü",
		strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("x", 5000),
		spill.Namespace("acme", "sess-1"), spill.Namespace("acme/eu", "sess-1"), spill.Namespace("", "sess/1"),
		"_0123456789abcdef01234567", "seg-", "a_b", "a-b",
	} {
		p, err := (&spill.Spiller{Store: &spill.Memory{}, Namespace: ns}).SpillMessages(ctx, ms)
		require.NoError(t, err, ns)
		assert.True(t, spill.ValidKey(p.Key), ns)
		assert.Regexp(t, nsKey, p.Key, ns)
		assert.LessOrEqual(t, len(p.Key), 61, ns)
		prefix := p.Key[:len(p.Key)-24]
		if other, dup := seen[prefix]; dup {
			t.Errorf("namespaces %q and %q share the key prefix %s", ns, other, prefix)
		}
		seen[prefix] = ns
	}
}

func TestNamespaceHelper(t *testing.T) {
	assert.Equal(t, "sess-1", spill.Namespace("", "sess-1"), "no tenant: the session id")
	pairs := [][2]string{
		{"", "a/b"}, {"a", "b"}, {"a/b", "c"}, {"a", "b/c"}, {"a%2Fb", "c"}, {"", "a"}, {"a", ""},
		{"", ""}, {"/", ""}, {"", "/"}, {"%", "x"}, {"%25", "x"}, {"a", "/b"}, {"a/", "b"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		ns := spill.Namespace(p[0], p[1])
		if other, dup := seen[ns]; dup {
			t.Errorf("Namespace(%q, %q) = Namespace(%q, %q) = %q", p[0], p[1], other[0], other[1], ns)
		}
		seen[ns] = p
	}
}

// Content already stored is not written again: the Spiller that wrote it
// does no I/O at all, a new one reads the segment back, checks it and
// hands out its pointer.
func TestSpillAgainWritesNothing(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: spill.Dir(t.TempDir())}
	ms := ticketMessages(`{"ticket":"INC-4711"}`)
	s := &spill.Spiller{Store: store, Namespace: "sess-1"}
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	puts, gets := store.puts.Load(), store.gets.Load()
	for range 3 {
		again, err := s.SpillMessages(ctx, ms)
		require.NoError(t, err)
		assert.Equal(t, p, again)
	}
	assert.Equal(t, puts, store.puts.Load(), "the Spiller knows the segment: no Put")
	assert.Equal(t, gets, store.gets.Load(), "and no Get")

	restarted := &spill.Spiller{Store: store, Namespace: "sess-1"}
	again, err := restarted.SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.Equal(t, p, again, "a restarted process gets the same key")
	assert.True(t, restarted.Resolvable(again))
	assert.Len(t, store.keys, 1, "the segment was written once")
	back, err := restarted.Recall(ctx, again)
	require.NoError(t, err)
	assert.Equal(t, ms, back)

	s.Forget(p)
	again, err = s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.True(t, s.Resolvable(again), "spilling it again after Forget verifies it again")
	assert.Len(t, store.keys, 1)
}

// A key that holds other messages than the ones that give it (a hash
// collision, or a store changed behind the Spiller's back) is corrupt:
// no pointer is handed out and nothing is overwritten.
func TestSpillOverOtherContentIsCorrupt(t *testing.T) {
	ctx := t.Context()
	ms := ticketMessages(`{"ticket":"INC-4711"}`)
	other := ticketMessages(`{"ticket":"INC-9999"}`)
	scratch := &spill.Memory{}
	p, err := (&spill.Spiller{Store: scratch, Namespace: "s"}).SpillMessages(ctx, ms)
	require.NoError(t, err)
	q, err := (&spill.Spiller{Store: scratch, Namespace: "s"}).SpillMessages(ctx, other)
	require.NoError(t, err)
	seg, err := scratch.Get(ctx, q.Key)
	require.NoError(t, err)
	// The other segment, its key field changed to ms's key: it checks out
	// on its own, and holds other messages.
	forged := []byte(strings.Replace(string(seg), q.Key, p.Key, 1))

	for name, content := range map[string][]byte{"other messages": forged, "garbage": []byte("not a segment")} {
		t.Run(name, func(t *testing.T) {
			store := &spill.Memory{}
			require.NoError(t, store.Put(ctx, p.Key, content))
			s := &spill.Spiller{Store: store, Namespace: "s"}
			got, err := s.SpillMessages(ctx, ms)
			assert.ErrorIs(t, err, spill.ErrCorrupt)
			var ke *spill.KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, p.Key, ke.Key)
			assert.Zero(t, got)
			assert.False(t, s.Resolvable(p))
			now, err := store.Get(ctx, p.Key)
			require.NoError(t, err)
			assert.Equal(t, content, now, "left as it was")
		})
	}
}

// On a store that sessions share, a Spiller answers only for the keys of
// its own namespace: another session's key gets ErrNotFound, never the
// content, and the store is not even read.
func TestNamespaceIsolation(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: &spill.Memory{}}
	alice := &spill.Spiller{Store: store, Namespace: spill.Namespace("acme", "alice")}
	mallory := &spill.Spiller{Store: store, Namespace: spill.Namespace("evil", "mallory")}
	p, err := alice.SpillMessages(ctx, ticketMessages(`{"nonce":"8f3a"}`))
	require.NoError(t, err)

	gets := store.gets.Load()
	assert.False(t, mallory.Resolvable(p))
	assert.ErrorIs(t, mallory.Verify(ctx, p), spill.ErrNotFound)
	_, err = mallory.Recall(ctx, p)
	assert.ErrorIs(t, err, spill.ErrNotFound)
	var ke *spill.KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, p.Key, ke.Key)
	out, err := mallory.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	assert.ErrorIs(t, err, spill.ErrNotFound)
	assert.Empty(t, out)
	assert.NotContains(t, err.Error(), "8f3a")
	assert.Equal(t, gets, store.gets.Load(), "another namespace's key is not read")
	assert.False(t, mallory.Resolvable(p), "nor remembered as resolvable")

	// The same session in another process answers.
	again := &spill.Spiller{Store: store, Namespace: spill.Namespace("acme", "alice")}
	require.NoError(t, again.Verify(ctx, p))
	assert.True(t, again.Resolvable(p))

	// A Spiller with no namespace answers for every key, as it always did;
	// a namespaced one does not answer for keys written without one.
	assert.NoError(t, (&spill.Spiller{Store: store}).Verify(ctx, p))
	q, err := (&spill.Spiller{Store: store}).SpillMessages(ctx, ticketMessages("shared"))
	require.NoError(t, err)
	assert.ErrorIs(t, alice.Verify(ctx, q), spill.ErrNotFound)
	legacy := pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-7c9e6679-7425-40de-944b-e07fc1f90ae7"}
	assert.ErrorIs(t, alice.Verify(ctx, legacy), spill.ErrNotFound)
}

// A namespace is not a prefix of another's keys, whatever the two are.
func TestNamespacePrefixes(t *testing.T) {
	ctx := t.Context()
	store := &spill.Memory{}
	ms := ticketMessages("x")
	for _, pair := range [][2]string{{"a", "a-b"}, {"a-b", "a"}, {"a", "a_b"}, {"a", "A"}, {"", "a"}} {
		mine := &spill.Spiller{Store: store, Namespace: pair[0]}
		theirs := &spill.Spiller{Store: store, Namespace: pair[1]}
		p, err := theirs.SpillMessages(ctx, ms)
		require.NoError(t, err)
		err = mine.Verify(ctx, p)
		if pair[0] == "" {
			assert.NoError(t, err, "no namespace: every key")
			continue
		}
		assert.ErrorIs(t, err, spill.ErrNotFound, "%q reads %q's key %s", pair[0], pair[1], p.Key)
	}
	// Keys that start like a namespace's but are not of its form.
	s := &spill.Spiller{Store: store, Namespace: "a"}
	for _, key := range []string{"seg-a_", "seg-a_x", "seg-a_0123456789abcdef0123456", "seg-a_0123456789abcdef012345678", "seg-a_0123456789abcdef0123456g"} {
		require.NoError(t, store.Put(context.Background(), key, []byte("x")))
		assert.ErrorIs(t, s.Verify(ctx, pruneguard.Pointer{Store: spill.DefaultName, Key: key}), spill.ErrNotFound, key)
	}
}

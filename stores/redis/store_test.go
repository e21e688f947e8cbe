package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/spill/storetest"
	spillredis "github.com/pruneguard/pruneguard/stores/redis"
)

// addrEnv names the server the tests use. Without it they skip, except
// under CI, where that is a failure.
const addrEnv = "PRUNEGUARD_TEST_REDIS_ADDR"

func client(t *testing.T) *goredis.Client {
	t.Helper()
	addr := os.Getenv(addrEnv)
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; CI must run these tests against a real server", addrEnv)
		}
		t.Skipf("%s is not set", addrEnv)
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.Ping(context.Background()).Err(), "redis at %s", addr)
	return c
}

// prefix is a key prefix no other test run uses.
func prefix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "pruneguard-test:" + hex.EncodeToString(b) + ":"
}

func TestConformance(t *testing.T) {
	c := client(t)
	p := prefix()
	storetest.Run(t, func(*testing.T) spill.Store { return spillredis.Store{Client: c, Prefix: p} })
	require.NoError(t, storetest.TestStore(func() (spill.Store, error) { return spillredis.Store{Client: c}, nil }),
		"with the default prefix")
}

func TestSpillerAcrossHosts(t *testing.T) {
	ctx := t.Context()
	p := prefix()
	hostA := &spill.Spiller{Store: spillredis.Store{Client: client(t), Prefix: p}, Name: "fleet"}
	hostB := &spill.Spiller{Store: spillredis.Store{Client: client(t), Prefix: p}, Name: "fleet"}

	c := pruneguard.NewContext(pruneguard.Config{Resolver: hostA})
	require.NoError(t, c.Append(pruneguard.Message{ID: "a1", Calls: []pruneguard.Call{{ID: "k1", Tool: "pay"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r1", Content: []byte("nonce=8f3a"), Answers: []pruneguard.CallID{"k1"}, Facts: pruneguard.OneTimeSecret}))
	ptr, err := hostA.Spill(ctx, c, "a1", "r1")
	require.NoError(t, err)

	assert.False(t, hostB.Resolvable(ptr), "host B has not verified it yet")
	require.NoError(t, hostB.Verify(ctx, ptr), "a pointer one host wrote resolves on another")
	assert.True(t, hostB.Resolvable(ptr))
	ms, err := hostB.Recall(ctx, ptr)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, "nonce=8f3a", string(ms[1].Content))
	other := &spill.Spiller{Store: spillredis.Store{Client: client(t), Prefix: prefix()}, Name: "fleet"}
	assert.ErrorIs(t, other.Verify(ctx, ptr), spill.ErrNotFound, "another prefix is another store")
	assert.False(t, other.Resolvable(ptr))
}

func TestDamagedValue(t *testing.T) {
	c := client(t)
	p := prefix()
	s := spillredis.Store{Client: c, Prefix: p}
	ctx := context.Background()
	require.NoError(t, s.Put(ctx, "k", []byte("a measurement")))
	raw, err := c.Get(ctx, p+"k").Bytes()
	require.NoError(t, err)

	for name, v := range map[string][]byte{
		"overwritten by another client": []byte("plain value"),
		"truncated":                     raw[:len(raw)-2],
		"sealed for another key":        spill.Seal("other", []byte("a measurement")),
	} {
		require.NoError(t, c.Set(ctx, p+"k", v, 0).Err())
		got, err := s.Get(ctx, "k")
		assert.Nil(t, got, name)
		assert.ErrorIs(t, err, spill.ErrCorrupt, name)
	}
}

func TestZeroStore(t *testing.T) {
	ctx := t.Context()
	var s spillredis.Store
	assert.ErrorIs(t, s.Put(ctx, "k", nil), spill.ErrNoStore)
	_, err := s.Get(ctx, "k")
	assert.ErrorIs(t, err, spill.ErrNoStore)
}

// quiet drops go-redis's log lines.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestUnreachableServer(t *testing.T) {
	ctx := t.Context()
	goredis.SetLogger(quiet{})
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	s := spillredis.Store{Client: c}
	err := s.Put(ctx, "k", []byte("v"))
	require.Error(t, err)
	var ke *spill.KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "k", ke.Key)
	assert.NotErrorIs(t, err, spill.ErrKeyExists)
	_, err = s.Get(ctx, "k")
	require.Error(t, err)
	assert.NotErrorIs(t, err, spill.ErrNotFound, "a failed read is not a missing key")
}

// With a TTL, a key lives its TTL from its Put and from each Touch: a
// session that touches its segments keeps them, an untouched one goes.
func TestTTL(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	const ttl = 400 * time.Millisecond
	store := spillredis.Store{Client: c, Prefix: prefix(), TTL: ttl}
	live := &spill.Spiller{Store: store, Namespace: "live"}
	idle := &spill.Spiller{Store: store, Namespace: "idle"}
	p, err := live.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("kept by its session")}})
	require.NoError(t, err)
	q, err := idle.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("left alone")}})
	require.NoError(t, err)
	left, err := c.PTTL(ctx, store.Prefix+p.Key).Result()
	require.NoError(t, err)
	assert.Greater(t, left, time.Duration(0), "a Put gives the TTL")
	assert.LessOrEqual(t, left, ttl)

	for range 6 {
		time.Sleep(ttl / 4)
		require.NoError(t, live.Touch(ctx, p))
	}
	assert.NoError(t, (&spill.Spiller{Store: store, Namespace: "live"}).Verify(ctx, p), "touched: alive after 1.5 TTL")
	assert.ErrorIs(t, (&spill.Spiller{Store: store, Namespace: "idle"}).Verify(ctx, q), spill.ErrNotFound, "untouched: expired")
	assert.ErrorIs(t, idle.Touch(ctx, q), spill.ErrNotFound)
	assert.False(t, idle.Resolvable(q), "a touch that finds it gone is remembered")

	// Spilled again, the same content is stored again under its key.
	again, err := idle.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("left alone")}})
	require.NoError(t, err)
	assert.Equal(t, q, again)
	assert.NoError(t, (&spill.Spiller{Store: store, Namespace: "idle"}).Verify(ctx, q))
}

func TestNoTTL(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	store := spillredis.Store{Client: c, Prefix: prefix()}
	require.NoError(t, store.Put(ctx, "k", []byte("v")))
	left, err := c.TTL(ctx, store.Prefix+"k").Result()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), left, "no TTL: the key never expires")
	require.NoError(t, store.Touch(ctx, "k"))
	left, err = c.TTL(ctx, store.Prefix+"k").Result()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), left, "and a Touch gives it none")
}

// Two tenants on one server: neither reads, nor finds by searching, the
// other's segments, even with their keys; stores of two prefixes do not
// list each other's keys.
func TestTenants(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	store := spillredis.Store{Client: c, Prefix: prefix()}
	acme := &spill.Spiller{Store: store, Namespace: spill.Namespace("acme", "s1")}
	globex := &spill.Spiller{Store: store, Namespace: spill.Namespace("globex", "s1")}
	p, err := acme.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("acme ticket INC-4711")}})
	require.NoError(t, err)
	_, err = globex.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("globex ticket INC-4711")}})
	require.NoError(t, err)

	_, err = globex.Recall(ctx, p)
	assert.ErrorIs(t, err, spill.ErrNotFound)
	out, err := globex.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	assert.ErrorIs(t, err, spill.ErrNotFound)
	assert.Empty(t, out)
	out, err = globex.HandleRecall(ctx, json.RawMessage(`{"query":"INC-4711"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "globex ticket")
	assert.NotContains(t, out, "acme")
	out, err = (&spill.Spiller{Store: store, Namespace: spill.Namespace("acme", "s1")}).HandleRecall(ctx, json.RawMessage(`{"query":"INC-4711"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "acme ticket", "the same tenant's session finds its own, from another process")
	assert.NotContains(t, out, "globex")

	keys, err := (spillredis.Store{Client: c, Prefix: prefix()}).List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, keys, "another prefix lists nothing of this one")
}

package redis_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
	spillredis "github.com/pruneguard/pruneguard/stores/redis"
)

func TestSessionsConformance(t *testing.T) {
	c := client(t)
	p := prefix()
	storetest.Run(t, func(*testing.T) sessions.Store { return spillredis.Sessions{Client: c, Prefix: p} })
	t.Run("with a TTL", func(t *testing.T) {
		storetest.Run(t, func(*testing.T) sessions.Store { return spillredis.Sessions{Client: c, Prefix: p, TTL: time.Hour} })
	})
	require.NoError(t, storetest.TestStore(func() (sessions.Store, error) { return spillredis.Sessions{Client: c}, nil }),
		"with the default prefix")
}

// A session saved or touched within its TTL is never expired; one left
// alone longer is.
func TestSessionsTTL(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	p := prefix()
	const ttl = 400 * time.Millisecond
	s := spillredis.Sessions{Client: c, Prefix: p, TTL: ttl}
	v, err := s.Save(ctx, "live", []byte("turn 0"), sessions.Absent)
	require.NoError(t, err)
	_, err = s.Save(ctx, "idle", []byte("turn 0"), sessions.Absent)
	require.NoError(t, err)
	_, err = s.Save(ctx, "touched", []byte("turn 0"), sessions.Absent)
	require.NoError(t, err)
	for i := range 6 { // 6 x ttl/2: three TTLs in all
		time.Sleep(ttl / 2)
		v, err = s.Save(ctx, "live", []byte("turn "+strconv.Itoa(i+1)), v)
		require.NoError(t, err, "a session saved within its TTL is still there")
		require.NoError(t, s.Touch(ctx, "touched"), "a session touched within its TTL is still there")
	}
	_, _, err = s.Load(ctx, "idle")
	assert.ErrorIs(t, err, sessions.ErrNotFound, "a session left alone for longer than its TTL expires")
	_, _, err = s.Load(ctx, "touched")
	assert.NoError(t, err)
	left, err := c.PTTL(ctx, p+"live").Result()
	require.NoError(t, err)
	assert.Greater(t, left, ttl/2, "each Save restarts the TTL")

	// A Sessions with no TTL makes what it saves permanent again.
	forever := spillredis.Sessions{Client: c, Prefix: p}
	_, err = forever.Save(ctx, "live", []byte("kept"), v)
	require.NoError(t, err)
	left, err = c.PTTL(ctx, p+"live").Result()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), left, "no expiry")
}

// Nothing expires by default.
func TestSessionsNoExpiryByDefault(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	p := prefix()
	s := spillredis.Sessions{Client: c, Prefix: p}
	_, err := s.Save(ctx, "s1", []byte("x"), sessions.Absent)
	require.NoError(t, err)
	require.NoError(t, s.Touch(ctx, "s1"))
	left, err := c.PTTL(ctx, p+"s1").Result()
	require.NoError(t, err)
	assert.Equal(t, time.Duration(-1), left)
}

func TestSessionsDamagedHash(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	p := prefix()
	s := spillredis.Sessions{Client: c, Prefix: p}
	v, err := s.Save(ctx, "s1", []byte("a conversation"), sessions.Absent)
	require.NoError(t, err)
	raw, err := c.HGet(ctx, p+"s1", "s").Bytes()
	require.NoError(t, err)
	for what, fields := range map[string][]any{
		"record truncated":      {"v", strconv.FormatUint(uint64(v), 10), "s", raw[:len(raw)-1]},
		"record of another id":  {"v", strconv.FormatUint(uint64(v), 10), "s", sessions.Seal("s2", v, []byte("a conversation"))},
		"version field changed": {"v", strconv.FormatUint(uint64(v+1), 10), "s", raw},
		"version field garbled": {"v", "seven", "s", raw},
		"record overwritten":    {"v", strconv.FormatUint(uint64(v), 10), "s", "plain value"},
		"record field missing":  {"v", strconv.FormatUint(uint64(v), 10)},
	} {
		require.NoError(t, c.Del(ctx, p+"s1").Err())
		require.NoError(t, c.HSet(ctx, p+"s1", fields...).Err())
		got, _, err := s.Load(ctx, "s1")
		assert.Nil(t, got, what)
		assert.ErrorIs(t, err, sessions.ErrCorrupt, what)
		var ie *sessions.IDError
		if assert.ErrorAs(t, err, &ie, what) {
			assert.Equal(t, "s1", ie.ID, what)
		}
	}
}

// Two tenants on one server, each with a prefix of its own, never see
// each other's sessions, even under the same id.
func TestSessionsPrefixesApart(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	a := spillredis.Sessions{Client: c, Prefix: prefix()}
	b := spillredis.Sessions{Client: c, Prefix: prefix()}
	id := sessions.ID("acme", "s1")
	_, err := a.Save(ctx, id, []byte("acme's"), sessions.Absent)
	require.NoError(t, err)
	_, _, err = b.Load(ctx, id)
	assert.ErrorIs(t, err, sessions.ErrNotFound)
	_, err = b.Save(ctx, id, []byte("globex's"), sessions.Absent)
	require.NoError(t, err)
	got, _, err := a.Load(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "acme's", string(got))
}

func TestZeroSessions(t *testing.T) {
	ctx := t.Context()
	var s spillredis.Sessions
	_, err := s.Save(ctx, "s1", nil, sessions.Absent)
	assert.ErrorIs(t, err, sessions.ErrNoStore)
	_, _, err = s.Load(ctx, "s1")
	assert.ErrorIs(t, err, sessions.ErrNoStore)
	assert.ErrorIs(t, s.Delete(ctx, "s1", 1), sessions.ErrNoStore)
	assert.ErrorIs(t, s.Touch(ctx, "s1"), sessions.ErrNoStore)
}

func TestSessionsUnreachableServer(t *testing.T) {
	ctx := t.Context()
	goredis.SetLogger(quiet{})
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	s := spillredis.Sessions{Client: c}
	_, err := s.Save(ctx, "s1", []byte("v"), sessions.Absent)
	require.Error(t, err)
	var ie *sessions.IDError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "s1", ie.ID)
	assert.NotErrorIs(t, err, sessions.ErrConflict, "a failed write is not a conflict")
	_, _, err = s.Load(ctx, "s1")
	require.Error(t, err)
	assert.NotErrorIs(t, err, sessions.ErrNotFound, "a failed read is not a missing session")
}

// TestSessionsCrashChild is the child of TestSessionsCrash.
func TestSessionsCrashChild(t *testing.T) {
	storetest.CrashChild(t, func(p string) sessions.Store {
		return spillredis.Sessions{Client: goredis.NewClient(&goredis.Options{Addr: os.Getenv(addrEnv)}), Prefix: p}
	})
}

// Replicas killed with SIGKILL mid-save leave the session as it was
// before the Save or after it, whole, and lose no update.
func TestSessionsCrash(t *testing.T) {
	c := client(t)
	p := prefix()
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	n := storetest.Crash(t, spillredis.Sessions{Client: c, Prefix: p}, storetest.CrashConfig{Child: "TestSessionsCrashChild", Arg: p, Rounds: rounds})
	t.Logf("%d rounds, counter at %d", rounds, n)
}

// TestSessionsLoad races two replicas, each with its own connection
// pool, on 64 sessions: zero lost updates, and the throughput and
// latency of load+save. PRUNEGUARD_TEST_LOAD_TURNS sets the turns per
// replica and session (default 20, 200 for the figures in
// BENCHMARKS.md).
func TestSessionsLoad(t *testing.T) {
	r, err := storetest.Stress(t.Context(), loadReplicas(t), storetest.StressConfig{Sessions: 64, Turns: loadTurns(t)})
	t.Log(r)
	require.NoError(t, err)
}

// loadReplicas returns the stores of two replicas under one new prefix.
func loadReplicas(t *testing.T) []sessions.Store {
	client(t) // skips without a server
	p := prefix()
	// A client per replica, of 32 connections, as for PostgreSQL.
	replicas := make([]sessions.Store, 2)
	for i := range replicas {
		c := goredis.NewClient(&goredis.Options{Addr: os.Getenv(addrEnv), PoolSize: 32})
		t.Cleanup(func() { c.Close() })
		replicas[i] = spillredis.Sessions{Client: c, Prefix: p}
	}
	return replicas
}

// TestSessionsLoadContext races two replicas on conversations whose state
// is a runtime's Context, each turn a load, a restore, a guarded turn, a
// save and a compare-and-swap: zero lost updates, and the throughput and
// latency per request. 8 conversations x 20 turns per replica, or, with
// PRUNEGUARD_TEST_LOAD_FULL set, 64 x 200.
func TestSessionsLoadContext(t *testing.T) {
	cfg := storetest.ContextLoad(os.Getenv("PRUNEGUARD_TEST_LOAD_FULL") != "")
	r, err := storetest.Stress(t.Context(), loadReplicas(t), cfg)
	t.Log(r)
	require.NoError(t, err)
}

func loadTurns(t *testing.T) int {
	s := os.Getenv("PRUNEGUARD_TEST_LOAD_TURNS")
	if s == "" {
		return 20
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "PRUNEGUARD_TEST_LOAD_TURNS")
	return n
}

package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/spill/storetest"
	"github.com/pruneguard/pruneguard/stores/postgres"
)

// urlEnv names the database the tests use. Without it they skip, except
// under CI, where that is a failure.
const urlEnv = "PRUNEGUARD_TEST_POSTGRES_URL"

func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; CI must run these tests against a real server", urlEnv)
		}
		t.Skipf("%s is not set", urlEnv)
	}
	p, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NoError(t, p.Ping(context.Background()))
	return p
}

// table returns a table name no other test run uses, dropped when the
// test ends.
func table(t *testing.T, db *pgxpool.Pool) string {
	b := make([]byte, 6)
	rand.Read(b)
	name := "pruneguard_spill_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		db.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	return name
}

func TestConformance(t *testing.T) {
	db := pool(t)
	name := table(t, db)
	storetest.Run(t, func(*testing.T) spill.Store { return &postgres.Store{DB: db, Table: name} })
	// The default table may hold rows of earlier runs; the suite's keys
	// are its own.
	require.NoError(t, storetest.TestStore(func() (spill.Store, error) { return &postgres.Store{DB: db}, nil }))
}

func TestTableCreatedByRacingHosts(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := table(t, db)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A pool each, as separate hosts have.
			p, err := pgxpool.New(context.Background(), os.Getenv(urlEnv))
			if err != nil {
				errs[i] = err
				return
			}
			defer p.Close()
			s := &postgres.Store{DB: p, Table: name}
			errs[i] = s.Put(ctx, "k"+string(rune('a'+i)), []byte("v"))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}

func TestSpillerAcrossHosts(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := table(t, db)
	hostA := &spill.Spiller{Store: &postgres.Store{DB: db, Table: name}, Name: "fleet"}
	hostB := &spill.Spiller{Store: &postgres.Store{DB: pool(t), Table: name}, Name: "fleet"}

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
}

func TestDamagedRow(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := table(t, db)
	s := &postgres.Store{DB: db, Table: name}
	require.NoError(t, s.Put(ctx, "k", []byte("a measurement")))
	for what, update := range map[string]string{
		"content changed":   `UPDATE %s SET content = 'a measurfment'::bytea WHERE key = 'k'`,
		"content truncated": `UPDATE %s SET content = 'a meas'::bytea WHERE key = 'k'`,
		"checksum changed":  `UPDATE %s SET sha256 = '\x00'::bytea WHERE key = 'k'`,
	} {
		_, err := db.Exec(context.Background(), fmt.Sprintf(update, pgx.Identifier{name}.Sanitize()))
		require.NoError(t, err)
		got, err := s.Get(ctx, "k")
		assert.Nil(t, got, what)
		assert.ErrorIs(t, err, spill.ErrCorrupt, what)
		var ke *spill.KeyError
		require.ErrorAs(t, err, &ke)
		assert.Equal(t, "k", ke.Key)
	}
}

func TestZeroStore(t *testing.T) {
	ctx := t.Context()
	var s postgres.Store
	assert.ErrorIs(t, s.Put(ctx, "k", nil), spill.ErrNoStore)
	_, err := s.Get(ctx, "k")
	assert.ErrorIs(t, err, spill.ErrNoStore)
}

func TestUnreachableServer(t *testing.T) {
	ctx := t.Context()
	p, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	defer p.Close()
	s := &postgres.Store{DB: p}
	err = s.Put(ctx, "k", []byte("v"))
	require.Error(t, err)
	var ke *spill.KeyError
	require.ErrorAs(t, err, &ke)
	assert.NotErrorIs(t, err, spill.ErrKeyExists)
	_, err = s.Get(ctx, "k")
	require.Error(t, err)
	assert.NotErrorIs(t, err, spill.ErrNotFound, "a failed read is not a missing key")
}

// Sweep deletes what was neither put nor touched lately: a session that
// touches its segments keeps them.
func TestSweep(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := table(t, db)
	store := &postgres.Store{DB: db, Table: name}
	live := &spill.Spiller{Store: store, Namespace: "live"}
	idle := &spill.Spiller{Store: store, Namespace: "idle"}
	p, err := live.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("kept by its session")}})
	require.NoError(t, err)
	q, err := idle.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("left alone")}})
	require.NoError(t, err)
	// An hour passes.
	_, err = db.Exec(ctx, `UPDATE `+pgx.Identifier{name}.Sanitize()+` SET touched = touched - interval '1 hour'`)
	require.NoError(t, err)
	require.NoError(t, live.Touch(ctx, p))

	n, err := store.Sweep(ctx, 30*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.NoError(t, (&spill.Spiller{Store: store, Namespace: "live"}).Verify(ctx, p), "touched: kept")
	assert.ErrorIs(t, (&spill.Spiller{Store: store, Namespace: "idle"}).Verify(ctx, q), spill.ErrNotFound, "untouched: swept")
	again, err := idle.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Content: []byte("left alone")}})
	require.NoError(t, err, "spilled again, it is stored again under its key")
	assert.Equal(t, q, again)

	_, err = store.Sweep(ctx, 0)
	assert.Error(t, err)
	_, err = (&postgres.Store{}).Sweep(ctx, time.Hour)
	assert.ErrorIs(t, err, spill.ErrNoStore)
}

// A table an earlier version created, without the touched column and the
// prefix index, is brought up to date on first use.
func TestEarlierTable(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := table(t, db)
	_, err := db.Exec(ctx, `CREATE TABLE `+pgx.Identifier{name}.Sanitize()+` (
		key text PRIMARY KEY, content bytea NOT NULL, length bigint NOT NULL, sha256 bytea NOT NULL,
		created timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	store := &postgres.Store{DB: db, Table: name}
	require.NoError(t, store.Put(ctx, "seg-a", []byte("x")))
	require.NoError(t, store.Touch(ctx, "seg-a"))
	keys, err := store.List(ctx, "seg-")
	require.NoError(t, err)
	assert.Equal(t, []string{"seg-a"}, keys)
}

// Two tenants on one database: neither reads, nor finds by searching, the
// other's segments, even with their keys.
func TestTenants(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	store := &postgres.Store{DB: db, Table: table(t, db)}
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
}

// LIKE's wildcards in a prefix match only themselves.
func TestListWildcards(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	store := &postgres.Store{DB: db, Table: table(t, db)}
	for _, k := range []string{"a_b", "axb", "a_c", "ab"} {
		require.NoError(t, store.Put(ctx, k, nil))
	}
	keys, err := store.List(ctx, "a_")
	require.NoError(t, err)
	assert.Equal(t, []string{"a_b", "a_c"}, keys)
}

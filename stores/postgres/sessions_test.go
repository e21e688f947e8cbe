package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
	"github.com/pruneguard/pruneguard/stores/postgres"
)

// sessionTable returns a table name no other test run uses, dropped
// when the test ends.
func sessionTable(t *testing.T, db *pgxpool.Pool) string {
	b := make([]byte, 6)
	rand.Read(b)
	name := "pruneguard_sessions_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		db.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	return name
}

func TestSessionsConformance(t *testing.T) {
	db := pool(t)
	name := sessionTable(t, db)
	storetest.Run(t, func(*testing.T) sessions.Store { return &postgres.Sessions{DB: db, Table: name} })
	// The default table may hold rows of earlier runs; the suite's ids
	// are its own.
	require.NoError(t, storetest.TestStore(func() (sessions.Store, error) { return &postgres.Sessions{DB: db}, nil }))
}

func TestSessionsTableCreatedByRacingHosts(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := sessionTable(t, db)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := pgxpool.New(ctx, os.Getenv(urlEnv))
			if err != nil {
				errs[i] = err
				return
			}
			defer p.Close()
			s := &postgres.Sessions{DB: p, Table: name}
			_, errs[i] = s.Save(ctx, "s"+strconv.Itoa(i), []byte("v"), sessions.Absent)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}

// ageRow moves a session's last save back by d.
func ageRow(t *testing.T, db *pgxpool.Pool, table, id string, d time.Duration) {
	_, err := db.Exec(context.Background(), `UPDATE `+pgx.Identifier{table}.Sanitize()+
		` SET saved = saved - $2::bigint * interval '1 microsecond' WHERE id = $1`, id, d.Microseconds())
	require.NoError(t, err)
}

// Sweep removes the sessions not saved or touched within TTL, and only
// those; without a TTL it removes nothing.
func TestSessionsSweep(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := sessionTable(t, db)
	const ttl = time.Hour
	s := &postgres.Sessions{DB: db, Table: name, TTL: ttl}
	vs := map[string]sessions.Version{}
	for _, id := range []string{"idle", "saved", "touched", "fresh"} {
		v, err := s.Save(ctx, id, []byte(id), sessions.Absent)
		require.NoError(t, err)
		vs[id] = v
	}
	for _, id := range []string{"idle", "saved", "touched"} {
		ageRow(t, db, name, id, 2*ttl)
	}
	_, err := s.Save(ctx, "saved", []byte("saved again"), vs["saved"])
	require.NoError(t, err)
	require.NoError(t, s.Touch(ctx, "touched"))

	none := &postgres.Sessions{DB: db, Table: name}
	n, err := none.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing expires without a TTL")

	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	_, _, err = s.Load(ctx, "idle")
	assert.ErrorIs(t, err, sessions.ErrNotFound, "a session idle for longer than its TTL is swept")
	for _, id := range []string{"saved", "touched", "fresh"} {
		_, _, err := s.Load(ctx, id)
		assert.NoError(t, err, "%s: a session saved or touched within its TTL stays", id)
	}
	_, err = s.Save(ctx, "idle", []byte("from a replica of its first life"), vs["idle"])
	assert.ErrorIs(t, err, sessions.ErrConflict)
}

// A Sweep racing a Save never undoes it: of a session idle past its
// TTL, saved and swept at once, either the Sweep removes it first and
// the Save conflicts, or the Save wins and the session stays.
func TestSessionsSweepRacingSaves(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := sessionTable(t, db)
	const ttl = time.Hour
	s := &postgres.Sessions{DB: db, Table: name, TTL: ttl}
	outcomes := map[string]int{}
	for i := range 40 {
		id := "s" + strconv.Itoa(i)
		v, err := s.Save(ctx, id, []byte("idle"), sessions.Absent)
		require.NoError(t, err)
		ageRow(t, db, name, id, 2*ttl)
		var (
			wg      sync.WaitGroup
			saveErr error
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, saveErr = s.Save(ctx, id, []byte("saved at last"), v)
		}()
		_, err = s.Sweep(ctx)
		require.NoError(t, err)
		wg.Wait()
		got, _, loadErr := s.Load(ctx, id)
		switch {
		case saveErr == nil:
			require.NoError(t, loadErr, "a Sweep removed a session a racing Save had saved")
			assert.Equal(t, "saved at last", string(got))
			outcomes["save first"]++
		default:
			require.ErrorIs(t, saveErr, sessions.ErrConflict)
			require.ErrorIs(t, loadErr, sessions.ErrNotFound)
			outcomes["sweep first"]++
		}
	}
	t.Log(outcomes)
}

func TestSessionsDamagedRow(t *testing.T) {
	ctx := t.Context()
	db := pool(t)
	name := sessionTable(t, db)
	s := &postgres.Sessions{DB: db, Table: name}
	v, err := s.Save(ctx, "s1", []byte("a conversation"), sessions.Absent)
	require.NoError(t, err)
	tbl := pgx.Identifier{name}.Sanitize()
	for what, update := range map[string]string{
		"state truncated":      `UPDATE %s SET state = substring(state from 1 for length(state) - 1) WHERE id = 's1'`,
		"state changed":        `UPDATE %s SET state = overlay(state placing '\x00'::bytea from 30 for 1) WHERE id = 's1'`,
		"version column moved": `UPDATE %s SET version = version + 1 WHERE id = 's1'`,
		"state of another id":  `UPDATE %s SET id = 's1', state = (SELECT state FROM %[1]s WHERE id = 's2') WHERE id = 's1'`,
		"state replaced":       `UPDATE %s SET state = 'plain'::bytea WHERE id = 's1'`,
	} {
		_, err := db.Exec(ctx, `DELETE FROM `+tbl)
		require.NoError(t, err)
		_, err = db.Exec(ctx, `INSERT INTO `+tbl+` (id, version, state) VALUES ('s1', $1, $2), ('s2', $1, $3)`,
			int64(v), sessions.Seal("s1", v, []byte("a conversation")), sessions.Seal("s2", v, []byte("a conversation")))
		require.NoError(t, err)
		_, err = db.Exec(ctx, fmt.Sprintf(update, tbl))
		require.NoError(t, err, what)
		got, _, err := s.Load(ctx, "s1")
		assert.Nil(t, got, what)
		assert.ErrorIs(t, err, sessions.ErrCorrupt, what)
		var ie *sessions.IDError
		if assert.ErrorAs(t, err, &ie, what) {
			assert.Equal(t, "s1", ie.ID, what)
		}
	}
}

func TestZeroSessions(t *testing.T) {
	ctx := t.Context()
	var s postgres.Sessions
	_, err := s.Save(ctx, "s1", nil, sessions.Absent)
	assert.ErrorIs(t, err, sessions.ErrNoStore)
	_, _, err = s.Load(ctx, "s1")
	assert.ErrorIs(t, err, sessions.ErrNoStore)
	assert.ErrorIs(t, s.Delete(ctx, "s1", 1), sessions.ErrNoStore)
	assert.ErrorIs(t, s.Touch(ctx, "s1"), sessions.ErrNoStore)
	s.TTL = time.Hour
	_, err = s.Sweep(ctx)
	assert.ErrorIs(t, err, sessions.ErrNoStore)
}

func TestSessionsUnreachableServer(t *testing.T) {
	ctx := t.Context()
	p, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	defer p.Close()
	s := &postgres.Sessions{DB: p}
	_, err = s.Save(ctx, "s1", []byte("v"), sessions.Absent)
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
	storetest.CrashChild(t, func(table string) sessions.Store {
		p, err := pgxpool.New(context.Background(), os.Getenv(urlEnv))
		require.NoError(t, err)
		return &postgres.Sessions{DB: p, Table: table}
	})
}

// Replicas killed with SIGKILL mid-save leave the session as it was
// before the Save or after it, whole, and lose no update.
func TestSessionsCrash(t *testing.T) {
	db := pool(t)
	name := sessionTable(t, db)
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	n := storetest.Crash(t, &postgres.Sessions{DB: db, Table: name}, storetest.CrashConfig{Child: "TestSessionsCrashChild", Arg: name, Rounds: rounds})
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

// loadReplicas returns the stores of two replicas on one new table.
func loadReplicas(t *testing.T) []sessions.Store {
	name := sessionTable(t, pool(t))
	// A pool per replica, of 32 connections (the test server allows 100),
	// so that the figures are mostly the store's, not a queue for them.
	replicas := make([]sessions.Store, 2)
	for i := range replicas {
		p, err := pgxpool.New(context.Background(), os.Getenv(urlEnv)+"&pool_max_conns=32")
		require.NoError(t, err)
		t.Cleanup(p.Close)
		replicas[i] = &postgres.Sessions{DB: p, Table: name}
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

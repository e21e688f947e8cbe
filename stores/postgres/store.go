// Package postgres keeps spilled content in a PostgreSQL table, so that a
// pointer one host wrote resolves on every host of a fleet that shares
// the database. Its [Store] is a [spill.Store]: hand it to a
// [spill.Spiller].
//
// # Durability
//
// Put commits its row in a transaction that sets synchronous_commit to on,
// so when Put returns the commit record is flushed to the write-ahead log
// on disk (and, if synchronous_standby_names is set, on the synchronous
// standbys), whatever the session or server default is. That holds only
// while the server runs with fsync on, as it does by default; with fsync
// off a crash of the machine can lose or damage committed rows. An
// asynchronous replica promoted after a failover may lack recent Puts.
// A lost or damaged row is never mistaken for content: Get reports it
// missing, or refuses it with [spill.ErrCorrupt] when its length or
// SHA-256 column disagrees with its content.
//
// # Expiry
//
// A Store expires nothing by itself. Each row records when it was last
// touched (put, or touched with [Store.Touch], which a
// [spill.Spiller] calls through [spill.Spiller.Touch] and when it
// verifies a segment or finds one stored already); [Store.Sweep] deletes
// the rows no one touched for a while. A session keeps the segments it
// points to by touching them whenever it is used or saved; run Sweep
// with an idle time longer, with a margin, than the longest a live
// session goes between two touches.
//
// # Listing
//
// [Store.List] finds the keys under a prefix through an index on the
// key column made for prefix matches, created with the table (and on a
// table an earlier version created, when a Store first uses it).
package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pruneguard/pruneguard/spill"
)

// DefaultTable is the table a Store with no Table uses.
const DefaultTable = "pruneguard_spill"

// DefaultTimeout was the bound of each operation of a Store with no
// Timeout.
//
// Deprecated: a Store sets no deadline of its own: the context given to
// Put and Get governs them. Set Store.Timeout to bound each operation.
const DefaultTimeout = 10 * time.Second

// DB is what a Store needs of a database handle. A *pgxpool.Pool has it
// and is safe for concurrent use; a *pgx.Conn has it too, but is not.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var _ DB = (*pgxpool.Pool)(nil)

// Store is a [spill.Store] on a PostgreSQL table with a row per key:
//
//	key     text PRIMARY KEY   -- the spill key
//	content bytea NOT NULL
//	length  bigint NOT NULL    -- octets of content
//	sha256  bytea NOT NULL     -- SHA-256 of content
//	created timestamptz NOT NULL DEFAULT now()
//	touched timestamptz NOT NULL DEFAULT now() -- the last Put or Touch
//
// The table is created, if absent, on first use. Put inserts with ON
// CONFLICT DO NOTHING, so a key is never reused, even by Puts racing on
// several hosts. Table names the table, as one identifier, quoted
// (default [DefaultTable]); Stores that share a database must share it to
// see each other's content. Timeout, when positive, bounds each operation
// within the context the caller gives; zero means the caller's context
// alone governs. A Put or Get whose context is done fails with its error,
// as the [spill.Store] contract says.
//
// The zero Store has no database: its methods fail with
// [spill.ErrNoStore]. A Store is safe for concurrent use when its DB is;
// it must not be copied after first use.
type Store struct {
	DB      DB
	Table   string
	Timeout time.Duration

	mu      sync.Mutex  // held while creating the table
	created atomic.Bool // the table exists
}

func (s *Store) table() string {
	t := s.Table
	if t == "" {
		t = DefaultTable
	}
	return pgx.Identifier{t}.Sanitize()
}

// bound returns ctx bounded by the Store's Timeout, if any.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.Timeout)
}

var (
	_ spill.Lister  = (*Store)(nil)
	_ spill.Toucher = (*Store)(nil)
)

// ready checks the store and key and creates the table once. A "list"
// takes a prefix for key, which may be empty.
func (s *Store) ready(ctx context.Context, op, key string) error {
	if s.DB == nil {
		return &spill.KeyError{Op: op, Key: key, Err: spill.ErrNoStore}
	}
	if !spill.ValidKey(key) && !(op == "list" && key == "") {
		return &spill.KeyError{Op: op, Key: key, Err: spill.ErrBadKey}
	}
	if err := ctx.Err(); err != nil {
		return &spill.KeyError{Op: op, Key: key, Err: err}
	}
	if err := s.ensure(ctx); err != nil {
		return &spill.KeyError{Op: op, Key: key, Err: err}
	}
	return nil
}

// ensure creates the table once.
func (s *Store) ensure(ctx context.Context) error {
	if s.created.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created.Load() {
		return nil
	}
	if err := s.create(ctx); err != nil {
		return fmt.Errorf("creating table %s: %w", s.table(), err)
	}
	s.created.Store(true)
	return nil
}

// create creates the table if it is absent. Hosts creating it at once
// would collide in the catalog, so creators take a transaction-scoped
// advisory lock on the table's name first.
func (s *Store) create(ctx context.Context) error {
	tx, err := s.DB.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, advisoryClass, s.table()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table()+` (
		key text PRIMARY KEY,
		content bytea NOT NULL,
		length bigint NOT NULL,
		sha256 bytea NOT NULL,
		created timestamptz NOT NULL DEFAULT now(),
		touched timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	// A table an earlier version made has neither.
	if _, err := tx.Exec(ctx, `ALTER TABLE `+s.table()+` ADD COLUMN IF NOT EXISTS touched timestamptz NOT NULL DEFAULT now()`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+s.index()+` ON `+s.table()+` (key text_pattern_ops)`); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// index names the table's index for prefix matches: a name of its own
// for each table, within PostgreSQL's 63 bytes.
func (s *Store) index() string {
	sum := sha256.Sum256([]byte(s.table()))
	return pgx.Identifier{fmt.Sprintf("pruneguard_spill_prefix_%x", sum[:8])}.Sanitize()
}

// advisoryClass is the first key of the advisory lock create takes.
const advisoryClass int32 = 0x70677370 // "pgsp"

// Put inserts content under key and commits durably; see the package
// documentation. A used key fails with [spill.ErrKeyExists].
func (s *Store) Put(ctx context.Context, key string, content []byte) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.ready(ctx, "put", key); err != nil {
		return err
	}
	if content == nil {
		content = []byte{} // NOT NULL
	}
	sum := sha256.Sum256(content)
	added, err := s.insert(ctx, key, content, sum[:])
	if err != nil {
		return &spill.KeyError{Op: "put", Key: key, Err: err}
	}
	if !added {
		return &spill.KeyError{Op: "put", Key: key, Err: spill.ErrKeyExists}
	}
	return nil
}

func (s *Store) insert(ctx context.Context, key string, content, sum []byte) (bool, error) {
	tx, err := s.DB.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO on`); err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO `+s.table()+` (key, content, length, sha256) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key) DO NOTHING`, key, content, int64(len(content)), sum)
	if err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Get returns the content under key after checking its length and
// SHA-256 columns.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.ready(ctx, "get", key); err != nil {
		return nil, err
	}
	var (
		content, sum []byte
		length       int64
	)
	err := s.DB.QueryRow(ctx, `SELECT content, length, sha256 FROM `+s.table()+` WHERE key = $1`, key).Scan(&content, &length, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: spill.ErrNotFound}
	}
	if err != nil {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: err}
	}
	if int64(len(content)) != length {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: fmt.Errorf("%w: %d content bytes, length column says %d", spill.ErrCorrupt, len(content), length)}
	}
	if got := sha256.Sum256(content); string(got[:]) != string(sum) {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: fmt.Errorf("%w: checksum mismatch", spill.ErrCorrupt)}
	}
	return content, nil
}

// Touch records that key was used now, so that [Store.Sweep] keeps it. A
// key that holds nothing fails with [spill.ErrNotFound].
func (s *Store) Touch(ctx context.Context, key string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.ready(ctx, "touch", key); err != nil {
		return err
	}
	tag, err := s.DB.Exec(ctx, `UPDATE `+s.table()+` SET touched = now() WHERE key = $1`, key)
	if err != nil {
		return &spill.KeyError{Op: "touch", Key: key, Err: err}
	}
	if tag.RowsAffected() == 0 {
		return &spill.KeyError{Op: "touch", Key: key, Err: spill.ErrNotFound}
	}
	return nil
}

// List returns the keys that start with prefix, in ascending byte order;
// see [spill.Lister].
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.ready(ctx, "list", prefix); err != nil {
		return nil, err
	}
	pattern := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
	var keys []string
	err := s.DB.QueryRow(ctx, `SELECT coalesce(array_agg(key ORDER BY key COLLATE "C"), '{}') FROM `+s.table()+
		` WHERE key LIKE $1`, pattern).Scan(&keys)
	if err != nil {
		return nil, &spill.KeyError{Op: "list", Key: prefix, Err: err}
	}
	return keys, nil
}

// Sweep deletes the rows that were neither put nor touched in the last
// idle, and returns how many it deleted. Their pointers stop resolving;
// see Expiry in the package documentation. A key swept may be put again.
// An idle that is not positive is refused.
func (s *Store) Sweep(ctx context.Context, idle time.Duration) (int64, error) {
	if idle <= 0 {
		return 0, fmt.Errorf("postgres: sweep: idle %v is not positive", idle)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if s.DB == nil {
		return 0, spill.ErrNoStore
	}
	if err := s.ensure(ctx); err != nil {
		return 0, err
	}
	tag, err := s.DB.Exec(ctx, `DELETE FROM `+s.table()+` WHERE touched < now() - make_interval(secs => $1)`, idle.Seconds())
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep: %w", err)
	}
	return tag.RowsAffected(), nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pruneguard/pruneguard/sessions"
)

// DefaultSessionTable is the table a Sessions with no Table uses.
const DefaultSessionTable = "pruneguard_sessions"

// Sessions is a [sessions.Store] on a PostgreSQL table, shared by the
// processes of a fleet, with a row per session:
//
//	id      text PRIMARY KEY     -- the session id
//	version bigint NOT NULL      -- its version
//	state   bytea NOT NULL       -- the state sealed with its id and version (see sessions.Seal)
//	saved   timestamptz NOT NULL -- when it was last saved or touched
//
// and an index on saved. The table and index are created, if absent, on
// first use (hosts creating them at once take an advisory lock first);
// a role that may not create tables needs them made beforehand, as
// above. Table names the table, as one identifier, quoted (default
// [DefaultSessionTable]); Sessions that share a database must share it
// to see each other's sessions.
//
// Save creates a row with INSERT ... ON CONFLICT DO NOTHING and
// replaces one with UPDATE ... WHERE version = expect, so of Saves
// racing on one session, from any number of hosts, exactly one wins.
// Saves and Deletes commit with synchronous_commit on, so they are
// durable when they return as the spill [Store]'s Puts are (see the
// package documentation, "Durability"). Load refuses a row whose record
// fails its check or names another version with [sessions.ErrCorrupt].
//
// Nothing expires unless TTL is positive and the caller runs [Sessions.Sweep],
// which removes the sessions not saved or touched for TTL, by the
// database's clock: a session saved or touched within TTL is never
// removed, even by a Sweep racing its Save.
//
// Timeout, when positive, bounds each operation within the context the
// caller gives; zero means the caller's context alone governs.
//
// The zero Sessions has no database: every method fails with
// [sessions.ErrNoStore]. A Sessions is safe for concurrent use when its
// DB is; it must not be copied after first use.
type Sessions struct {
	DB      DB
	Table   string
	TTL     time.Duration
	Timeout time.Duration

	mu      sync.Mutex  // held while creating the table
	created atomic.Bool // the table exists
}

var (
	_ sessions.Deleter = (*Sessions)(nil)
	_ sessions.Toucher = (*Sessions)(nil)
)

// sessionsLockClass is the first key of the advisory lock taken to
// create the table.
const sessionsLockClass int32 = 0x70677373 // "pgss"

func (s *Sessions) table() string {
	t := s.Table
	if t == "" {
		t = DefaultSessionTable
	}
	return pgx.Identifier{t}.Sanitize()
}

// start checks the store, id and context, bounds ctx by Timeout, and
// creates the table once.
func (s *Sessions) start(ctx context.Context, op, id string) (context.Context, context.CancelFunc, error) {
	switch {
	case s.DB == nil:
		return ctx, nil, &sessions.IDError{Op: op, ID: id, Err: sessions.ErrNoStore}
	case !sessions.ValidID(id):
		return ctx, nil, &sessions.IDError{Op: op, ID: id, Err: sessions.ErrBadID}
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return ctx, nil, &sessions.IDError{Op: op, ID: id, Err: err}
	}
	return ctx, cancel, nil
}

// begin checks the store and context, bounds ctx by Timeout, and
// creates the table once.
func (s *Sessions) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if s.DB == nil {
		return ctx, nil, sessions.ErrNoStore
	}
	if err := ctx.Err(); err != nil {
		return ctx, nil, err
	}
	cancel := context.CancelFunc(func() {})
	if s.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	if err := s.ready(ctx); err != nil {
		cancel()
		return ctx, nil, err
	}
	return ctx, cancel, nil
}

// ready creates the table once.
func (s *Sessions) ready(ctx context.Context) error {
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

func (s *Sessions) create(ctx context.Context) error {
	tx, err := s.DB.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, sessionsLockClass, s.table()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table()+` (
		id text PRIMARY KEY,
		version bigint NOT NULL,
		state bytea NOT NULL,
		saved timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	index := pgx.Identifier{s.tableName() + "_saved"}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+index+` ON `+s.table()+` (saved)`); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *Sessions) tableName() string {
	if s.Table == "" {
		return DefaultSessionTable
	}
	return s.Table
}

// Load returns the session's state and version once its record checks
// out.
func (s *Sessions) Load(ctx context.Context, id string) ([]byte, sessions.Version, error) {
	ctx, cancel, err := s.start(ctx, "load", id)
	if err != nil {
		return nil, sessions.Absent, err
	}
	defer cancel()
	var (
		v   int64
		rec []byte
	)
	err = s.DB.QueryRow(ctx, `SELECT version, state FROM `+s.table()+` WHERE id = $1`, id).Scan(&v, &rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sessions.Absent, &sessions.IDError{Op: "load", ID: id, Err: sessions.ErrNotFound}
	}
	if err != nil {
		return nil, sessions.Absent, &sessions.IDError{Op: "load", ID: id, Err: err}
	}
	state, sv, err := sessions.Unseal(id, rec)
	if err == nil && sv != sessions.Version(v) {
		err = fmt.Errorf("%w: the record holds version %d, the row says %d", sessions.ErrCorrupt, sv, v)
	}
	if err != nil {
		return nil, sessions.Absent, &sessions.IDError{Op: "load", ID: id, Err: err}
	}
	return state, sv, nil
}

// Save stores state if the session's version is expect; see [Sessions]
// and [sessions.Store].
func (s *Sessions) Save(ctx context.Context, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	ctx, cancel, err := s.start(ctx, "save", id)
	if err != nil {
		return sessions.Absent, err
	}
	defer cancel()
	v := expect.Next()
	rec := sessions.Seal(id, v, state)
	var done bool
	if expect == sessions.Absent {
		done, err = s.write(ctx, `INSERT INTO `+s.table()+` (id, version, state) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO NOTHING`, id, int64(v), rec)
	} else {
		done, err = s.write(ctx, `UPDATE `+s.table()+` SET version = $2, state = $3, saved = now()
			WHERE id = $1 AND version = $4`, id, int64(v), rec, int64(expect))
	}
	if err != nil {
		return sessions.Absent, &sessions.IDError{Op: "save", ID: id, Err: err}
	}
	if !done {
		return sessions.Absent, s.conflict(ctx, "save", id, expect)
	}
	return v, nil
}

// Delete removes the session if its version is expect; see
// [sessions.Deleter].
func (s *Sessions) Delete(ctx context.Context, id string, expect sessions.Version) error {
	ctx, cancel, err := s.start(ctx, "delete", id)
	if err != nil {
		return err
	}
	defer cancel()
	done, err := s.write(ctx, `DELETE FROM `+s.table()+` WHERE id = $1 AND version = $2`, id, int64(expect))
	if err != nil {
		return &sessions.IDError{Op: "delete", ID: id, Err: err}
	}
	if done {
		return nil
	}
	err = s.conflict(ctx, "delete", id, expect)
	var ce *sessions.ConflictError
	if errors.As(err, &ce) && ce.Stored == sessions.Absent {
		return &sessions.IDError{Op: "delete", ID: id, Err: sessions.ErrNotFound}
	}
	return err
}

// write runs one statement in a transaction committed with
// synchronous_commit on, and reports whether it changed a row.
func (s *Sessions) write(ctx context.Context, sql string, args ...any) (bool, error) {
	tx, err := s.DB.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit TO on`); err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// conflict returns the error of a Save or Delete that changed no row:
// a *sessions.ConflictError naming the version stored now.
func (s *Sessions) conflict(ctx context.Context, op, id string, expect sessions.Version) error {
	var v int64
	err := s.DB.QueryRow(ctx, `SELECT version FROM `+s.table()+` WHERE id = $1`, id).Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return &sessions.IDError{Op: op, ID: id, Err: err}
	}
	return &sessions.ConflictError{Op: op, ID: id, Expect: expect, Stored: sessions.Version(v)}
}

// Touch restarts the session's time to live without changing it; see
// [sessions.Toucher].
func (s *Sessions) Touch(ctx context.Context, id string) error {
	ctx, cancel, err := s.start(ctx, "touch", id)
	if err != nil {
		return err
	}
	defer cancel()
	tag, err := s.DB.Exec(ctx, `UPDATE `+s.table()+` SET saved = now() WHERE id = $1`, id)
	switch {
	case err != nil:
		return &sessions.IDError{Op: "touch", ID: id, Err: err}
	case tag.RowsAffected() == 0:
		return &sessions.IDError{Op: "touch", ID: id, Err: sessions.ErrNotFound}
	}
	return nil
}

// Sweep removes the sessions not saved or touched for TTL, by the
// database's clock, and returns how many it removed. With no TTL it
// removes nothing. Run it as often as stale sessions should go, from
// any host; Sweeps may run at once.
func (s *Sessions) Sweep(ctx context.Context) (int64, error) {
	if s.TTL <= 0 {
		return 0, nil
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("sessions: sweep %s: %w", s.table(), err)
	}
	defer cancel()
	tag, err := s.DB.Exec(ctx, `DELETE FROM `+s.table()+` WHERE saved < now() - $1::bigint * interval '1 microsecond'`, s.TTL.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("sessions: sweep %s: %w", s.table(), err)
	}
	return tag.RowsAffected(), nil
}

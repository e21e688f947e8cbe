// Package storetest checks that a [sessions.Store] keeps the store
// contract, in the manner of testing/fstest and testing/slogtest:
// [TestStore] returns an error listing every failure, and [Run] reports
// each check as a subtest.
//
// The checks: state round trips, empty, binary and large (several
// megabytes) state too, and each Save returns a new version; a missing
// session is an *sessions.IDError matching [sessions.ErrNotFound]; a
// create of an existing session and a Save with a stale or made-up
// version fail with a *sessions.ConflictError and change nothing; of
// concurrent Saves with the same expected version exactly one wins; 32
// goroutines that load, increment and save a counter, retrying on
// conflicts, leave it at exactly 32; first versions are random; the
// sessions of different tenants (ids made by [sessions.ID]) stay apart;
// Save keeps no reference to its argument and Load returns a copy; ids
// at [sessions.MaxIDLen] work and ids [sessions.ValidID] refuses are
// refused with [sessions.ErrBadID]; a call whose context is done fails
// with the context's error and changes nothing. A store that is a
// [sessions.Deleter] or [sessions.Toucher] has those methods checked
// too. Every check uses ids no earlier run used, so it may run against a
// store that outlives it (a shared database).
//
// Durability across processes and machine failures cannot be checked
// from inside one process: [Crash] kills processes mid-save, and
// [Stress] races replicas of a fleet on many sessions.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/internal/storecheck"
	"github.com/pruneguard/pruneguard/sessions"
)

// LargeSize is the size of the large state the suite saves.
const LargeSize = 5<<20 + 3

type check struct {
	name string
	run  func(ctx context.Context, s sessions.Store, ids *ids) error
}

var checks = []check{
	{"round trip", roundTrip},
	{"empty and binary state", emptyAndBinary},
	{"large state", largeState},
	{"not found", notFound},
	{"create twice", createTwice},
	{"stale version", staleVersion},
	{"racing creates", racingCreates},
	{"racing saves", racingSaves},
	{"counter", counter},
	{"first versions", firstVersions},
	{"tenants", tenants},
	{"copies", copies},
	{"bad ids", badIDs},
	{"valid ids", validIDs},
	{"done context", doneContext},
	{"delete", deleteCheck},
	{"touch", touchCheck},
}

// TestStore runs every check, each on a new store from newStore, with
// context.Background() (but for the check of done contexts), and
// returns nil when the store passes all of them, or an error listing
// every failure, one per line, each prefixed with its check's name.
// An error from newStore stops the run and is returned.
func TestStore(newStore func() (sessions.Store, error)) error {
	var errs []error
	for _, c := range checks {
		s, err := newStore()
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("storetest: new store: %w", err))...)
		}
		if err := c.run(context.Background(), s, newIDs()); err != nil {
			errs = append(errs, fmt.Errorf("storetest: %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs every check as a subtest of t, each on a new store from
// newStore, with the subtest's context (but for the check of done
// contexts).
func Run(t *testing.T, newStore func(t *testing.T) sessions.Store) {
	t.Helper()
	for _, c := range checks {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if err := c.run(t.Context(), newStore(t), newIDs()); err != nil {
				t.Error(err)
			}
		})
	}
}

// ids makes ids unique to one run of one check.
type ids struct{ prefix string }

func newIDs() *ids { return &ids{prefix: storecheck.Prefix()} }

func (k *ids) id(name string) string { return k.prefix + name }

// describe names state briefly in failure messages.
func describe(b []byte) string { return storecheck.Describe(b) }

// want checks that id holds exactly state at version v.
func want(ctx context.Context, s sessions.Store, id string, state []byte, v sessions.Version) error {
	got, gv, err := s.Load(ctx, id)
	if err != nil {
		return fmt.Errorf("Load(%q): %w", id, err)
	}
	if !bytes.Equal(got, state) {
		return fmt.Errorf("Load(%q) = %s, want %s", id, describe(got), describe(state))
	}
	if gv != v {
		return fmt.Errorf("Load(%q) = version %d, want %d, the version Save returned", id, gv, v)
	}
	return nil
}

// save saves state expecting expect, checks that the version is new and
// that the state comes back, and returns the version.
func save(ctx context.Context, s sessions.Store, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	v, err := s.Save(ctx, id, state, expect)
	if err != nil {
		return v, fmt.Errorf("Save(%q, %s, %d): %w", id, describe(state), expect, err)
	}
	if v == sessions.Absent || v == expect {
		return v, fmt.Errorf("Save(%q, %s, %d) returned version %d, want a new version", id, describe(state), expect, v)
	}
	return v, want(ctx, s, id, state, v)
}

// identified checks that err matches target and is an *sessions.IDError
// for id.
func identified(op, id string, err, target error) error {
	return storecheck.Named(op, id, err, target, "*sessions.IDError", "id", func(e *sessions.IDError) string { return e.ID })
}

// anyVersion stands for a stored version a check does not know.
const anyVersion = ^sessions.Version(0)

// conflict checks that err is a *sessions.ConflictError for id,
// matching sessions.ErrConflict, with the versions given (stored may be
// anyVersion).
func conflict(op, id string, err error, expect, stored sessions.Version) error {
	if err == nil {
		return fmt.Errorf("%s(%q) expecting version %d succeeded, want a conflict", op, id, expect)
	}
	var ce *sessions.ConflictError
	switch {
	case !errors.Is(err, sessions.ErrConflict):
		return fmt.Errorf("%s(%q): error %q does not match sessions.ErrConflict", op, id, err)
	case !errors.As(err, &ce):
		return fmt.Errorf("%s(%q): error %q is not a *sessions.ConflictError", op, id, err)
	case ce.ID != id:
		return fmt.Errorf("%s(%q): *sessions.ConflictError names id %q", op, id, ce.ID)
	case ce.Expect != expect:
		return fmt.Errorf("%s(%q): *sessions.ConflictError expects version %d, the call expected %d", op, id, ce.Expect, expect)
	case stored != anyVersion && ce.Stored != stored:
		return fmt.Errorf("%s(%q): *sessions.ConflictError says the store holds version %d, it holds %d", op, id, ce.Stored, stored)
	}
	return nil
}

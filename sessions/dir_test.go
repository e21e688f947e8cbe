package sessions_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/sessions"
)

func TestDirDamagedFile(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	d := sessions.Dir(dir)
	v, err := d.Save(ctx, "s1", []byte("a conversation"), sessions.Absent)
	require.NoError(t, err)
	path := filepath.Join(dir, "session-s1")
	good, err := os.ReadFile(path)
	require.NoError(t, err)

	changed := append([]byte{}, good...)
	changed[len(changed)-40] ^= 1
	for what, b := range map[string][]byte{
		"truncated":      good[:len(good)-1],
		"empty":          {},
		"a byte changed": changed,
		"another id's":   sessions.Seal("s2", v, []byte("a conversation")),
		"not a record":   []byte("plain text"),
	} {
		require.NoError(t, os.WriteFile(path, b, 0o600))
		got, _, err := d.Load(ctx, "s1")
		assert.Nil(t, got, what)
		assert.ErrorIs(t, err, sessions.ErrCorrupt, what)
		var ie *sessions.IDError
		if assert.ErrorAs(t, err, &ie, what) {
			assert.Equal(t, "s1", ie.ID, what)
		}
	}

	// A damaged body under an intact header: a Save with the version
	// the header names replaces it.
	require.NoError(t, os.WriteFile(path, good[:len(good)-1], 0o600))
	_, err = d.Save(ctx, "s1", []byte("x"), v+5)
	var ce *sessions.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, v, ce.Stored)
	v2, err := d.Save(ctx, "s1", []byte("repaired"), ce.Stored)
	require.NoError(t, err)
	got, gv, err := d.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "repaired", string(got))
	assert.Equal(t, v2, gv)

	// No header at all: Save cannot tell the version, Delete removes it.
	require.NoError(t, os.WriteFile(path, []byte("plain text"), 0o600))
	_, err = d.Save(ctx, "s1", []byte("x"), v2)
	assert.ErrorIs(t, err, sessions.ErrCorrupt)
	require.NoError(t, d.Delete(ctx, "s1", 12345))
	_, _, err = d.Load(ctx, "s1")
	assert.ErrorIs(t, err, sessions.ErrNotFound)
}

func TestDirModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "sessions")
	_, err := sessions.Dir(dir).Save(t.Context(), "s1", []byte("secret"), sessions.Absent)
	require.NoError(t, err)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	for _, name := range []string{"session-s1", "lock-s1"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
}

// Delete removes the lock file with the state; Save, Load and Delete of
// a missing directory say the session is missing.
func TestDirDeleteLeavesNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	d := sessions.Dir(dir)
	v, err := d.Save(ctx, "s1", []byte("x"), sessions.Absent)
	require.NoError(t, err)
	require.NoError(t, d.Delete(ctx, "s1", v))
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, files)

	missing := sessions.Dir(filepath.Join(dir, "none"))
	_, _, err = missing.Load(ctx, "s1")
	assert.ErrorIs(t, err, sessions.ErrNotFound)
	assert.ErrorIs(t, missing.Delete(ctx, "s1", v), sessions.ErrNotFound)
	_, err = os.Stat(string(missing))
	assert.True(t, errors.Is(err, os.ErrNotExist), "a Load or Delete creates no directory")
}

func TestZeroDir(t *testing.T) {
	ctx := t.Context()
	var d sessions.Dir
	_, err := d.Save(ctx, "s1", nil, sessions.Absent)
	assert.ErrorIs(t, err, sessions.ErrNoStore)
	_, _, err = d.Load(ctx, "s1")
	assert.ErrorIs(t, err, sessions.ErrNoStore)
	assert.ErrorIs(t, d.Delete(ctx, "s1", 1), sessions.ErrNoStore)
}

// A Save waiting for a lock another holds stops when its context ends.
func TestDirLockWaitsWithContext(t *testing.T) {
	for name, locks := range map[string]func(t *testing.T){
		"platform": func(*testing.T) {},
		"excl":     func(t *testing.T) { t.Cleanup(sessions.UseExclLocks()) },
	} {
		t.Run(name, func(t *testing.T) {
			locks(t)
			dir := t.TempDir()
			d := sessions.Dir(dir)
			v, err := d.Save(t.Context(), "s1", []byte("x"), sessions.Absent)
			require.NoError(t, err)
			unlock := sessions.HoldLock(t, dir, "s1")
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = d.Save(ctx, "s1", []byte("y"), v)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Less(t, time.Since(start), 2*time.Second)
			unlock()
			want(t, d, "s1", "x", v)
			_, err = d.Save(t.Context(), "s1", []byte("y"), v)
			assert.NoError(t, err, "the lock is free once released")
			files, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, f := range files {
				assert.NotContains(t, f.Name(), ".tmp-", "the Save that gave up left a temporary file")
			}
		})
	}
}

// Without flock, a lock file left by a crashed process is taken over
// once it is old.
func TestDirStaleExclLock(t *testing.T) {
	t.Cleanup(sessions.UseExclLocks())
	dir := t.TempDir()
	lock := filepath.Join(dir, "lock-s1")
	require.NoError(t, os.WriteFile(lock, nil, 0o600))
	old := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(lock, old, old))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := sessions.Dir(dir).Save(ctx, "s1", []byte("x"), sessions.Absent)
	require.NoError(t, err)
	_, err = os.Stat(lock)
	assert.True(t, errors.Is(err, os.ErrNotExist), "the lock is released")
}

// want checks that id holds state at version v.
func want(t *testing.T, s sessions.Store, id, state string, v sessions.Version) {
	t.Helper()
	got, gv, err := s.Load(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, state, string(got))
	assert.Equal(t, v, gv)
}

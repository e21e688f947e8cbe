package spill_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// age sets the modification time of every file in dir an hour back, as
// time passing would, and returns that time.
func age(t *testing.T, dir string) time.Time {
	t.Helper()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	files, err := filepath.Glob(filepath.Join(dir, "spill-*"))
	require.NoError(t, err)
	for _, f := range files {
		require.NoError(t, os.Chtimes(f, old, old))
	}
	return old
}

func mtime(t *testing.T, dir, key string) time.Time {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "spill-"+key))
	require.NoError(t, err)
	return fi.ModTime()
}

// A session keeps its segments alive on a store that expires what is
// not touched: Touch, Verify and a spill that finds its segment stored
// each start the segment's lifetime again. Another namespace's segment is
// not touched.
func TestTouchKeepsSegmentsAlive(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := &spill.Spiller{Store: spill.Dir(dir), Namespace: "sess-1"}
	ms := ticketMessages(`{"ticket":"INC-4711"}`)
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	other, err := (&spill.Spiller{Store: spill.Dir(dir), Namespace: "sess-2"}).SpillMessages(ctx, ms)
	require.NoError(t, err)

	old := age(t, dir)
	require.NoError(t, s.Touch(ctx, p, p))
	assert.True(t, mtime(t, dir, p.Key).After(old), "touched")
	assert.ErrorIs(t, s.Touch(ctx, other), spill.ErrNotFound, "another session's segment")
	assert.Equal(t, old, mtime(t, dir, other.Key), "is not touched")
	assert.ErrorIs(t, s.Touch(ctx, pruneguard.Pointer{Store: "elsewhere", Key: p.Key}), spill.ErrForeignPointer)

	old = age(t, dir)
	require.NoError(t, (&spill.Spiller{Store: spill.Dir(dir), Namespace: "sess-1"}).Verify(ctx, p))
	assert.True(t, mtime(t, dir, p.Key).After(old), "Verify touches")

	old = age(t, dir)
	again, err := (&spill.Spiller{Store: spill.Dir(dir), Namespace: "sess-1"}).SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.Equal(t, p, again)
	assert.True(t, mtime(t, dir, p.Key).After(old), "a spill that finds its segment stored touches it")

	old = age(t, dir)
	again, err = s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.Equal(t, p, again)
	assert.True(t, mtime(t, dir, p.Key).After(old), "so does one by the Spiller that wrote it")
}

// A segment a sweeper removed stops resolving when a touch finds it
// gone, and spilling its messages again stores it again, under its key.
func TestTouchFindsSweptSegments(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := &spill.Spiller{Store: spill.Dir(dir)}
	ms := ticketMessages(`{"ticket":"INC-4711"}`)
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "spill-"+p.Key)))
	assert.True(t, s.Resolvable(p), "answered from memory")
	assert.ErrorIs(t, s.Touch(ctx, p), spill.ErrNotFound)
	assert.False(t, s.Resolvable(p), "the loss is remembered")

	again, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.Equal(t, p, again)
	assert.True(t, s.Resolvable(p))
	back, err := (&spill.Spiller{Store: spill.Dir(dir)}).Recall(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, ms, back)

	// The Spiller that knows it: a spill finds it swept, and stores it again.
	require.NoError(t, os.Remove(filepath.Join(dir, "spill-"+p.Key)))
	again, err = s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.Equal(t, p, again)
	_, err = os.Stat(filepath.Join(dir, "spill-"+p.Key))
	assert.NoError(t, err, "written again")
}

// On a store that expires nothing, Touch does nothing.
func TestTouchWithoutExpiry(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: &spill.Memory{}}
	s := &spill.Spiller{Store: store}
	p, err := s.SpillMessages(ctx, ticketMessages("x"))
	require.NoError(t, err)
	gets := store.gets.Load()
	assert.NoError(t, s.Touch(ctx, p, pruneguard.Pointer{Store: "other", Key: "k"}))
	assert.Equal(t, gets, store.gets.Load())
	var zero spill.Spiller
	assert.ErrorIs(t, zero.Touch(ctx, p), spill.ErrNoStore)
}

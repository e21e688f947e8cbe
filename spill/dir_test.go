package spill_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/spill"
)

func TestDirFiles(t *testing.T) {
	ctx := t.Context()
	d := spill.Dir(filepath.Join(t.TempDir(), "new", "store"))
	require.NoError(t, d.Put(ctx, "k1", []byte("secret nonce")))
	entries, err := os.ReadDir(string(d))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
	assert.Equal(t, "spill-k1", entries[0].Name())
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(string(d))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o700), fi.Mode().Perm(), "the directory is private")
		fi, err = os.Stat(filepath.Join(string(d), "spill-k1"))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "content files are private")
	}
	b, err := os.ReadFile(filepath.Join(string(d), "spill-k1"))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(b), "secret nonce"))
	assert.Greater(t, len(b), len("secret nonce")+32, "a header with a checksum")
}

func TestDirRefusesDamagedFiles(t *testing.T) {
	ctx := t.Context()
	content := []byte("exit code 137 under cgroup A")
	for name, damage := range map[string]func([]byte) []byte{
		"flipped content byte": func(b []byte) []byte { b[len(b)-3] ^= 0x20; return b },
		"flipped header byte":  func(b []byte) []byte { b[len(b)-len(content)-5] ^= 1; return b },
		"flipped magic":        func(b []byte) []byte { b[0] ^= 1; return b },
		"appended byte":        func(b []byte) []byte { return append(b, 'x') },
		"empty file":           func([]byte) []byte { return nil },
		"raw content":          func([]byte) []byte { return content },
	} {
		t.Run(name, func(t *testing.T) {
			d := spill.Dir(t.TempDir())
			require.NoError(t, d.Put(ctx, "k", content))
			path := filepath.Join(string(d), "spill-k")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, damage(b), 0o600))
			got, err := d.Get(ctx, "k")
			assert.Nil(t, got, "damaged content is never returned")
			assert.ErrorIs(t, err, spill.ErrCorrupt)
			var ke *spill.KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, "k", ke.Key)
		})
	}
}

func TestDirRefusesEveryTruncation(t *testing.T) {
	ctx := t.Context()
	d := spill.Dir(t.TempDir())
	require.NoError(t, d.Put(ctx, "k", []byte("a measurement taken under conditions that no longer exist")))
	path := filepath.Join(string(d), "spill-k")
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	for n := range len(full) {
		require.NoError(t, os.WriteFile(path, full[:n], 0o600))
		_, err := d.Get(ctx, "k")
		require.ErrorIs(t, err, spill.ErrCorrupt, "truncated to %d of %d bytes", n, len(full))
	}
}

func TestDirRefusesMovedFile(t *testing.T) {
	ctx := t.Context()
	d := spill.Dir(t.TempDir())
	require.NoError(t, d.Put(ctx, "a", []byte("content of a")))
	b, err := os.ReadFile(filepath.Join(string(d), "spill-a"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(string(d), "spill-b"), b, 0o600))
	_, err = d.Get(ctx, "b")
	assert.ErrorIs(t, err, spill.ErrCorrupt, "a file is bound to its key")
}

func TestDirIgnoresStrayTempFiles(t *testing.T) {
	ctx := t.Context()
	d := spill.Dir(t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(string(d), ".tmp-123"), []byte("half"), 0o600))
	require.NoError(t, d.Put(ctx, "k", []byte("v")))
	got, err := d.Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
}

func TestZeroDir(t *testing.T) {
	ctx := t.Context()
	var d spill.Dir
	assert.ErrorIs(t, d.Put(ctx, "k", []byte("v")), spill.ErrNoStore)
	_, err := d.Get(ctx, "k")
	assert.ErrorIs(t, err, spill.ErrNoStore)
	_, err = os.Stat("spill-k")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "nothing written to the working directory")
}

func TestDirUnwritable(t *testing.T) {
	ctx := t.Context()
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a user that permissions bind")
	}
	parent := t.TempDir()
	require.NoError(t, os.Chmod(parent, 0o500))
	t.Cleanup(func() { os.Chmod(parent, 0o700) })
	d := spill.Dir(filepath.Join(parent, "store"))
	err := d.Put(ctx, "k", []byte("v"))
	assert.ErrorIs(t, err, fs.ErrPermission)
	var ke *spill.KeyError
	assert.ErrorAs(t, err, &ke)
}

func TestDirFileInTheWay(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	d := spill.Dir(path)
	err := d.Put(ctx, "k", []byte("v"))
	require.Error(t, err)
	assert.NotErrorIs(t, err, spill.ErrKeyExists)
	_, err = d.Get(ctx, "k")
	assert.Error(t, err)
}

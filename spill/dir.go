package spill

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Dir is a Store of files in one directory, one file per key. The file
// of key K is named "spill-K"; temporary files start with ".tmp-", so no
// key can name one. The directory is created (mode 0700) on the first Put;
// files are created with mode 0600, since spilled content may hold
// secrets.
//
// Put writes the content behind a header with its key, length and
// SHA-256 (see [Seal]) to a temporary file, syncs it, links it under
// the key's name only if that name is free (so an existing key is never
// replaced, even by a concurrent Put), and syncs the directory before it
// returns. A crash leaves either no file under the key's name or the whole
// file, and at worst a stray temporary file. Get checks the header and
// refuses a truncated or damaged file with an error matching [ErrCorrupt].
// The file system must support hard links, as the usual Unix ones and
// NTFS do.
//
// The context is checked when Put and Get start and again before Put
// links the file under the key's name; a file operation under way is not
// interrupted.
//
// A Dir is a [Lister] and a [Toucher]: it expires nothing itself, but
// Touch sets a file's modification time, so a sweeper that removes files
// not modified for longer than a session lives (find -mtime, a cron job)
// keeps every segment a live session touches.
//
// The zero Dir ("") names no directory: its methods fail with
// [ErrNoStore]. A Dir is safe for concurrent use, by several processes
// too.
type Dir string

// filePrefix starts the name of every content file of a Dir.
const filePrefix = "spill-"

func (d Dir) path(key string) string {
	return filepath.Join(string(d), filePrefix+key)
}

// Put writes content under key durably; see [Dir].
func (d Dir) Put(ctx context.Context, key string, content []byte) error {
	if d == "" {
		return keyErr("put", key, ErrNoStore)
	}
	if !ValidKey(key) {
		return keyErr("put", key, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return keyErr("put", key, err)
	}
	if err := d.mkdir(); err != nil {
		return keyErr("put", key, err)
	}
	final := d.path(key)
	if _, err := os.Lstat(final); err == nil {
		return keyErr("put", key, ErrKeyExists)
	}
	tmp, err := os.CreateTemp(string(d), ".tmp-*")
	if err != nil {
		return keyErr("put", key, err)
	}
	_, werr := tmp.Write(sealHeader(key, content))
	if werr == nil {
		_, werr = tmp.Write(content)
	}
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, ctx.Err()); err != nil {
		os.Remove(tmp.Name())
		return keyErr("put", key, err)
	}
	// Link, unlike rename, never replaces an existing name.
	lerr := os.Link(tmp.Name(), final)
	os.Remove(tmp.Name())
	if errors.Is(lerr, fs.ErrExist) {
		return keyErr("put", key, ErrKeyExists)
	}
	if lerr != nil {
		return keyErr("put", key, lerr)
	}
	if err := syncDir(string(d)); err != nil {
		return keyErr("put", key, err)
	}
	return nil
}

// Remove removes the file of key, if there is one; see [Remover].
func (d Dir) Remove(ctx context.Context, key string) error {
	if d == "" {
		return keyErr("remove", key, ErrNoStore)
	}
	if !ValidKey(key) {
		return keyErr("remove", key, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return keyErr("remove", key, err)
	}
	if err := os.Remove(d.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return keyErr("remove", key, err)
	}
	return nil
}

// Get reads the file of key and returns its content once the header
// checks out.
func (d Dir) Get(ctx context.Context, key string) ([]byte, error) {
	if d == "" {
		return nil, keyErr("get", key, ErrNoStore)
	}
	if !ValidKey(key) {
		return nil, keyErr("get", key, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, keyErr("get", key, err)
	}
	b, err := os.ReadFile(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, keyErr("get", key, ErrNotFound)
	}
	if err != nil {
		return nil, keyErr("get", key, err)
	}
	content, err := Unseal(key, b)
	if err != nil {
		return nil, keyErr("get", key, err)
	}
	return content, nil
}

// List returns the keys of the files in the directory that start with
// prefix, in ascending order; see [Lister]. A directory that does not
// exist yet holds no keys.
func (d Dir) List(ctx context.Context, prefix string) ([]string, error) {
	if d == "" {
		return nil, keyErr("list", prefix, ErrNoStore)
	}
	if !validPrefix(prefix) {
		return nil, keyErr("list", prefix, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, keyErr("list", prefix, err)
	}
	ents, err := os.ReadDir(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, keyErr("list", prefix, err)
	}
	var keys []string // ReadDir sorts by name, so by key
	for _, e := range ents {
		key, ok := strings.CutPrefix(e.Name(), filePrefix+prefix)
		if ok && e.Type().IsRegular() && ValidKey(prefix+key) {
			keys = append(keys, prefix+key)
		}
	}
	return keys, nil
}

// Touch sets the modification time of the file of key to now, so that a
// sweeper that removes files not modified for a while (find -mtime, a
// cron job) keeps it; see [Toucher]. A Dir expires nothing itself.
func (d Dir) Touch(ctx context.Context, key string) error {
	if d == "" {
		return keyErr("touch", key, ErrNoStore)
	}
	if !ValidKey(key) {
		return keyErr("touch", key, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return keyErr("touch", key, err)
	}
	now := time.Now()
	err := os.Chtimes(d.path(key), now, now)
	if errors.Is(err, fs.ErrNotExist) {
		return keyErr("touch", key, ErrNotFound)
	}
	if err != nil {
		return keyErr("touch", key, err)
	}
	return nil
}

// mkdir creates the directory if it does not exist, and makes its entry
// in the parent durable.
func (d Dir) mkdir() error {
	if _, err := os.Stat(string(d)); err == nil {
		return nil
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	return syncDir(filepath.Dir(filepath.Clean(string(d))))
}

// syncDir makes the entries of a directory durable. Windows cannot sync a
// directory, and does not need to.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := f.Sync()
	return errors.Join(serr, f.Close())
}

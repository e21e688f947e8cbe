package sessions

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Dir is a Store of files in one directory: the default for a runtime
// embedded in one machine's processes. The state of id I is the file
// "session-I"; "lock-I" is its lock file; temporary files start with
// ".tmp-". The directory is created (mode 0700) on the first Save; files
// are created with mode 0600, since saved state may hold secrets.
// Nothing expires.
//
// Save takes an exclusive lock on the id's lock file (flock(2) on Linux,
// the BSDs and macOS; released by the system when a process dies), reads
// the version of the current record, and if it is the one expected
// writes the new record (see [Seal]) to a temporary file, syncs it,
// renames it over the id's file and syncs the directory before it
// returns. A crash at any moment leaves the previous state or the new
// one, whole and loadable, and at worst a stray temporary file. Load
// takes no lock: it reads whichever whole file the id's name holds, and
// refuses a truncated or damaged one with an error matching
// [ErrCorrupt]. Delete removes the id's files under the lock.
//
// On systems without flock the lock is a file created exclusively and
// removed on unlock; a lock file older than 30 seconds is taken as left
// by a crashed process and removed, so there a Save that stalls for
// longer than that may overlap another.
//
// A Save or Delete waiting for the lock stops when its context is done;
// the context is checked again before the new file is renamed into
// place. A file operation under way is not interrupted.
//
// The zero Dir ("") names no directory: every method fails with
// [ErrNoStore]. A Dir is safe for concurrent use, by several processes
// on one machine too (not over a network file system).
type Dir string

var _ Deleter = Dir("")

const (
	statePrefix = "session-"
	lockPrefix  = "lock-"
)

func (d Dir) path(prefix, id string) string {
	return filepath.Join(string(d), prefix+id)
}

// check refuses a zero Dir, a bad id and a done context.
func (d Dir) check(ctx context.Context, op, id string) error {
	if d == "" {
		return idErr(op, id, ErrNoStore)
	}
	return check(ctx, op, id)
}

// Load reads the id's file and returns its state once the record checks
// out.
func (d Dir) Load(ctx context.Context, id string) ([]byte, Version, error) {
	if err := d.check(ctx, "load", id); err != nil {
		return nil, Absent, err
	}
	b, err := os.ReadFile(d.path(statePrefix, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Absent, idErr("load", id, ErrNotFound)
	}
	if err != nil {
		return nil, Absent, idErr("load", id, err)
	}
	state, v, err := Unseal(id, b)
	if err != nil {
		return nil, Absent, idErr("load", id, err)
	}
	return state, v, nil
}

// Save writes state under id if the session's version is expect; see
// [Dir] and [Store].
func (d Dir) Save(ctx context.Context, id string, state []byte, expect Version) (Version, error) {
	if err := d.check(ctx, "save", id); err != nil {
		return Absent, err
	}
	if err := d.mkdir(); err != nil {
		return Absent, idErr("save", id, err)
	}
	unlock, err := lockID(ctx, d.path(lockPrefix, id))
	if err != nil {
		return Absent, idErr("save", id, err)
	}
	defer unlock(false)
	cur, err := d.version(id)
	if err != nil {
		return Absent, idErr("save", id, err)
	}
	if cur != expect {
		return Absent, &ConflictError{Op: "save", ID: id, Expect: expect, Stored: cur}
	}
	v := expect.Next()
	if err := d.replace(ctx, id, Seal(id, v, state)); err != nil {
		return Absent, idErr("save", id, err)
	}
	return v, nil
}

// Delete removes the session if its version is expect; see [Deleter].
// A file too damaged to tell its version is removed whatever expect is.
func (d Dir) Delete(ctx context.Context, id string, expect Version) error {
	if err := d.check(ctx, "delete", id); err != nil {
		return err
	}
	if _, err := os.Stat(string(d)); errors.Is(err, fs.ErrNotExist) {
		return idErr("delete", id, ErrNotFound)
	}
	unlock, err := lockID(ctx, d.path(lockPrefix, id))
	if err != nil {
		return idErr("delete", id, err)
	}
	cur, err := d.version(id)
	switch {
	case err == nil && cur == Absent:
		unlock(true)
		return idErr("delete", id, ErrNotFound)
	case err == nil && cur != expect:
		unlock(false)
		return &ConflictError{Op: "delete", ID: id, Expect: expect, Stored: cur}
	case err != nil && !errors.Is(err, ErrCorrupt):
		unlock(false)
		return idErr("delete", id, err)
	}
	defer unlock(true)
	if err := os.Remove(d.path(statePrefix, id)); err != nil {
		return idErr("delete", id, err)
	}
	if err := syncDir(string(d)); err != nil {
		return idErr("delete", id, err)
	}
	return nil
}

// version reads the version in the header of the id's file: Absent when
// there is no file.
func (d Dir) version(id string) (Version, error) {
	f, err := os.Open(d.path(statePrefix, id))
	if errors.Is(err, fs.ErrNotExist) {
		return Absent, nil
	}
	if err != nil {
		return Absent, err
	}
	defer f.Close()
	b := make([]byte, sealedHeaderLen)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Absent, err
	}
	v, _, err := sealedHeader(id, b[:n])
	return v, err
}

// replace writes rec to a temporary file, syncs it and renames it over
// the id's file, then syncs the directory.
func (d Dir) replace(ctx context.Context, id string, rec []byte) error {
	tmp, err := os.CreateTemp(string(d), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(rec)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, ctx.Err()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), d.path(statePrefix, id)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return syncDir(string(d))
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

// syncDir makes the entries of a directory durable. Windows cannot sync
// a directory, and does not need to.
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

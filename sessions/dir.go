package sessions

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pruneguard/pruneguard/internal/durable"
)

// Dir is a Store of files in one directory: the default for a runtime
// embedded in one machine's processes. The state of id I is the file
// "session-I"; "lock-I" is its lock file; temporary files start with
// ".tmp-". The directory is created (mode 0700) on the first Save; files
// are created with mode 0600, since saved state may hold secrets.
// Nothing expires.
//
// Save writes the new record (see [Seal]) to a temporary file and syncs
// it; then, under an exclusive lock on the id's lock file (flock(2) on
// Linux, the BSDs and macOS; released by the system when a process
// dies), it checks that the version of the current record is the one
// expected and renames the temporary file over the id's file; it syncs
// the directory before it returns. The lock is held only for the check
// and the rename. A crash at any moment leaves the previous state or the
// new one, whole and loadable, and at worst a stray temporary file. Load
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
// place. A file operation under way is not interrupted. A Save whose
// version is stale fails before it writes anything.
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
	if err := durable.Mkdir(string(d)); err != nil {
		return Absent, idErr("save", id, err)
	}
	// A stale version fails at once, before any write.
	if err := d.expect(id, expect); err != nil {
		return Absent, err
	}
	v := expect.Next()
	tmp, err := durable.WriteTemp(string(d), Seal(id, v, state))
	if err != nil {
		return Absent, idErr("save", id, err)
	}
	defer os.Remove(tmp) // gone once renamed
	if err := d.swap(ctx, id, tmp, expect); err != nil {
		return Absent, err
	}
	if err := durable.SyncDir(string(d)); err != nil {
		return Absent, idErr("save", id, err)
	}
	return v, nil
}

// expect checks that the session's version is expect.
func (d Dir) expect(id string, expect Version) error {
	cur, err := d.version(id)
	if err != nil {
		return idErr("save", id, err)
	}
	if cur != expect {
		return &ConflictError{Op: "save", ID: id, Expect: expect, Stored: cur}
	}
	return nil
}

// swap renames tmp over the id's file if the session's version is still
// expect, under the id's lock, which it holds for no longer than that.
func (d Dir) swap(ctx context.Context, id, tmp string, expect Version) error {
	unlock, err := lockID(ctx, d.path(lockPrefix, id))
	if err != nil {
		return idErr("save", id, err)
	}
	defer unlock(false)
	if err := d.expect(id, expect); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return idErr("save", id, err)
	}
	if err := os.Rename(tmp, d.path(statePrefix, id)); err != nil {
		return idErr("save", id, err)
	}
	return nil
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
	if err := durable.SyncDir(string(d)); err != nil {
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

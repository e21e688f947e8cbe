// Package durable writes the files of the directory stores (spill.Dir,
// sessions.Dir) so that a crash leaves either a whole file or none: a
// temporary file written and synced, then linked or renamed into place,
// then the directory synced.
package durable

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// TempPattern names the temporary files WriteTemp makes: they start with
// ".tmp-", which no key or id of a store can.
const TempPattern = ".tmp-*"

// Mkdir creates dir (mode 0700) if it does not exist, and makes its entry
// in the parent durable.
func Mkdir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(filepath.Clean(dir)))
}

// SyncDir makes the entries of a directory durable. Windows cannot sync a
// directory, and does not need to.
func SyncDir(dir string) error {
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

// WriteTemp writes parts, in order, to a new temporary file in dir (mode
// 0600), syncs and closes it, and returns its name. On any error it
// removes the file.
func WriteTemp(dir string, parts ...[]byte) (string, error) {
	tmp, err := os.CreateTemp(dir, TempPattern)
	if err != nil {
		return "", err
	}
	var werr error
	for _, p := range parts {
		if _, werr = tmp.Write(p); werr != nil {
			break
		}
	}
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sessions

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// lockID takes the lock of one id of a Dir: flock here.
var lockID = flockID

// flockID locks path with flock(2), which the system releases when the
// process dies. A Delete may remove the file between its opening and
// its locking, so the lock counts only if path still names the file
// locked.
func flockID(ctx context.Context, path string) (unlockFunc, error) {
	var w backoff
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flock(ctx, f, &w); err != nil {
			f.Close()
			return nil, err
		}
		if same(f, path) {
			return func(remove bool) {
				if remove {
					os.Remove(path)
				}
				f.Close()
			}, nil
		}
		f.Close()
	}
}

// flock takes an exclusive flock on f, waiting while another holds it.
func flock(ctx context.Context, f *os.File, w *backoff) error {
	fd := int(f.Fd())
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		if err := w.wait(ctx); err != nil {
			return err
		}
	}
}

// same reports whether path names the file f has open.
func same(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

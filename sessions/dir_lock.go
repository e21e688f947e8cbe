package sessions

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"time"
)

// unlockFunc releases a lock of a Dir; remove also removes the lock
// file, which only the holder of the lock may do.
type unlockFunc func(remove bool)

// staleLockAge is how old a lock file made by exclLockID must be to be
// taken as left by a crashed process.
const staleLockAge = 30 * time.Second

// exclLockID locks path by creating it exclusively, for systems without
// flock: a crashed holder leaves the file, so one older than
// staleLockAge is removed.
func exclLockID(ctx context.Context, path string) (unlockFunc, error) {
	var w backoff
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			if err := f.Close(); err != nil {
				os.Remove(path)
				return nil, err
			}
			return func(bool) { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > staleLockAge {
			os.Remove(path)
			continue
		}
		if err := w.wait(ctx); err != nil {
			return nil, err
		}
	}
}

// backoff waits between attempts to take a lock: from 50µs, doubling up
// to 5ms, each wait drawn at random around its step so that waiters do
// not move in step.
type backoff struct{ step time.Duration }

func (b *backoff) wait(ctx context.Context) error {
	switch {
	case b.step == 0:
		b.step = 50 * time.Microsecond
	case b.step < 5*time.Millisecond:
		b.step *= 2
	}
	t := time.NewTimer(b.step/2 + rand.N(b.step))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

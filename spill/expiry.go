package spill

import (
	"context"
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
)

// Touch puts off the expiry of the segments ps point to, on a store that
// expires content (a [Toucher]); on another store it does nothing. A
// session calls it with the pointers it still holds (those of its
// Context's messages, [pruneguard.Message.Pointer]) whenever it is used
// or saved, at least once per lifetime the store gives a key, so that
// expiry never removes a segment a live session points to; a segment no
// live session touches expires with its store's lifetime. Verify touches
// the segment it checks, and a spill that finds its segment stored
// already touches it, so a restored session's pointers and reused
// segments start a new lifetime.
//
// Each distinct pointer is touched once. A pointer of another store
// fails with [ErrForeignPointer], a key of another namespace with
// [ErrNotFound] (it is not touched); a segment the store no longer holds
// fails with [ErrNotFound] and stops resolving. The errors are joined,
// one per pointer; Touch goes on after a failure, and stops when ctx is
// done.
func (s *Spiller) Touch(ctx context.Context, ps ...pruneguard.Pointer) error {
	if !s.ready() {
		return ErrNoStore
	}
	t, ok := s.Store.(Toucher)
	if !ok {
		return nil
	}
	var errs []error
	seen := make(map[pruneguard.Pointer]bool, len(ps))
	for _, p := range ps {
		if seen[p] {
			continue
		}
		seen[p] = true
		if err := s.touchPointer(ctx, t, p); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

func (s *Spiller) touchPointer(ctx context.Context, t Toucher, p pruneguard.Pointer) error {
	switch {
	case p.Store != s.name():
		return keyErr("touch", p.Key, fmt.Errorf("%w: %q, not %q", ErrForeignPointer, p.Store, s.name()))
	case !ValidKey(p.Key):
		return keyErr("touch", p.Key, ErrBadKey)
	case !s.owns(p.Key):
		return keyErr("touch", p.Key, errOtherNamespace)
	}
	return s.touch(ctx, t, "touch", p.Key)
}

// touch touches key on t, and remembers a key t no longer holds.
func (s *Spiller) touch(ctx context.Context, t Toucher, op, key string) error {
	err := t.Touch(ctx, key)
	if errors.Is(err, ErrNotFound) {
		s.remember(key, entry{err: err})
	}
	if err != nil {
		return wrapKey(op, key, err)
	}
	return nil
}

// refresh touches key when the store is a Toucher.
func (s *Spiller) refresh(ctx context.Context, op, key string) error {
	if t, ok := s.Store.(Toucher); ok {
		return s.touch(ctx, t, op, key)
	}
	return nil
}

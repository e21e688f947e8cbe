package storetest

import (
	"context"
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard/internal/storecheck"
	"github.com/pruneguard/pruneguard/sessions"
)

// doneContext checks that a call whose context was cancelled, or whose
// deadline passed, before it started fails with the context's error in
// an *sessions.IDError, and changes nothing.
func doneContext(ctx context.Context, s sessions.Store, k *ids) error {
	dones, cancel := storecheck.DoneContexts(ctx)
	defer cancel()
	var errs []error
	for _, c := range dones {
		id := k.id(c.Name + "-create")
		_, err := s.Save(c.Ctx, id, []byte("never stored"), sessions.Absent)
		errs = append(errs, identified("Save with "+c.What, id, err, c.Want))
		_, _, err = s.Load(ctx, id)
		errs = append(errs, identified("Load after a Save with "+c.What, id, err, sessions.ErrNotFound))

		id = k.id(c.Name + "-update")
		v, err := save(ctx, s, id, []byte("saved with a live context"), sessions.Absent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = s.Save(c.Ctx, id, []byte("never stored"), v)
		errs = append(errs, identified("Save with "+c.What, id, err, c.Want))
		_, _, err = s.Load(c.Ctx, id)
		errs = append(errs, identified("Load with "+c.What, id, err, c.Want))
		if d, ok := s.(sessions.Deleter); ok {
			errs = append(errs, identified("Delete with "+c.What, id, d.Delete(c.Ctx, id, v), c.Want))
		}
		if t, ok := s.(sessions.Toucher); ok {
			errs = append(errs, identified("Touch with "+c.What, id, t.Touch(c.Ctx, id), c.Want))
		}
		errs = append(errs, want(ctx, s, id, []byte("saved with a live context"), v))
	}
	return errors.Join(errs...)
}

// deleteCheck checks a Deleter: a missing session and a stale version
// are refused; a Delete with the version removes the session; a Save
// with a version of its earlier life then conflicts, and the session
// created anew starts at a version it never had.
func deleteCheck(ctx context.Context, s sessions.Store, k *ids) error {
	d, ok := s.(sessions.Deleter)
	if !ok {
		return nil
	}
	id := k.id("deleted")
	errs := []error{identified("Delete of a missing session", id, d.Delete(ctx, id, 1), sessions.ErrNotFound)}
	v1, err := save(ctx, s, id, []byte("first life"), sessions.Absent)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	v2, err := save(ctx, s, id, []byte("first life, second turn"), v1)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs,
		conflict("Delete with a stale version", id, d.Delete(ctx, id, v1), v1, v2),
		want(ctx, s, id, []byte("first life, second turn"), v2))
	if err := d.Delete(ctx, id, v2); err != nil {
		return errors.Join(append(errs, fmt.Errorf("Delete(%q, %d): %w", id, v2, err))...)
	}
	_, _, err = s.Load(ctx, id)
	errs = append(errs, identified("Load after Delete", id, err, sessions.ErrNotFound))
	_, err = s.Save(ctx, id, []byte("from a replica of the first life"), v2)
	errs = append(errs, conflict("Save after Delete", id, err, v2, sessions.Absent))
	v3, err := save(ctx, s, id, []byte("second life"), sessions.Absent)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if v3 == v1 || v3 == v2 || v3 == v2+1 {
		errs = append(errs, fmt.Errorf("Save(%q) created version %d after versions %d and %d: a replica of the first life could overwrite the second", id, v3, v1, v2))
	}
	_, err = s.Save(ctx, id, []byte("from a replica of the first life"), v1)
	errs = append(errs, conflict("Save with a version of the first life", id, err, v1, v3))
	return errors.Join(errs...)
}

// touchCheck checks a Toucher: a missing session is refused, and Touch
// changes neither state nor version.
func touchCheck(ctx context.Context, s sessions.Store, k *ids) error {
	t, ok := s.(sessions.Toucher)
	if !ok {
		return nil
	}
	id := k.id("touched")
	errs := []error{identified("Touch of a missing session", id, t.Touch(ctx, id), sessions.ErrNotFound)}
	v, err := save(ctx, s, id, []byte("touched, not changed"), sessions.Absent)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := t.Touch(ctx, id); err != nil {
		errs = append(errs, fmt.Errorf("Touch(%q): %w", id, err))
	}
	errs = append(errs, want(ctx, s, id, []byte("touched, not changed"), v))
	_, err = save(ctx, s, id, []byte("saved after a Touch"), v)
	return errors.Join(append(errs, err)...)
}

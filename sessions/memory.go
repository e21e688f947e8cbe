package sessions

import (
	"bytes"
	"context"
	"sync"
)

// Memory is a Store in memory, for tests and for runtimes of one process
// that need not outlive it: its sessions last as long as the process.
// Nothing expires. The zero Memory is an empty store, ready to use. It
// is safe for concurrent use; it must not be copied after first use.
type Memory struct {
	mu sync.Mutex
	m  map[string]memEntry
}

type memEntry struct {
	v     Version
	state []byte
}

var _ Deleter = (*Memory)(nil)

// check refuses a bad id and a done context.
func check(ctx context.Context, op, id string) error {
	if !ValidID(id) {
		return idErr(op, id, ErrBadID)
	}
	if err := ctx.Err(); err != nil {
		return idErr(op, id, err)
	}
	return nil
}

// Load returns a copy of the session's state and its version.
func (s *Memory) Load(ctx context.Context, id string) ([]byte, Version, error) {
	if err := check(ctx, "load", id); err != nil {
		return nil, Absent, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return nil, Absent, idErr("load", id, ErrNotFound)
	}
	return bytes.Clone(e.state), e.v, nil
}

// Save stores a copy of state if the session's version is expect; see
// [Store].
func (s *Memory) Save(ctx context.Context, id string, state []byte, expect Version) (Version, error) {
	if err := check(ctx, "save", id); err != nil {
		return Absent, err
	}
	b := bytes.Clone(state)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.m[id].v; cur != expect {
		return Absent, &ConflictError{Op: "save", ID: id, Expect: expect, Stored: cur}
	}
	if s.m == nil {
		s.m = make(map[string]memEntry)
	}
	v := expect.Next()
	s.m[id] = memEntry{v: v, state: b}
	return v, nil
}

// Delete removes the session if its version is expect; see [Deleter].
func (s *Memory) Delete(ctx context.Context, id string, expect Version) error {
	if err := check(ctx, "delete", id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	switch {
	case !ok:
		return idErr("delete", id, ErrNotFound)
	case e.v != expect:
		return &ConflictError{Op: "delete", ID: id, Expect: expect, Stored: e.v}
	}
	delete(s.m, id)
	return nil
}

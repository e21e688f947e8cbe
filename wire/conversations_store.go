package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pruneguard/pruneguard/sessions"
)

// ErrSessionStore is matched (with errors.Is) by the error of a
// [Conversations] with a session store (ConversationsConfig.Sessions)
// when the store failed it: a Load or Save that failed, a state stored
// that does not restore, or a conversation whose session other replicas
// kept saving while the request was guarded. It is returned as a
// *[StoreError].
var ErrSessionStore = errors.New("wire: session store failed")

// ErrConflicts is matched by the *[StoreError] of a request that lost
// the race for its conversation's session to other replicas
// ConversationsConfig.MaxConflicts times in a row. Its error matches
// [sessions.ErrConflict] too.
var ErrConflicts = errors.New("wire: the conversation's session kept changing under the request")

// StoreError reports a request that [Conversations] did not guard
// because its session store failed. It matches [ErrSessionStore], and
// wraps the store's error (a *sessions.IDError, a *sessions.ConflictError,
// a context's error) or, for a state that does not restore, the error of
// [RestoreSession]. No body was sent for it, unless
// ConversationsConfig.PassUnguarded says so. The zero StoreError, with
// no Err, is not a valid error; a Conversations returns it filled in.
type StoreError struct {
	Op           string // "load", "restore", "save"
	Conversation string // the conversation's name
	ID           string // the session's id in the store
	Err          error
}

// Error returns the error's text.
func (e *StoreError) Error() string {
	return "wire: conversation " + strconv.Quote(e.Conversation) + ": session store: " + e.Op + " " + strconv.Quote(e.ID) + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *StoreError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrSessionStore].
func (e *StoreError) Is(target error) bool { return target == ErrSessionStore }

type tenantKey struct{}

// WithTenant returns a copy of ctx that names the tenant a request
// belongs to (typically the authenticated account, never a value the
// client chooses), for a [Conversations] with a session store: the
// conversation's session is stored under sessions.ID(tenant, name), so
// that one tenant can never load another's. It overrides
// ConversationsConfig.Tenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// storeID is the id in the store of conversation name.
func (cs *Conversations) storeID(ctx context.Context, name string) string {
	tenant := cs.cfg.Tenant
	if t, ok := ctx.Value(tenantKey{}).(string); ok {
		tenant = t
	}
	return sessions.ID(tenant, name)
}

// stored is a session this process saved last, with the version the
// store gave it: a Load that finds that version needs no restore.
type stored struct {
	s *Session
	v sessions.Version
}

// guardStored guards a request of a named conversation kept in the
// session store: load (a missing session is a new one), sync, save with
// the version loaded; a Save that lost the race loads again and redoes
// the work, MaxConflicts times at most.
func (cs *Conversations) guardStored(ctx context.Context, d Dialect, b *Body, name string) ([]byte, Report, error) {
	id := cs.storeID(ctx, name)
	spans, _, err := historySpans(b.top, d, b.key)
	if err != nil {
		return nil, Report{}, err
	}
	var conflict error
	for range cs.cfg.MaxConflicts {
		s, v, err := cs.load(ctx, d, name, id)
		if err != nil {
			return nil, Report{}, err
		}
		out, rep, err := s.syncSpans(ctx, b.top, spans)
		if err != nil {
			return nil, rep, err // nothing saved: the next request starts from the stored state
		}
		next, err := cs.save(ctx, s, name, id, v)
		var ce *sessions.ConflictError
		switch {
		case errors.As(err, &ce):
			conflict = ce
			continue
		case err != nil:
			return nil, rep, err
		}
		cs.keep(id, stored{s: s, v: next})
		return out, rep, nil
	}
	err = fmt.Errorf("%w after %d tries: %w", ErrConflicts, cs.cfg.MaxConflicts, conflict)
	return nil, Report{}, &StoreError{Op: "save", Conversation: name, ID: id, Err: err}
}

// load returns the conversation's session as the store holds it, and its
// version: a new session for a conversation the store does not hold.
// The session is the caller's alone.
func (cs *Conversations) load(ctx context.Context, d Dialect, name, id string) (*Session, sessions.Version, error) {
	state, v, err := cs.cfg.Sessions.Load(ctx, id)
	if errors.Is(err, sessions.ErrNotFound) {
		cs.take(id)
		s, err := cs.newSession(d)
		return s, sessions.Absent, err
	}
	if err != nil {
		return nil, 0, &StoreError{Op: "load", Conversation: name, ID: id, Err: err}
	}
	if k, ok := cs.take(id); ok && k.v == v && k.s.cfg.Dialect == d {
		return k.s, v, nil
	}
	cfg := cs.cfg.Session
	cfg.Dialect = d
	s, err := RestoreSessionContext(ctx, bytes.NewReader(state), cfg)
	if err != nil {
		return nil, 0, &StoreError{Op: "restore", Conversation: name, ID: id, Err: err}
	}
	return s, v, nil
}

// save stores the session's state if the store still holds version v,
// and returns the new version.
func (cs *Conversations) save(ctx context.Context, s *Session, name, id string, v sessions.Version) (sessions.Version, error) {
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		return 0, &StoreError{Op: "save", Conversation: name, ID: id, Err: err}
	}
	next, err := cs.cfg.Sessions.Save(ctx, id, buf.Bytes(), v)
	var ce *sessions.ConflictError
	if err != nil && !errors.As(err, &ce) {
		return 0, &StoreError{Op: "save", Conversation: name, ID: id, Err: err}
	}
	return next, err
}

// take removes and returns the session this process saved last under id.
func (cs *Conversations) take(id string) (stored, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	k, ok := cs.saved[id]
	delete(cs.saved, id)
	return k, ok
}

// keep remembers the session this process saved last under id, keeping
// at most Max of them.
func (cs *Conversations) keep(id string, k stored) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for other := range cs.saved {
		if len(cs.saved) < cs.cfg.Max {
			break
		}
		delete(cs.saved, other)
	}
	cs.saved[id] = k
}

// newSession returns a new session of dialect d.
func (cs *Conversations) newSession(d Dialect) (*Session, error) {
	cfg := cs.cfg.Session
	cfg.Dialect = d
	return NewSession(cfg)
}

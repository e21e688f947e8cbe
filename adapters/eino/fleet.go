package einoguard

import (
	"context"
	"errors"
	"strconv"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard/sessions"
)

// Sessions a fleet shares: with Config.Sessions set, each pass of a
// Session loads the conversation's state from the store, runs on it,
// and saves it with the version it loaded. A replica whose save lost
// the race to another reloads the state the winner saved and runs the
// pass again on it, so no replica's pass is lost or applied twice, and
// each list sent is the one a single session would have sent.

// DefaultRetries is how many passes a Session redoes, by default, after
// another replica saved the conversation first.
const DefaultRetries = 8

// ErrSessionID is returned by [New] for a Config with Sessions and a
// SessionID that sessions.ValidID refuses.
var ErrSessionID = errors.New("einoguard: Sessions needs a valid SessionID")

// ErrStore reports a pass that sent nothing because the session store
// failed: it could not load the conversation's state, the state it
// loaded was bad, or it could not save the pass (the last of them lost
// to other replicas, after Config.Retries redos). It comes wrapped in a
// *[StoreError].
var ErrStore = errors.New("einoguard: session store failed")

// StoreError reports a pass refused because the session store failed.
// It matches [ErrStore] and Err with errors.Is: the store's error (a
// *sessions.ConflictError when every redo lost its race, an
// *sessions.IDError otherwise), or a *[StateError] for state that does
// not restore.
type StoreError struct {
	Op       string // "load", "restore" or "save"
	ID       string // Config.SessionID
	Attempts int    // passes run, the last included
	Err      error
}

// Error returns the error's text.
func (e *StoreError) Error() string {
	return "einoguard: session " + strconv.Quote(e.ID) + ": " + e.Op + " failed after " +
		strconv.Itoa(e.Attempts) + " attempts: " + e.Err.Error()
}

// Unwrap returns ErrStore and Err.
func (e *StoreError) Unwrap() []error { return []error{ErrStore, e.Err} }

// retries is how many passes a Session redoes after a conflict.
func (s *Session) retries() int {
	switch r := s.cfg.Retries; {
	case r == 0:
		return DefaultRetries
	case r < 0:
		return 0
	default:
		return r
	}
}

// stored runs a pass on the stored state and saves it, redoing it after
// a conflict. On a store's failure it sends nothing, unless
// Config.FailOpen lets it send what the session guarded. Under the lock.
func (s *Session) stored(ctx context.Context, msgs []*schema.Message, r *Report) ([]*schema.Message, error) {
	out, err, serr := s.attempts(ctx, msgs, r)
	switch {
	case serr == nil:
		return out, err
	case !s.cfg.FailOpen:
		return nil, serr
	case out == nil: // no pass ran: run one on the state held
		*r = Report{}
		out, err = s.pass(ctx, msgs, r)
	}
	r.StoreErr = serr
	return out, err
}

// attempts runs passes until one is saved or the store fails, and
// returns the last pass's list and error (none when the store failed
// before it ran) and the store's *StoreError.
func (s *Session) attempts(ctx context.Context, msgs []*schema.Message, r *Report) ([]*schema.Message, error, error) {
	for attempt := 1; ; attempt++ {
		if op, err := s.load(ctx); err != nil {
			return nil, nil, &StoreError{Op: op, ID: s.cfg.SessionID, Attempts: attempt, Err: err}
		}
		*r = Report{}
		out, err := s.pass(ctx, msgs, r)
		serr := s.save(ctx)
		if serr == nil {
			return out, err, nil
		}
		if !errors.Is(serr, sessions.ErrConflict) || attempt > s.retries() {
			return out, err, &StoreError{Op: "save", ID: s.cfg.SessionID, Attempts: attempt, Err: serr}
		}
	}
}

// load brings the stored state into the session, unless it holds that
// version already; a missing conversation starts afresh. On error it
// names the step that failed.
func (s *Session) load(ctx context.Context) (string, error) {
	b, v, err := s.cfg.Sessions.Load(ctx, s.cfg.SessionID)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		if !s.held || s.version != sessions.Absent {
			_ = s.reset() // cannot fail: New registered the same tools
		}
		s.held, s.version = true, sessions.Absent
		return "", nil
	case err != nil:
		s.held = false
		return "load", err
	case s.held && v == s.version:
		return "", nil
	}
	if err := s.decode(ctx, b); err != nil {
		s.held = false
		return "restore", err
	}
	s.held, s.version = true, v
	return "", nil
}

// save stores the state with the version loaded. After any failure the
// session no longer holds a stored version, so the next pass reloads.
func (s *Session) save(ctx context.Context) error {
	s.held = false
	b, err := s.encode()
	if err != nil {
		return err
	}
	v, err := s.cfg.Sessions.Save(ctx, s.cfg.SessionID, b, s.version)
	if err != nil {
		return err
	}
	s.held, s.version = true, v
	return nil
}

package sessions

import (
	"errors"
	"strconv"
	"strings"
)

// Errors of stores. A Store returns them wrapped in an *IDError that
// names the id, so callers match them with errors.Is and find the id
// with errors.As.
var (
	// ErrNotFound: the store holds no session under the id.
	ErrNotFound = errors.New("sessions: not found")
	// ErrConflict: a Save or Delete expected another version than the
	// session has. It is returned as a *ConflictError.
	ErrConflict = errors.New("sessions: version conflict")
	// ErrCorrupt: what the store holds under the id fails its checksum,
	// is truncated, or was written for another id or version. It is
	// never returned as state.
	ErrCorrupt = errors.New("sessions: stored state is corrupt")
	// ErrBadID: the id is not a valid session id (see [ValidID]).
	ErrBadID = errors.New("sessions: bad id")
	// ErrNoStore: the store has nothing to store into (a zero value).
	ErrNoStore = errors.New("sessions: no store configured")
)

// IDError reports a failed operation on one session of a store. It
// matches its Err with errors.Is: one of the sentinels above, a
// context's error, or the underlying I/O error.
//
// The zero IDError, with no Err, is not a valid error; stores never
// return one.
type IDError struct {
	Op  string // "load", "save", "delete" or "touch"
	ID  string
	Err error
}

// Error returns the error's text: lower case, prefixed with "sessions: ".
func (e *IDError) Error() string {
	return "sessions: " + e.Op + " " + strconv.Quote(e.ID) + ": " + trim(e.Err)
}

// Unwrap returns Err.
func (e *IDError) Unwrap() error { return e.Err }

// ConflictError reports a Save or Delete refused because the session's
// version is not the one expected. It matches [ErrConflict] with
// errors.Is. Stored is the version the store held when it refused
// ([Absent]: no session); by the time the caller reads it the session
// may have moved on, so a caller that wants to retry loads the session
// again.
type ConflictError struct {
	Op     string // "save" or "delete"
	ID     string
	Expect Version
	Stored Version
}

// Error returns the error's text: lower case, prefixed with "sessions: ".
func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("sessions: " + e.Op + " " + strconv.Quote(e.ID) + ": version conflict: expected ")
	b.WriteString(describe(e.Expect, "a new session"))
	b.WriteString(", the store holds ")
	b.WriteString(describe(e.Stored, "none"))
	return b.String()
}

// Is reports whether target is [ErrConflict].
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

func describe(v Version, absent string) string {
	if v == Absent {
		return absent
	}
	return "version " + strconv.FormatUint(uint64(v), 10)
}

// trim drops the package prefix from err's text, so that a wrapped
// sentinel does not repeat it.
func trim(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	if t, ok := strings.CutPrefix(s, "sessions: "); ok {
		return t
	}
	return s
}

func idErr(op, id string, err error) error {
	return &IDError{Op: op, ID: id, Err: err}
}

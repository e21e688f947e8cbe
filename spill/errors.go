package spill

import (
	"errors"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// Errors of stores. A Store returns them wrapped in a *KeyError that names
// the key, so callers match them with errors.Is and find the key with
// errors.As.
var (
	// ErrNotFound: the store holds no content under the key.
	ErrNotFound = errors.New("spill: not found")
	// ErrKeyExists: a Put named a key that already holds content. Keys are
	// never reused, so that a pointer can never come to mean other content.
	ErrKeyExists = errors.New("spill: key already used")
	// ErrCorrupt: what the store holds under the key fails its checksum,
	// is truncated, or is not what was written there. It is never
	// returned as content.
	ErrCorrupt = errors.New("spill: stored content is corrupt")
	// ErrBadKey: the key is not a valid store key (see [ValidKey]).
	ErrBadKey = errors.New("spill: bad key")
	// ErrNoStore: the store or Spiller has nothing to store into (a zero
	// value).
	ErrNoStore = errors.New("spill: no store configured")
)

// Errors of a Spiller.
var (
	// ErrOpenMessage: the message is still streaming; its content is not
	// final and cannot be spilled.
	ErrOpenMessage = errors.New("spill: message is still streaming")
	// ErrNotText: an id, role or tool name of a message to spill is not
	// UTF-8. (Content and call arguments may be any bytes.)
	ErrNotText = errors.New("spill: id, role or tool name is not UTF-8")
	// ErrNothingToSpill: a spill named no messages.
	ErrNothingToSpill = errors.New("spill: no messages to spill")
	// ErrForeignPointer: the pointer names another store than the
	// Spiller's.
	ErrForeignPointer = errors.New("spill: pointer names another store")
	// ErrBadRecall: the arguments of a recall call are not a JSON object
	// with a "key" or a "query" string (not both) and, if any, a "page"
	// the answer has; or the query has no word or is too long.
	ErrBadRecall = errors.New("spill: bad recall arguments")
)

// KeyError reports a failed operation on one key of a store. It matches
// its Err with errors.Is: one of the sentinels above, or the underlying
// I/O error.
//
// The zero KeyError, with no Err, is not a valid error; the package
// never returns one.
type KeyError struct {
	Op  string // "put", "get", "list", "touch", "spill", "recall", "search" or "resolve"
	Key string
	Err error
}

// Error returns the error's text: lower case, prefixed with "spill: ".
func (e *KeyError) Error() string {
	return "spill: " + e.Op + " " + strconv.Quote(e.Key) + ": " + trim(e.Err)
}

// Unwrap returns Err.
func (e *KeyError) Unwrap() error { return e.Err }

// MessageError reports a message of a Context that could not be spilled.
// It matches its Err with errors.Is, for example [ErrOpenMessage] or
// [pruneguard.ErrUnknownMessage].
//
// The zero MessageError, with no Err, is not a valid error; the package
// never returns one.
type MessageError struct {
	ID  pruneguard.MessageID
	Err error
}

// Error returns the error's text: lower case, prefixed with "spill: ".
func (e *MessageError) Error() string {
	return "spill: message " + strconv.Quote(string(e.ID)) + ": " + trim(e.Err)
}

// Unwrap returns Err.
func (e *MessageError) Unwrap() error { return e.Err }

// trim drops a package prefix from err's text, so that wrapped sentinels
// do not repeat it.
func trim(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	for _, p := range []string{"spill: ", "pruneguard: "} {
		if t, ok := strings.CutPrefix(s, p); ok {
			return t
		}
	}
	return s
}

func keyErr(op, key string, err error) error {
	return &KeyError{Op: op, Key: key, Err: err}
}

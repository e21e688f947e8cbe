package sessions

import (
	"context"
	"crypto/rand"
	"encoding/binary"
)

// Store keeps the saved state of sessions under ids, and lets several
// processes take turns on one session with compare-and-swap on a
// [Version]. Every implementation keeps this contract, which package
// sessions/storetest checks:
//
//   - Load returns exactly the state last saved under the id and its
//     version, or an error: one matching [ErrNotFound] for an id that
//     holds no session, one matching [ErrCorrupt] when what the store
//     holds fails its check. Partial or damaged state is never returned
//     as state.
//   - Save stores state under the id only if the session's version is
//     expect, and returns the new version. The version of a missing
//     session is [Absent]: Save with expect Absent creates the session
//     and fails if it exists. Any other mismatch, a stale version or a
//     create of an existing session, fails with a *[ConflictError]
//     (matching [ErrConflict]) and changes nothing. Of concurrent Saves
//     to one id with the same expect at most one succeeds, and the
//     others that reach the store fail with a conflict.
//   - Save is durable when it returns nil, as far as the store's medium
//     allows (documented by each store); a Save that returns an error
//     other than a conflict may or may not have stored the state, and a
//     caller learns which by loading it. Every Load sees either the
//     state before a Save or the whole state after it.
//   - State is opaque: it may be empty, and may be any bytes.
//   - Ids follow [ValidID]; any other id is refused with an error
//     matching [ErrBadID]. Distinct ids are distinct sessions.
//   - Save keeps no reference to the slice it is given, and Load returns
//     a slice the caller may modify without changing what is stored.
//   - Errors about an id are a *[ConflictError] for a conflict and an
//     *[IDError] otherwise, each naming the id.
//   - The context governs the call: a call whose context is done before
//     it starts fails with an error matching the context's error
//     (errors.Is(err, ctx.Err())) and changes nothing; one whose context
//     ends while it runs may fail with it, as any failed call. A Store
//     sets no deadline of its own unless it documents one.
//   - Nothing expires unless the store is configured to expire sessions;
//     a store that expires them never removes a session saved (or
//     touched, see [Toucher]) within its time to live.
//   - A Store is safe for concurrent use by multiple goroutines.
type Store interface {
	Load(ctx context.Context, id string) (state []byte, v Version, err error)
	Save(ctx context.Context, id string, state []byte, expect Version) (Version, error)
}

// Deleter is a Store that can remove a session. Delete removes the
// session under id if its version is expect; a missing session fails
// with [ErrNotFound], another version with a *[ConflictError]. After a
// Delete the id holds no session, and a Save with expect [Absent]
// creates it anew.
type Deleter interface {
	Delete(ctx context.Context, id string, expect Version) error
}

// Toucher is a Store that expires sessions. Touch restarts the time to
// live of the session under id without changing its state or version,
// as a Save does; a missing session fails with [ErrNotFound].
type Toucher interface {
	Touch(ctx context.Context, id string) error
}

// Version identifies one saved state of one session. Versions are
// opaque: compare them for equality only, and pass the version a Load or
// Save returned as the expect of the next Save.
//
// A session's first version is random, and each Save moves it on by
// one, so a session created anew after a Delete or an expiry does not
// repeat the versions of its earlier life: a Save by a process that
// still holds one of them fails with a conflict rather than overwriting
// the new session (but for a chance of about one in 2^62).
type Version uint64

// Absent is the version of a session that does not exist. Save with
// expect Absent creates the session; no saved session has version
// Absent.
const Absent Version = 0

// maxFirst bounds first versions, leaving room for 2^62 Saves before a
// version would reach 2^63 (the largest a signed 64-bit column holds).
const maxFirst = 1 << 62

// Next returns the version a Save that expects v gives the session: v+1,
// or for [Absent] a random first version in [1, 2^62). Stores call it;
// callers need not.
func (v Version) Next() Version {
	if v != Absent {
		return v + 1
	}
	var b [8]byte
	rand.Read(b[:])
	first := Version(binary.LittleEndian.Uint64(b[:]) % maxFirst)
	if first == Absent {
		first = 1
	}
	return first
}

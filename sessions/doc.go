// Package sessions keeps the saved state of sessions, so that any
// process of a fleet can continue a conversation another began, and
// two processes racing on one conversation never both win.
//
// A [Store] holds opaque state under an id, with a [Version]. Load
// returns the state and its version; Save stores new state only if the
// session still has the version the caller loaded (compare-and-swap),
// and returns the next one. A Save that lost a race fails with a
// *[ConflictError]: the loser loads again and redoes its work, so no
// update is lost or applied twice.
//
// # Tour
//
// A replica serving one turn of a conversation:
//
//	id := sessions.ID(account, conversation)
//	for {
//		state, v, err := store.Load(ctx, id)
//		if errors.Is(err, sessions.ErrNotFound) {
//			state, v, err = nil, sessions.Absent, nil // a new conversation
//		}
//		if err != nil {
//			return err // the store is down: fail closed
//		}
//		next := serve(state, request) // the turn's work, on the loaded state
//		_, err = store.Save(ctx, id, next, v)
//		if errors.Is(err, sessions.ErrConflict) {
//			continue // another replica saved first: redo the turn on its state
//		}
//		return err
//	}
//
// Save with [Absent] creates a session and fails if it exists. [ID]
// namespaces session ids by tenant, so that one tenant can never name
// another's session whatever strings it picks.
//
// # Stores
//
// [Memory] keeps sessions in the process. [Dir] keeps them in files of
// one directory, safe for several processes of one machine, and is the
// default for an embedded runtime. Stores on Redis and PostgreSQL,
// shared by a fleet, live in the modules
// github.com/pruneguard/pruneguard/stores/redis and
// github.com/pruneguard/pruneguard/stores/postgres. Package
// sessions/storetest checks a Store against the contract [Store]
// states.
//
// Stores never return damaged state: [Dir] and the server stores keep
// each state with its id, version and SHA-256 (see [Seal]), and refuse
// what fails the check with [ErrCorrupt].
//
// # Expiry
//
// Nothing expires by default. A store configured to expire sessions
// counts the time to live from the last Save or [Toucher] Touch, and
// never removes a session saved within it: a live session stays.
//
// # Contexts
//
// Every method takes a context.Context; a call whose context is done
// fails with its error and changes nothing.
package sessions

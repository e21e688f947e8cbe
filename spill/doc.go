// Package spill moves message content out of the prompt into a durable
// store, keeps the pointer the regenerability gate asks for, and gives the
// model a way to read the content back.
//
// The pruneguard core does no I/O: it only asks a [pruneguard.Resolver]
// whether a pointer still leads to the content. A [Spiller] is that
// resolver. It writes the messages of one spill to a [Store] as one
// segment under a fresh key, reads the segment back and compares it byte
// for byte, and only then hands out the pointer, which
// [pruneguard.Context.Spill] records on each message. The messages may
// then be evicted even when irreducible, and [Spiller.Recall] brings them
// back.
//
// # Stores
//
// The [Store] interface states the contract every store keeps: a Put is
// durable when it returns, Get returns exactly the bytes put or a typed
// error ([ErrNotFound], [ErrCorrupt]), keys are never reused
// ([ErrKeyExists]), content may be empty or binary, keys follow
// [ValidKey], and stores are safe for concurrent use. Package
// spill/storetest checks a Store against it. [Memory] keeps content in
// the process; [Dir] keeps it in files, synced, checksummed and never
// replaced. Stores on Redis and PostgreSQL live in their own modules,
// github.com/pruneguard/pruneguard/stores/redis and
// github.com/pruneguard/pruneguard/stores/postgres.
//
// # Reading back
//
// A spilled message leaves a placeholder in the prompt: [PointerText]
// says where the content is and how to read it back. Expose [RecallTool]
// to the model and answer its calls with [Spiller.HandleRecall]; the
// answer is reconstructible, so it may be pruned again.
//
// # Restarts
//
// Segments describe themselves (key, message count, SHA-256 of the
// messages), so the store is the index: a new Spiller pointed at the same
// store resolves pointers an earlier process or another host wrote once
// [Spiller.Verify] has checked each such segment, which
// [pruneguard.RestoreContext] does for the pointers of a saved state. The
// check is I/O, so it happens there, before any prune: the gates ask
// [Spiller.Resolvable], which answers from memory. A crash during a spill
// leaves at worst a segment no pointer names; a pointer never resolves to
// content that was not wholly written and verified.
//
// # Contexts
//
// Every method that reads or writes a store takes a context.Context and
// hands it to the [Store], whose Put and Get stop when it is done. A
// [pruneguard.Guard] spills with the context given to
// [pruneguard.Guard.CheckContext].
package spill

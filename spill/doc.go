// Package spill moves message content out of the prompt into a durable
// store, keeps the pointer the regenerability gate asks for, and gives the
// model a way to read the content back, by key or by searching.
//
// The pruneguard core does no I/O: it only asks a [pruneguard.Resolver]
// whether a pointer still leads to the content. A [Spiller] is that
// resolver. It writes the messages of one spill to a [Store] as one
// segment, under a key its namespace and the messages give, reads the
// segment back and compares it byte for byte, and only then hands out the
// pointer, which [pruneguard.Context.Spill] records on each message. The
// messages may then be evicted even when irreducible, and
// [Spiller.Recall] brings them back, every field as it was.
//
// # Keys and sessions
//
// The same session spilling the same messages gets the same key, so
// content already stored is never written again: the Spiller reads the
// segment back, checks it and reuses it. Set [Spiller.Namespace] to the
// session's id ([Namespace] builds one for a session of a tenant) on a
// store that sessions or tenants share: a Spiller answers only for the
// keys of its own namespace, by key or by query, and another session's
// key gets [ErrNotFound] and never its content. A Spiller with no
// namespace answers for every key, as before namespaces existed.
//
// # Stores
//
// The [Store] interface states the contract every store keeps: a Put is
// durable when it returns, Get returns exactly the bytes put or a typed
// error ([ErrNotFound], [ErrCorrupt]), keys are never reused
// ([ErrKeyExists]), content may be empty or binary, keys follow
// [ValidKey], and stores are safe for concurrent use. A store may also
// list its keys ([Lister]), so that a query searches the segments earlier
// processes wrote, and put off the expiry of a key ([Toucher]). Package
// spill/storetest checks a Store against all of it. [Memory] keeps
// content in the process; [Dir] keeps it in files, synced, checksummed
// and never replaced. Stores on Redis and PostgreSQL live in their own
// modules, github.com/pruneguard/pruneguard/stores/redis and
// github.com/pruneguard/pruneguard/stores/postgres.
//
// # Reading back
//
// A spilled message leaves a placeholder in the prompt:
// [Spiller.PointerText] says where the content is, what it holds (a
// description of at most [MaxDescriptionLen] bytes: ids, tools, errors, a
// few facts) and how to read it back; [Spiller.LongestPointerText] is as
// long as any, for counting a pointer line's cost. Expose [RecallTool] to
// the model and answer its calls with [Spiller.HandleRecall]: by key, a
// segment's messages; by query, the session's best matching messages
// ([Spiller.Search]); either way at most [Spiller.MaxRecallBytes] a
// page, each answer saying how to read the next. The answer is
// reconstructible, so it may be pruned again.
//
// # Restarts and expiry
//
// Segments describe themselves (key, message count, description, SHA-256
// of both), so the store is the index: a new Spiller pointed at the same
// store resolves pointers an earlier process or another host wrote once
// [Spiller.Verify] has checked each such segment, which
// [pruneguard.RestoreContext] does for the pointers of a saved state. The
// check is I/O, so it happens there, before any prune: the gates ask
// [Spiller.Resolvable], which answers from memory. A crash during a spill
// leaves at worst a segment no pointer names; a pointer never resolves to
// content that was not wholly written and verified. On a store that
// expires content, a live session calls [Spiller.Touch] with the pointers
// it holds whenever it is used or saved, so that no segment it points to
// expires.
//
// # Contexts
//
// Every method that reads or writes a store takes a context.Context and
// hands it to the [Store], whose methods stop when it is done. A
// [pruneguard.Guard] spills with the context given to
// [pruneguard.Guard.CheckContext].
package spill

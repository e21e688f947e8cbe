package spill

import "context"

// Store keeps spilled content under keys. Every implementation keeps this
// contract, which package storetest checks:
//
//   - Put is durable when it returns nil: the content survives the
//     process and, as far as the store's medium allows (documented by each
//     store), the machine. A Put that returns an error may or may not
//     have stored the content; its key must not be handed out.
//   - Get returns exactly the bytes that were put under the key, or an
//     error: one matching [ErrNotFound] for a key that holds nothing, and
//     one matching [ErrCorrupt] when what the store holds fails its check.
//     Damaged content is never returned as content.
//   - Keys are never reused: a Put to a key that already holds content,
//     even the same content, fails with an error matching [ErrKeyExists]
//     and leaves the content as it was. Of concurrent Puts to one key at
//     most one succeeds. A pointer can therefore never come to mean other
//     content. (A store whose content expires may take a Put to a key
//     whose content expired; see [Toucher].)
//   - Content may be empty, and may be any bytes.
//   - Keys are opaque strings that [ValidKey] accepts; any other key is
//     refused by Put and Get with an error matching [ErrBadKey].
//   - Put keeps no reference to the slice it is given, and Get returns a
//     slice the caller may modify without changing what is stored.
//   - Errors about a key are *KeyError values carrying the key.
//   - The context governs the call: a Put or Get whose context is done
//     before it starts fails with an error matching the context's error
//     (errors.Is(err, ctx.Err())) and stores nothing; one whose context
//     ends while it runs may fail with it, as any failed Put or Get. A
//     Store sets no deadline of its own unless it documents one.
//   - A Store is safe for concurrent use by multiple goroutines.
type Store interface {
	Put(ctx context.Context, key string, content []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// Lister is a Store that can list its keys. A [Spiller] whose store is a
// Lister answers a query from every segment of its namespace the store
// holds, those earlier processes and other hosts wrote included; with
// another store, from the segments it wrote or verified itself. Package
// storetest checks List when a store has it:
//
//   - List returns the keys that start with prefix and hold content, each
//     once, in ascending byte order; none is an empty (or nil) slice and
//     no error. A key whose content was deleted or expired is not listed
//     (one that expires while List runs may be); a key being put while
//     List runs may or may not be.
//   - prefix is "" (every key) or a string [ValidKey] accepts; any other
//     prefix is refused with an error matching [ErrBadKey].
//   - The context governs the call as it does Put's and Get's; errors are
//     *KeyError values carrying the prefix, with Op "list".
type Lister interface {
	Store
	List(ctx context.Context, prefix string) ([]string, error)
}

// Toucher is a Store whose content may expire (a TTL, a sweeper that
// removes what was not used for a while) and that can put off the expiry
// of a key. A session keeps the segments it still points to alive by
// touching them, with [Spiller.Touch], whenever it is used or saved, at
// least once per lifetime the store documents; a [Spiller] touches a
// segment too when it verifies it and when a spill finds it stored
// already. Package storetest checks Touch when a store has it:
//
//   - Touch of a key that holds content starts the key's lifetime again
//     and returns nil; the content is unchanged.
//   - Touch of a key that holds nothing fails with an error matching
//     [ErrNotFound]; a key [ValidKey] refuses, with [ErrBadKey].
//   - The context governs the call as it does Put's and Get's; errors are
//     *KeyError values carrying the key, with Op "touch".
//
// A store that expires content may accept a Put to a key whose content
// expired. A Spiller's keys come from their content, so such a Put stores
// the same content again, and a pointer still never comes to mean other
// content.
type Toucher interface {
	Store
	Touch(ctx context.Context, key string) error
}

// Remover is a Store that can remove the content under a key. A
// [Spiller] whose store is one removes a segment it discards
// ([Spiller.Discard]): one it wrote for a prune that was then refused, so
// that the store keeps nothing no pointer names.
//
//   - Remove of a key that holds content removes it; a later Put of the
//     key stores content anew. Remove of a key that holds nothing returns
//     nil.
//   - The context governs the call as it does Put's and Get's; errors are
//     *KeyError values carrying the key, with Op "remove".
type Remover interface {
	Store
	Remove(ctx context.Context, key string) error
}

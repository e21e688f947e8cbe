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
//     content.
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

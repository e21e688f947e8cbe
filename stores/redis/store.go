// Package redis keeps spilled content in Redis, so that a pointer one
// host wrote resolves on every host of a fleet that shares the server.
// Its [Store] is a [spill.Store]: hand it to a [spill.Spiller].
//
// The package is named after its directory; import it under another
// name, such as spillredis, next to github.com/redis/go-redis/v9.
//
// # Durability
//
// Redis acknowledges a write once it is applied in memory. How much of
// that survives depends on the server's configuration, not on this
// package:
//
//   - appendonly yes, appendfsync always: the append-only file is
//     written and fsynced before Redis replies, so a Put that returned
//     survives a crash of Redis or of the machine. This is the setting
//     under which Store keeps the spill.Store contract to the letter.
//   - appendonly yes, appendfsync everysec (the usual AOF setting): the
//     file is written before the reply but fsynced about once a second;
//     a crash of Redis loses nothing, a crash of the machine up to about
//     a second of acknowledged Puts.
//   - appendonly no (Redis's default): only RDB snapshots persist; a
//     restart loses every Put since the last snapshot.
//   - Replication is asynchronous: a failover to a replica can lose Puts
//     the old primary acknowledged, whatever the settings above.
//   - An eviction policy other than noeviction (maxmemory-policy), or a
//     FLUSHDB, deletes content: its pointers stop resolving.
//
// A lost Put is never mistaken for content: Get reports it missing, and a
// Spiller then counts its pointer unresolvable. Every value carries its
// key, length and SHA-256 (see [spill.Seal]), so a value overwritten or
// damaged by another client is refused with [spill.ErrCorrupt].
//
// # Expiry
//
// A Store with a TTL gives every key that lifetime, from its Put and
// again from each Touch ([spill.Toucher]); Redis removes the keys no
// session touched in time. A session keeps the segments it points to by
// calling [spill.Spiller.Touch] with its pointers whenever it is used or
// saved, more often than once per TTL (and a Spiller touches a segment
// it verifies or finds stored already); give the TTL a margin over the
// longest a live session goes between two such calls. A Store with no
// TTL expires nothing.
//
// # Listing
//
// List ([spill.Lister]) walks the keyspace with SCAN, on every primary of
// a cluster (*goredis.ClusterClient) or every shard of a ring
// (*goredis.Ring): its cost grows with the number of keys on the server,
// not only with those it returns. A Spiller lists a namespace's keys to
// answer a query.
package redis

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pruneguard/pruneguard/spill"
)

// DefaultPrefix starts the Redis key of every spill key when
// Store.Prefix is empty.
const DefaultPrefix = "pruneguard:spill:"

// DefaultTimeout was the bound of each operation of a Store with no
// Timeout.
//
// Deprecated: a Store sets no deadline of its own: the context given to
// Put and Get governs them. Set Store.Timeout to bound each operation.
const DefaultTimeout = 10 * time.Second

// Store is a [spill.Store] on a Redis server. Put writes with SET NX, so
// a key is never reused, even by Puts racing on several hosts; the value
// is the content sealed with [spill.Seal].
//
// Client is any go-redis client (*goredis.Client, *goredis.ClusterClient,
// *goredis.Ring). Prefix namespaces the keys (default [DefaultPrefix]);
// Stores that share a server must share it to see each other's content.
// Timeout, when positive, bounds each operation within the context the
// caller gives; zero means the caller's context alone governs. A Put or
// Get whose context is done fails with its error, as the [spill.Store]
// contract says.
//
// TTL, when positive, is the lifetime of a key from its Put and from
// each Touch (see Expiry in the package documentation); zero means keys
// never expire. Stores that share keys should share it.
//
// A Store is a plain value, safe for concurrent use as its Client is.
// The zero Store has no client: its methods fail with
// [spill.ErrNoStore].
type Store struct {
	Client  goredis.Cmdable
	Prefix  string
	Timeout time.Duration
	TTL     time.Duration
}

var (
	_ spill.Lister  = Store{}
	_ spill.Toucher = Store{}
)

func (s Store) prefix() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

func (s Store) redisKey(key string) string { return s.prefix() + key }

// bound returns ctx bounded by the Store's Timeout, if any.
func (s Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.Timeout)
}

func (s Store) check(ctx context.Context, op, key string) error {
	if s.Client == nil {
		return &spill.KeyError{Op: op, Key: key, Err: spill.ErrNoStore}
	}
	if !spill.ValidKey(key) {
		return &spill.KeyError{Op: op, Key: key, Err: spill.ErrBadKey}
	}
	if err := ctx.Err(); err != nil {
		return &spill.KeyError{Op: op, Key: key, Err: err}
	}
	return nil
}

// Put stores content under key with SET NX, and the Store's TTL if any. A
// used key fails with [spill.ErrKeyExists]. When Put returns nil the primary has the value;
// see the package documentation for what survives a crash.
func (s Store) Put(ctx context.Context, key string, content []byte) error {
	if err := s.check(ctx, "put", key); err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ok, err := s.Client.SetNX(ctx, s.redisKey(key), spill.Seal(key, content), max(s.TTL, 0)).Result()
	if err != nil {
		return &spill.KeyError{Op: "put", Key: key, Err: err}
	}
	if !ok {
		return &spill.KeyError{Op: "put", Key: key, Err: spill.ErrKeyExists}
	}
	return nil
}

// Get returns the content under key after checking its seal.
func (s Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	b, err := s.Client.Get(ctx, s.redisKey(key)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: spill.ErrNotFound}
	}
	if err != nil {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: err}
	}
	content, err := spill.Unseal(key, b)
	if err != nil {
		return nil, &spill.KeyError{Op: "get", Key: key, Err: err}
	}
	return content, nil
}

// Touch starts the lifetime of key again: EXPIRE with the Store's TTL,
// or, with no TTL, a check that the key exists. A key that holds nothing
// fails with [spill.ErrNotFound].
func (s Store) Touch(ctx context.Context, key string) error {
	if err := s.check(ctx, "touch", key); err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var (
		found bool
		err   error
	)
	if s.TTL > 0 {
		found, err = s.Client.Expire(ctx, s.redisKey(key), s.TTL).Result()
	} else {
		var n int64
		n, err = s.Client.Exists(ctx, s.redisKey(key)).Result()
		found = n > 0
	}
	if err != nil {
		return &spill.KeyError{Op: "touch", Key: key, Err: err}
	}
	if !found {
		return &spill.KeyError{Op: "touch", Key: key, Err: spill.ErrNotFound}
	}
	return nil
}

// List returns the spill keys that start with prefix, sorted, walking the
// keyspace with SCAN (see Listing in the package documentation).
func (s Store) List(ctx context.Context, prefix string) ([]string, error) {
	if s.Client == nil {
		return nil, &spill.KeyError{Op: "list", Key: prefix, Err: spill.ErrNoStore}
	}
	if prefix != "" && !spill.ValidKey(prefix) {
		return nil, &spill.KeyError{Op: "list", Key: prefix, Err: spill.ErrBadKey}
	}
	if err := ctx.Err(); err != nil {
		return nil, &spill.KeyError{Op: "list", Key: prefix, Err: err}
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	scan := func(ctx context.Context, c goredis.Cmdable) error {
		it := c.Scan(ctx, 0, globEscape(s.prefix()+prefix)+"*", 1000).Iterator()
		for it.Next(ctx) {
			key := strings.TrimPrefix(it.Val(), s.prefix())
			if spill.ValidKey(key) {
				mu.Lock()
				seen[key] = true
				mu.Unlock()
			}
		}
		return it.Err()
	}
	var err error
	switch c := s.Client.(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return scan(ctx, n) })
	case *goredis.Ring:
		err = c.ForEachShard(ctx, func(ctx context.Context, n *goredis.Client) error { return scan(ctx, n) })
	default:
		err = scan(ctx, s.Client)
	}
	if err != nil {
		return nil, &spill.KeyError{Op: "list", Key: prefix, Err: err}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

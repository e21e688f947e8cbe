// Package storetest checks that a [spill.Store] keeps the store contract,
// in the manner of testing/fstest and testing/slogtest: [TestStore]
// returns an error listing every failure, and [Run] reports each check as
// a subtest.
//
// The checks: content round trips; empty, large (several megabytes) and
// binary content come back exactly; a missing key is a *spill.KeyError
// matching [spill.ErrNotFound]; a key is never reused, and of concurrent
// Puts to one key exactly one wins; many goroutines put and get at once;
// Put keeps no reference to its argument and Get returns a copy; keys
// [spill.ValidKey] refuses are refused with [spill.ErrBadKey] and the
// longest valid keys accepted; a Put or Get whose context is done fails
// with an error matching the context's, and the Put stores nothing. Every
// check uses keys no earlier run used,
// so it may run against a store that outlives it (a shared database).
//
// Durability across processes and machine failures cannot be checked
// from inside one process; test it with crashes of your own.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pruneguard/pruneguard/spill"
)

// LargeSize is the size of the large content the suite stores.
const LargeSize = 5<<20 + 3

type check struct {
	name string
	run  func(ctx context.Context, s spill.Store, k *keys) error
}

var checks = []check{
	{"round trip", roundTrip},
	{"empty content", emptyContent},
	{"large content", largeContent},
	{"binary content", binaryContent},
	{"not found", notFound},
	{"key reuse", keyReuse},
	{"concurrent use", concurrent},
	{"concurrent puts to one key", racingPuts},
	{"copies", copies},
	{"bad keys", badKeys},
	{"valid keys", validKeys},
	{"done context", doneContext},
}

// TestStore runs every check, each on a new store from newStore, with
// context.Background() (but for the check of done contexts), and
// returns nil when the store passes all of them, or an error listing
// every failure, one per line, each prefixed with its check's name.
// An error from newStore stops the run and is returned.
func TestStore(newStore func() (spill.Store, error)) error {
	var errs []error
	for _, c := range checks {
		s, err := newStore()
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("storetest: new store: %w", err))...)
		}
		if err := c.run(context.Background(), s, newKeys()); err != nil {
			errs = append(errs, fmt.Errorf("storetest: %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs every check as a subtest of t, each on a new store from
// newStore, with the subtest's context (but for the check of done
// contexts).
func Run(t *testing.T, newStore func(t *testing.T) spill.Store) {
	t.Helper()
	for _, c := range checks {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if err := c.run(t.Context(), newStore(t), newKeys()); err != nil {
				t.Error(err)
			}
		})
	}
}

// keys makes keys unique to one run of one check.
type keys struct{ prefix string }

func newKeys() *keys {
	b := make([]byte, 8)
	rand.Read(b)
	return &keys{prefix: "storetest-" + hex.EncodeToString(b) + "-"}
}

func (k *keys) key(name string) string { return k.prefix + name }

// describe names content briefly in failure messages.
func describe(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) <= 16 {
		return fmt.Sprintf("%q", b)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%d bytes, sha256 %x…", len(b), sum[:4])
}

// want checks that key holds exactly content.
func want(ctx context.Context, s spill.Store, key string, content []byte) error {
	got, err := s.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("Get(%q) after Put: %w", key, err)
	}
	if !bytes.Equal(got, content) {
		return fmt.Errorf("Get(%q) = %s, want %s", key, describe(got), describe(content))
	}
	return nil
}

// put stores content and checks it comes back.
func put(ctx context.Context, s spill.Store, key string, content []byte) error {
	if err := s.Put(ctx, key, content); err != nil {
		return fmt.Errorf("Put(%q, %s): %w", key, describe(content), err)
	}
	return want(ctx, s, key, content)
}

// keyed checks that err matches target and is a *spill.KeyError for key.
func keyed(op, key string, err, target error) error {
	if err == nil {
		return fmt.Errorf("%s(%q) succeeded, want an error matching %v", op, key, target)
	}
	if !errors.Is(err, target) {
		return fmt.Errorf("%s(%q): error %q does not match %v", op, key, err, target)
	}
	var ke *spill.KeyError
	if !errors.As(err, &ke) {
		return fmt.Errorf("%s(%q): error %q is not a *spill.KeyError", op, key, err)
	}
	if ke.Key != key {
		return fmt.Errorf("%s(%q): *spill.KeyError names key %q", op, key, ke.Key)
	}
	return nil
}

func roundTrip(ctx context.Context, s spill.Store, k *keys) error {
	return errors.Join(
		put(ctx, s, k.key("a"), []byte("the exact stderr of a failed migration")),
		put(ctx, s, k.key("b"), []byte(`{"nonce":"8f3a","exit":137}`)),
		want(ctx, s, k.key("a"), []byte("the exact stderr of a failed migration")),
	)
}

func emptyContent(ctx context.Context, s spill.Store, k *keys) error {
	var errs []error
	for name, content := range map[string][]byte{"nil": nil, "empty": {}} {
		key := k.key(name)
		if err := s.Put(ctx, key, content); err != nil {
			errs = append(errs, fmt.Errorf("Put(%q, %s): %w", key, name, err))
			continue
		}
		got, err := s.Get(ctx, key)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("Get(%q) of empty content: %w", key, err))
		case len(got) != 0:
			errs = append(errs, fmt.Errorf("Get(%q) = %s, want empty content", key, describe(got)))
		}
	}
	return errors.Join(errs...)
}

func largeContent(ctx context.Context, s spill.Store, k *keys) error {
	b := make([]byte, LargeSize)
	rand.Read(b)
	return put(ctx, s, k.key("large"), b)
}

func binaryContent(ctx context.Context, s spill.Store, k *keys) error {
	all := make([]byte, 0, 512)
	for i := range 256 {
		all = append(all, byte(i), byte(255-i))
	}
	return errors.Join(
		put(ctx, s, k.key("bytes"), all),
		put(ctx, s, k.key("invalid-utf8"), []byte("\xff\xfe\x00ok\xc3\x28\x00")),
		put(ctx, s, k.key("nul"), []byte{0}),
		put(ctx, s, k.key("crlf"), []byte("a\r\nb\r\n\n")),
	)
}

func notFound(ctx context.Context, s spill.Store, k *keys) error {
	key := k.key("missing")
	got, err := s.Get(ctx, key)
	if err == nil {
		return fmt.Errorf("Get(%q) of a key never put = %s, want an error", key, describe(got))
	}
	return keyed("Get", key, err, spill.ErrNotFound)
}

func keyReuse(ctx context.Context, s spill.Store, k *keys) error {
	key := k.key("once")
	first := []byte("first content")
	if err := put(ctx, s, key, first); err != nil {
		return err
	}
	return errors.Join(
		keyed("second Put", key, s.Put(ctx, key, []byte("other content")), spill.ErrKeyExists),
		keyed("Put of the same content", key, s.Put(ctx, key, first), spill.ErrKeyExists),
		keyed("Put of empty content", key, s.Put(ctx, key, nil), spill.ErrKeyExists),
		want(ctx, s, key, first),
	)
}

// content gives distinct content to goroutine g's i-th key.
func content(g, i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("g%d/i%d;", g, i)), 1+(g*7+i)%50)
}

func concurrent(ctx context.Context, s spill.Store, k *keys) error {
	const goroutines, each = 16, 12
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := k.key(fmt.Sprintf("c%d-%d", g, i))
				if err := put(ctx, s, key, content(g, i)); err != nil {
					fail(err)
				}
				// Read a neighbour's key, which may not be written yet.
				h, j := (g+1)%goroutines, i
				other := k.key(fmt.Sprintf("c%d-%d", h, j))
				got, err := s.Get(ctx, other)
				switch {
				case errors.Is(err, spill.ErrNotFound):
				case err != nil:
					fail(fmt.Errorf("Get(%q) while it is being put: %w", other, err))
				case !bytes.Equal(got, content(h, j)):
					fail(fmt.Errorf("Get(%q) while it is being put = %s, want %s", other, describe(got), describe(content(h, j))))
				}
			}
		}()
	}
	wg.Wait()
	for g := range goroutines {
		for i := range each {
			if err := want(ctx, s, k.key(fmt.Sprintf("c%d-%d", g, i)), content(g, i)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return joinSome(errs)
}

// joinSome joins the first few of errs and counts the rest.
func joinSome(errs []error) error {
	const most = 8
	if len(errs) > most {
		errs = append(errs[:most:most], fmt.Errorf("and %d more failures like these", len(errs)-most))
	}
	return errors.Join(errs...)
}

func racingPuts(ctx context.Context, s spill.Store, k *keys) error {
	const n = 8
	var errs []error
	for round := range 4 {
		key := k.key(fmt.Sprintf("race%d", round))
		results := make([]error, n)
		var wg sync.WaitGroup
		for g := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[g] = s.Put(ctx, key, content(g, round))
			}()
		}
		wg.Wait()
		winner := -1
		for g, err := range results {
			switch {
			case err == nil && winner >= 0:
				errs = append(errs, fmt.Errorf("Put(%q): two concurrent Puts succeeded", key))
			case err == nil:
				winner = g
			default:
				if e := keyed("concurrent Put", key, err, spill.ErrKeyExists); e != nil {
					errs = append(errs, e)
				}
			}
		}
		if winner < 0 {
			errs = append(errs, fmt.Errorf("Put(%q): no concurrent Put succeeded", key))
			continue
		}
		if err := want(ctx, s, key, content(winner, round)); err != nil {
			errs = append(errs, fmt.Errorf("content of the Put that succeeded: %w", err))
		}
	}
	return errors.Join(errs...)
}

func copies(ctx context.Context, s spill.Store, k *keys) error {
	var errs []error
	orig := []byte("spilled once, never changed")
	b := bytes.Clone(orig)
	key := k.key("copy")
	if err := s.Put(ctx, key, b); err != nil {
		return fmt.Errorf("Put(%q): %w", key, err)
	}
	b[0] = 'X'
	if err := want(ctx, s, key, orig); err != nil {
		errs = append(errs, fmt.Errorf("after changing the slice given to Put: %w", err))
	}
	got, err := s.Get(ctx, key)
	if err == nil && len(got) > 0 {
		got[0] = 'Y'
		if err := want(ctx, s, key, orig); err != nil {
			errs = append(errs, fmt.Errorf("after changing the slice Get returned: %w", err))
		}
	}
	return errors.Join(errs...)
}

func badKeys(ctx context.Context, s spill.Store, k *keys) error {
	bad := []string{
		"", ".", "..", "a/b", "../x", "/abs", `a\b`, "a b", "a:b", "a.b",
		"Upper", "ü", "a\x00b", "a\nb", "*", "%2e%2e",
		strings.Repeat("k", spill.MaxKeyLen+1),
		k.key("") + strings.Repeat("x", spill.MaxKeyLen),
	}
	var errs []error
	for _, key := range bad {
		errs = append(errs, keyed("Put", key, s.Put(ctx, key, []byte("x")), spill.ErrBadKey))
		_, err := s.Get(ctx, key)
		errs = append(errs, keyed("Get", key, err, spill.ErrBadKey))
	}
	return errors.Join(errs...)
}

func validKeys(ctx context.Context, s spill.Store, k *keys) error {
	long := k.key("")
	long += strings.Repeat("z", spill.MaxKeyLen-len(long))
	return errors.Join(
		put(ctx, s, long, []byte("longest key")),
		put(ctx, s, k.key("-_0123456789abcdefghijklmnopqrstuvwxyz"), []byte("every character")),
		put(ctx, s, k.key("_-"), []byte("punctuation")),
	)
}

// doneContext checks that a Put or Get whose context was cancelled, or
// whose deadline passed, before it started fails with the context's error
// in a *spill.KeyError, and that such a Put stores nothing.
func doneContext(ctx context.Context, s spill.Store, k *keys) error {
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel()
	var errs []error
	for _, c := range []struct {
		name, what string
		ctx        context.Context
		want       error
	}{
		{"cancelled", "a cancelled context", cancelled, context.Canceled},
		{"expired", "an expired context", expired, context.DeadlineExceeded},
	} {
		key := k.key(c.name + "-put")
		errs = append(errs, keyed("Put with "+c.what, key, s.Put(c.ctx, key, []byte("never stored")), c.want))
		_, err := s.Get(ctx, key)
		errs = append(errs, keyed("Get after a Put with "+c.what, key, err, spill.ErrNotFound))
		key = k.key(c.name + "-get")
		if err := put(ctx, s, key, []byte("stored with a live context")); err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = s.Get(c.ctx, key)
		errs = append(errs, keyed("Get with "+c.what, key, err, c.want))
	}
	return errors.Join(errs...)
}

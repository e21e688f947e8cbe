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
// with an error matching the context's, and the Put stores nothing;
// Spillers of two namespaces sharing the store see nothing of each
// other's segments, even given their keys or searching for their
// content, while a Spiller of the same namespace sees them. A store that is a [spill.Lister] is checked to
// list the keys under a prefix, sorted, and to refuse bad prefixes; one
// that is a [spill.Toucher], to touch a key that holds content and to
// report one that does not (a store without them skips those checks).
// Every check uses keys no earlier run used, so it may run against a
// store that outlives it (a shared database).
//
// Durability across processes and machine failures cannot be checked
// from inside one process; test it with crashes of your own.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/internal/storecheck"
	"github.com/pruneguard/pruneguard/spill"
)

// LargeSize is the size of the large content the suite stores.
const LargeSize = 5<<20 + 3

type check struct {
	name string
	run  func(ctx context.Context, s spill.Store, k *keys) error
	// has, when set, says whether a store has what the check checks (an
	// optional interface); a store without it skips the check.
	has   func(spill.Store) bool
	iface string // what has looks for, for the skip message
}

func isLister(s spill.Store) bool  { _, ok := s.(spill.Lister); return ok }
func isToucher(s spill.Store) bool { _, ok := s.(spill.Toucher); return ok }

var checks = []check{
	{"round trip", roundTrip, nil, ""},
	{"empty content", emptyContent, nil, ""},
	{"large content", largeContent, nil, ""},
	{"binary content", binaryContent, nil, ""},
	{"not found", notFound, nil, ""},
	{"key reuse", keyReuse, nil, ""},
	{"concurrent use", concurrent, nil, ""},
	{"concurrent puts to one key", racingPuts, nil, ""},
	{"copies", copies, nil, ""},
	{"bad keys", badKeys, nil, ""},
	{"valid keys", validKeys, nil, ""},
	{"done context", doneContext, nil, ""},
	{"namespaces", namespaces, nil, ""},
	{"list", list, isLister, "spill.Lister"},
	{"touch", touch, isToucher, "spill.Toucher"},
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
		if c.has != nil && !c.has(s) {
			continue
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
			s := newStore(t)
			if c.has != nil && !c.has(s) {
				t.Skipf("the store is not a %s", c.iface)
			}
			if err := c.run(t.Context(), s, newKeys()); err != nil {
				t.Error(err)
			}
		})
	}
}

// keys makes keys unique to one run of one check.
type keys struct{ prefix string }

func newKeys() *keys { return &keys{prefix: storecheck.Prefix()} }

func (k *keys) key(name string) string { return k.prefix + name }

// describe names content briefly in failure messages.
func describe(b []byte) string { return storecheck.Describe(b) }

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
	return storecheck.Named(op, key, err, target, "*spill.KeyError", "key", func(e *spill.KeyError) string { return e.Key })
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
func joinSome(errs []error) error { return storecheck.JoinSome(errs) }

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
	dones, cancel := storecheck.DoneContexts(ctx)
	defer cancel()
	var errs []error
	for _, c := range dones {
		key := k.key(c.Name + "-put")
		errs = append(errs, keyed("Put with "+c.What, key, s.Put(c.Ctx, key, []byte("never stored")), c.Want))
		_, err := s.Get(ctx, key)
		errs = append(errs, keyed("Get after a Put with "+c.What, key, err, spill.ErrNotFound))
		key = k.key(c.Name + "-get")
		if err := put(ctx, s, key, []byte("stored with a live context")); err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = s.Get(c.Ctx, key)
		errs = append(errs, keyed("Get with "+c.What, key, err, c.Want))
	}
	return errors.Join(errs...)
}

// list checks List: the keys under a prefix, sorted, each once, keys of
// empty content too; nothing under a prefix no key has; bad prefixes
// refused; a done context.
func list(ctx context.Context, s spill.Store, k *keys) error {
	l := s.(spill.Lister)
	for _, name := range []string{"list-b", "list-a", "list-ab", "other"} {
		if err := put(ctx, s, k.key(name), []byte(name)); err != nil {
			return err
		}
	}
	if err := put(ctx, s, k.key("list-empty"), nil); err != nil {
		return err
	}
	var errs []error
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{k.key("list-"), []string{k.key("list-a"), k.key("list-ab"), k.key("list-b"), k.key("list-empty")}},
		{k.key("list-a"), []string{k.key("list-a"), k.key("list-ab")}},
		{k.key("list-ab"), []string{k.key("list-ab")}},
		{k.key("none"), nil},
		{k.key(""), []string{k.key("list-a"), k.key("list-ab"), k.key("list-b"), k.key("list-empty"), k.key("other")}},
	} {
		got, err := l.List(ctx, c.prefix)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("List(%q): %w", c.prefix, err))
		case !slices.Equal(got, c.want):
			errs = append(errs, fmt.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want))
		}
	}
	all, err := l.List(ctx, "")
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf(`List(""): %w`, err))
	case !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all):
		errs = append(errs, fmt.Errorf(`List("") is not sorted, or lists a key twice`))
	case !slices.Contains(all, k.key("other")) || !slices.Contains(all, k.key("list-empty")):
		errs = append(errs, fmt.Errorf(`List("") lacks keys put`))
	}
	for _, bad := range []string{"A", "a/b", "a b", "..", strings.Repeat("k", spill.MaxKeyLen+1)} {
		_, err := l.List(ctx, bad)
		errs = append(errs, keyed("List", bad, err, spill.ErrBadKey))
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.List(done, k.key("list-"))
	errs = append(errs, keyed("List with a cancelled context", k.key("list-"), err, context.Canceled))
	return errors.Join(errs...)
}

// touch checks Touch: a key that holds content is touched and keeps it;
// a missing key is not found; a bad key refused; a done context.
func touch(ctx context.Context, s spill.Store, k *keys) error {
	t := s.(spill.Toucher)
	key := k.key("touched")
	if err := put(ctx, s, key, []byte("kept alive")); err != nil {
		return err
	}
	var errs []error
	for range 2 {
		if err := t.Touch(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("Touch(%q): %w", key, err))
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	return errors.Join(append(errs,
		want(ctx, s, key, []byte("kept alive")),
		keyed("Touch", k.key("missing"), t.Touch(ctx, k.key("missing")), spill.ErrNotFound),
		keyed("Touch", "a/b", t.Touch(ctx, "a/b"), spill.ErrBadKey),
		keyed("Touch with a cancelled context", key, t.Touch(done, key), context.Canceled),
	)...)
}

// namespaces checks what Spillers of different namespaces sharing the
// store see of each other's segments: nothing, even given the key; the
// same namespace in another Spiller (another process) sees them.
func namespaces(ctx context.Context, s spill.Store, k *keys) error {
	ns := func(name string) string { return spill.Namespace(k.prefix, name) }
	alice := &spill.Spiller{Store: s, Namespace: ns("alice")}
	bob := &spill.Spiller{Store: s, Namespace: ns("bob")}
	secret := []byte("alice's one-time code 8f3a-" + k.prefix)
	p, err := alice.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Role: pruneguard.RoleTool, Content: secret}})
	if err != nil {
		return fmt.Errorf("spill in one namespace: %w", err)
	}
	var errs []error
	if bob.Resolvable(p) {
		errs = append(errs, errors.New("another namespace's Spiller resolves the pointer"))
	}
	if err := bob.Verify(ctx, p); !errors.Is(err, spill.ErrNotFound) {
		errs = append(errs, fmt.Errorf("another namespace's Verify: %v, want an error matching spill.ErrNotFound", err))
	}
	if ms, err := bob.Recall(ctx, p); !errors.Is(err, spill.ErrNotFound) || len(ms) > 0 {
		errs = append(errs, fmt.Errorf("another namespace's Recall: %d messages, %v; want an error matching spill.ErrNotFound", len(ms), err))
	}
	args, _ := json.Marshal(map[string]string{"key": p.Key})
	if out, err := bob.HandleRecall(ctx, args); !errors.Is(err, spill.ErrNotFound) || out != "" {
		errs = append(errs, fmt.Errorf("another namespace's HandleRecall: %q, %v; want an error matching spill.ErrNotFound", out, err))
	}
	if hits, err := bob.Search(ctx, "8f3a-"+k.prefix); err != nil || len(hits) > 0 {
		errs = append(errs, fmt.Errorf("another namespace's Search: %d hits, %v; want none", len(hits), err))
	}
	again := &spill.Spiller{Store: s, Namespace: ns("alice")}
	if ms, err := again.Recall(ctx, p); err != nil || len(ms) != 1 || !bytes.Equal(ms[0].Content, secret) {
		errs = append(errs, fmt.Errorf("the same namespace in a new Spiller: Recall = %d messages, %v", len(ms), err))
	}
	if hits, err := again.Search(ctx, "8f3a-"+k.prefix); err != nil || len(hits) != 1 || hits[0].Pointer != p {
		errs = append(errs, fmt.Errorf("the same namespace in a new Spiller: Search = %d hits, %v; want the segment spilled", len(hits), err))
	}
	if q, err := again.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Role: pruneguard.RoleTool, Content: secret}}); err != nil || q != p {
		errs = append(errs, fmt.Errorf("the same messages spilled again in the same namespace: %v, %v; want %v", q, err, p))
	}
	return errors.Join(errs...)
}

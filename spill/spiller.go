package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pruneguard/pruneguard"
)

// DefaultName is the store name a Spiller with no Name puts in its
// pointers.
const DefaultName = "spill"

// Spiller spills messages to a Store and resolves the pointers it made.
// It is the [pruneguard.Resolver] a Context needs so that irreducible
// content may leave the prompt once it is stored.
//
// One spill stores any number of messages under one key, a segment, and
// every message of it shares one pointer: the pointers a prompt carries
// grow with the number of spills, not of messages. A segment is written,
// read back and compared byte for byte before its pointer is handed out,
// and it describes itself (its key, its message count and a SHA-256 of
// its messages), so a pointer never resolves to content that was not
// wholly and verifiably written.
//
// # Keys
//
// A segment's key is derived from the Spiller's Namespace and a hash of
// the segment's encoded messages, so the same session spilling the same
// messages gets the same key, in any process. Content already stored is
// not written again: when the key holds a segment, the Spiller reads it
// back and hands out its pointer if it holds the same messages, and fails
// with [ErrCorrupt] if it holds others (a hash collision, or a store
// changed behind its back); a key never comes to mean other content. A
// key is "seg-" and 24 hex digits without a namespace, and
// "seg-NS_" and 24 hex digits with one, where NS is the namespace when it
// is at most 32 bytes of lower-case letters, digits and '-', and '_' and
// 24 hex digits of its hash otherwise: at most 61 bytes, always a
// [ValidKey].
//
// # Namespaces
//
// Namespace scopes the Spiller to one session (use the session's id, or
// [Namespace] of a tenant and a session) on a store that many sessions or
// tenants share: its keys are under the namespace, and Resolvable,
// Verify, Recall, Touch and HandleRecall answer only for keys of its own
// namespace. A key of another namespace gets an error matching
// [ErrNotFound] and never the content, even when the store holds it, and
// a query searches the namespace's segments only. A Spiller with no
// Namespace answers for every key of its store, as before namespaces
// existed, and its queries search the segments written with no namespace:
// use it only on a store that one session, or one trust domain, owns.
//
// # Resolving
//
// The index of segments lives in the store itself, and the Spiller keeps
// in memory what it learnt of it: Resolvable answers from that memory
// alone, true for every segment it wrote or has checked, and never reads
// the store, since the gates call it while the Context is locked. A
// segment it does not know (one an earlier process or another host
// wrote) resolves once [Spiller.Verify] has read and checked it;
// [pruneguard.RestoreContext] does so for the pointers of a saved state.
// A runtime that hands a Context pointers in any other way (a message
// appended with its Pointer set) verifies them first. Set Name to tell
// stores apart in pointers (default [DefaultName]); Spillers that share a
// Store must share its Name to resolve each other's pointers.
//
// Every method that reads or writes the store takes a context, which it
// passes to the Store: it governs that I/O.
//
// The zero Spiller has no store: its methods change nothing and fail with
// an error matching [ErrNoStore], and Resolvable answers false. Set the
// fields before first use and do not change them after. A Spiller is
// safe for concurrent use; it must not be copied after first use.
type Spiller struct {
	Store Store
	Name  string
	// Namespace scopes the Spiller to one session; see Namespaces above.
	// Empty means none.
	Namespace string
	// MaxRecallBytes bounds every answer of HandleRecall, in bytes of
	// JSON: a segment or a query's hits larger than that are answered in
	// pages. Zero means [DefaultMaxRecallBytes]; a value below
	// [MinRecallBytes] counts as MinRecallBytes. Set it below the share of
	// the prompt a recall answer may take, in bytes (a tokenizer that never
	// makes a token of less than one byte counts an answer as at most that
	// many tokens).
	MaxRecallBytes int
	// NoDescriptions makes PointerText and LongestPointerText the plain
	// [PointerText]: a pointer line then costs up to [MaxDescriptionLen]
	// bytes less, and says nothing of what its segment holds. Segments
	// carry their description all the same.
	NoDescriptions bool

	once   sync.Once
	prefix string // of every key of Namespace

	mu      sync.RWMutex
	index   map[string]entry
	answers []answered // the last segments answerKey cut into items
}

// entry is what a Spiller knows of one key.
type entry struct {
	err  error  // nil: resolves; otherwise why it does not (forgotten, missing, corrupt)
	desc string // the segment's description, when it resolves
}

func (s *Spiller) name() string {
	if s.Name == "" {
		return DefaultName
	}
	return s.Name
}

func (s *Spiller) ready() bool { return s != nil && s.Store != nil }

// keyPrefix is the start of every key of the Spiller's namespace.
func (s *Spiller) keyPrefix() string {
	s.once.Do(func() { s.prefix = keyPrefixFor(s.Namespace) })
	return s.prefix
}

// owns reports whether key is a key of the Spiller's namespace. Without a
// namespace every key is.
func (s *Spiller) owns(key string) bool {
	if s.Namespace == "" {
		return true
	}
	rest, ok := strings.CutPrefix(key, s.keyPrefix())
	return ok && hashSuffix(rest)
}

// errOtherNamespace is the error for a key outside a Spiller's namespace:
// to that Spiller, it holds nothing.
var errOtherNamespace = fmt.Errorf("%w: not a key of this spiller's namespace", ErrNotFound)

// SpillMessages stores ms as one segment under the key its namespace and
// content give, reads it back to verify it, and returns the pointer the
// messages share. When the key holds a segment already, it is not
// written again: the segment is read back and its pointer handed out if
// it holds the same messages (see [Spiller]). It does not touch any
// Context: record the pointer with [pruneguard.Context.Spill], or use
// [Spiller.Spill]. The messages must be complete: a streaming message's
// content is not final (Spill checks this; SpillMessages cannot). It
// fails with [ErrNotText] for an id, role or tool name that is not
// UTF-8, with [ErrCorrupt] when what the store gives back differs from
// what was written, or the key holds other messages, and with the
// store's error otherwise (ctx's, when it ends first); no pointer is
// handed out then. It implements [pruneguard.Spiller].
func (s *Spiller) SpillMessages(ctx context.Context, ms []pruneguard.Message) (pruneguard.Pointer, error) {
	if !s.ready() {
		return pruneguard.Pointer{}, ErrNoStore
	}
	if len(ms) == 0 {
		return pruneguard.Pointer{}, ErrNothingToSpill
	}
	body, err := encodeMessages(ms)
	if err != nil {
		return pruneguard.Pointer{}, err
	}
	key := segmentKey(s.Namespace, s.keyPrefix(), body)
	if err := ctx.Err(); err != nil {
		return pruneguard.Pointer{}, keyErr("spill", key, err)
	}
	p := pruneguard.Pointer{Store: s.name(), Key: key}
	if s.Resolvable(p) {
		// Stored and verified already: put off its expiry, or find it
		// expired and store it again.
		err := s.refresh(ctx, "spill", key)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return pruneguard.Pointer{}, err
		}
	}
	desc := describe(ms)
	b, err := encodeSegment(key, len(ms), desc, body)
	if err != nil {
		return pruneguard.Pointer{}, err
	}
	switch err := s.Store.Put(ctx, key, b); {
	case errors.Is(err, ErrKeyExists):
		if err := s.reuse(ctx, key, ms, body); err != nil {
			return pruneguard.Pointer{}, err
		}
		return p, nil
	case err != nil:
		return pruneguard.Pointer{}, wrapKey("spill", key, err)
	}
	back, err := s.Store.Get(ctx, key)
	if err != nil {
		return pruneguard.Pointer{}, wrapKey("spill", key, err)
	}
	if !bytes.Equal(back, b) {
		return pruneguard.Pointer{}, keyErr("spill", key, fmt.Errorf("%w: content read back differs from content written", ErrCorrupt))
	}
	if got, err := decodeSegment(key, back); err != nil || !sameMessages(got.ms, ms) {
		return pruneguard.Pointer{}, keyErr("spill", key, fmt.Errorf("%w: messages read back differ from messages spilled", ErrCorrupt))
	}
	s.remember(key, entry{desc: desc})
	return p, nil
}

// reuse checks that key, which a Put found used, holds the segment of
// ms, whose encoding is body, and remembers it if so.
func (s *Spiller) reuse(ctx context.Context, key string, ms []pruneguard.Message, body []byte) error {
	back, err := s.Store.Get(ctx, key)
	if err != nil {
		return wrapKey("spill", key, err)
	}
	got, err := decodeSegment(key, back)
	if err != nil {
		return keyErr("spill", key, err)
	}
	if !bytes.Equal(got.body, body) || !sameMessages(got.ms, ms) {
		return keyErr("spill", key, fmt.Errorf("%w: the key holds other messages", ErrCorrupt))
	}
	if err := s.refresh(ctx, "spill", key); err != nil {
		return err
	}
	s.remember(key, entry{desc: got.desc})
	return nil
}

// wrapKey returns err as it is when it already names a key, and wrapped
// in a *KeyError otherwise.
func wrapKey(op, key string, err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		return err
	}
	return keyErr(op, key, err)
}

// remember records what is known of key. A description once known is
// kept, so that the text of a pointer does not change.
func (s *Spiller) remember(key string, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index == nil {
		s.index = make(map[string]entry)
	}
	if e.desc == "" {
		e.desc = s.index[key].desc
	}
	s.index[key] = e
}

// known returns what the index says of key.
func (s *Spiller) known(key string) (e entry, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok = s.index[key]
	return e, ok
}

// Spill stores the messages ids of c as one segment and records its
// pointer on each of them with [pruneguard.Context.Spill]; they may then
// be evicted whatever their class, while the pointer resolves. A message
// that is still streaming is refused with [ErrOpenMessage], and one c does
// not hold with [pruneguard.ErrUnknownMessage], both in a *MessageError,
// before anything is stored. If content changes or a pointer cannot be
// recorded, the pointers recorded so far are taken back and the segment
// is forgotten. The store is written with ctx, while c is not locked.
func (s *Spiller) Spill(ctx context.Context, c *pruneguard.Context, ids ...pruneguard.MessageID) (pruneguard.Pointer, error) {
	if !s.ready() {
		return pruneguard.Pointer{}, ErrNoStore
	}
	ids = dedupe(ids)
	if len(ids) == 0 {
		return pruneguard.Pointer{}, ErrNothingToSpill
	}
	// Check for streaming messages before reading content: a message
	// closed now never opens again, so what is read next is final.
	if err := refuseOpen(c, ids); err != nil {
		return pruneguard.Pointer{}, err
	}
	ms := make([]pruneguard.Message, len(ids))
	for i, id := range ids {
		m, ok := c.Message(id)
		if !ok {
			return pruneguard.Pointer{}, &MessageError{ID: id, Err: pruneguard.ErrUnknownMessage}
		}
		ms[i] = m
	}
	p, err := s.SpillMessages(ctx, ms)
	if err != nil {
		return pruneguard.Pointer{}, err
	}
	for i, id := range ids {
		err := c.Spill(id, p)
		if err == nil {
			err = unchanged(c, ms[i])
		}
		if err != nil {
			for _, m := range ms[:i+1] {
				c.Spill(m.ID, m.Pointer) // restore; fails only if m left c
			}
			s.Forget(p)
			return pruneguard.Pointer{}, err
		}
	}
	return p, nil
}

// unchanged checks, after its pointer was recorded, that message m is
// still closed and holds the content that was spilled.
func unchanged(c *pruneguard.Context, m pruneguard.Message) error {
	if err := refuseOpen(c, []pruneguard.MessageID{m.ID}); err != nil {
		return err
	}
	now, ok := c.Message(m.ID)
	if !ok {
		return &MessageError{ID: m.ID, Err: pruneguard.ErrUnknownMessage}
	}
	if !bytes.Equal(now.Content, m.Content) {
		return &MessageError{ID: m.ID, Err: errors.New("content changed while it was spilled")}
	}
	return nil
}

func refuseOpen(c *pruneguard.Context, ids []pruneguard.MessageID) error {
	open := c.OpenMessages()
	if len(open) == 0 {
		return nil
	}
	for _, id := range ids {
		for _, o := range open {
			if o == id {
				return &MessageError{ID: id, Err: ErrOpenMessage}
			}
		}
	}
	return nil
}

func dedupe(ids []pruneguard.MessageID) []pruneguard.MessageID {
	seen := make(map[pruneguard.MessageID]bool, len(ids))
	out := make([]pruneguard.MessageID, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// Resolvable reports whether p leads to a segment of this Spiller's
// store and namespace, whole and verified, and that has not been
// forgotten, as far as the Spiller knows: it answers from memory, true
// for the pointers it wrote or [Spiller.Verify] checked, false for any
// other, and never reads the store. It implements [pruneguard.Resolver].
func (s *Spiller) Resolvable(p pruneguard.Pointer) bool {
	if !s.ready() || p.Store != s.name() || !s.owns(p.Key) {
		return false
	}
	e, known := s.known(p.Key)
	return known && e.err == nil
}

// Verify reads the segment p points to from the store and checks it (its
// checksum, its key, its messages), even when the Spiller already resolves
// it, and remembers the answer when it is definite: resolvable, or not
// found or corrupt. A read that fails otherwise (ctx ended, the store
// unreachable) is not remembered: the pointer stays as it was. A pointer
// known not to resolve (forgotten, missing, corrupt) is not read again:
// Verify returns the error it had. A key of another namespace fails with
// an error matching [ErrNotFound], and the store is not read. Verify the
// pointers a Context gets from elsewhere before its prunes and guard
// checks ask about them (see [Spiller]); it implements
// [pruneguard.Verifier]. On a store that expires content, Verify puts off
// the segment's expiry too (see [Spiller.Touch]).
func (s *Spiller) Verify(ctx context.Context, p pruneguard.Pointer) error {
	_, err := s.read(ctx, "resolve", p)
	return err
}

// read gets and checks the segment of p, and updates the index.
func (s *Spiller) read(ctx context.Context, op string, p pruneguard.Pointer) (stored, error) {
	b, known, err := s.fetch(ctx, op, p)
	if err != nil {
		return stored{}, err
	}
	return s.check(ctx, op, p, b, known)
}

// fetch gets the bytes of the segment of p from the store, and reports
// whether the index knew p.
func (s *Spiller) fetch(ctx context.Context, op string, p pruneguard.Pointer) ([]byte, bool, error) {
	if !s.ready() {
		return nil, false, ErrNoStore
	}
	if p.Store != s.name() {
		return nil, false, keyErr(op, p.Key, fmt.Errorf("%w: %q, not %q", ErrForeignPointer, p.Store, s.name()))
	}
	// Neither is remembered: any string could come here.
	if !ValidKey(p.Key) {
		return nil, false, keyErr(op, p.Key, ErrBadKey)
	}
	if !s.owns(p.Key) {
		return nil, false, keyErr(op, p.Key, errOtherNamespace)
	}
	old, known := s.known(p.Key)
	if old.err != nil {
		return nil, false, wrapKey(op, p.Key, old.err)
	}
	b, err := s.Store.Get(ctx, p.Key)
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			s.remember(p.Key, entry{err: err})
		}
		return nil, false, wrapKey(op, p.Key, err)
	}
	return b, known, nil
}

// check decodes b, the segment of p the store gave, and updates the
// index.
func (s *Spiller) check(ctx context.Context, op string, p pruneguard.Pointer, b []byte, known bool) (stored, error) {
	seg, err := decodeSegment(p.Key, b)
	if err != nil {
		s.remember(p.Key, entry{err: err})
		return stored{}, keyErr(op, p.Key, err)
	}
	if op == "resolve" {
		if err := s.refresh(ctx, op, p.Key); err != nil {
			return stored{}, err
		}
	}
	if !known {
		s.remember(p.Key, entry{desc: seg.desc})
	}
	return seg, nil
}

// Forget makes p unresolvable for this Spiller, for example when the
// store expires it. The content stays in the store. Spilling the same
// messages again makes it resolvable again, once they are verified.
func (s *Spiller) Forget(p pruneguard.Pointer) {
	if !s.ready() || p.Store != s.name() || !s.owns(p.Key) {
		return
	}
	s.remember(p.Key, entry{err: errForgotten})
}

var errForgotten = fmt.Errorf("%w: pointer forgotten", ErrNotFound)

// Discard takes back a segment the Spiller wrote and that no pointer in
// any prompt names (a guard's prune it was written for was refused): the
// Spiller forgets it, so that spilling the same messages again writes
// them again, and a store that is a [Remover] removes it. Pointers to it
// stop resolving. A pointer of another store or namespace is left alone.
// It implements [pruneguard.Discarder].
func (s *Spiller) Discard(ctx context.Context, p pruneguard.Pointer) error {
	if !s.ready() || p.Store != s.name() || !s.owns(p.Key) {
		return nil
	}
	s.mu.Lock()
	delete(s.index, p.Key)
	s.mu.Unlock()
	if r, ok := s.Store.(Remover); ok {
		return r.Remove(ctx, p.Key)
	}
	return nil
}

// Recall reads back the messages of the segment p points to, in the order
// they were spilled, after checking the segment. Every field of each
// message comes back as it was spilled (IsError, Requires, each call's
// Server, a Class beyond Irreducible too), except Pointer, which a
// segment does not keep, and empty slices, which come back nil. A pointer of another
// store fails with [ErrForeignPointer]; a forgotten or missing one with
// [ErrNotFound]; a damaged segment with [ErrCorrupt]. A segment read whole
// resolves from then on, as after [Spiller.Verify].
func (s *Spiller) Recall(ctx context.Context, p pruneguard.Pointer) ([]pruneguard.Message, error) {
	seg, err := s.read(ctx, "recall", p)
	return seg.ms, err
}

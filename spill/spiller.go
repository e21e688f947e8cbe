package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/pruneguard/pruneguard"
)

// DefaultName is the store name a Spiller with no Name puts in its
// pointers.
const DefaultName = "spill"

// segmentPrefix starts the key of every segment.
const segmentPrefix = "seg-"

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
// an error matching [ErrNoStore], and Resolvable answers false. A Spiller
// is safe for concurrent use; it must not be copied after first use.
type Spiller struct {
	Store Store
	Name  string

	mu    sync.RWMutex
	index map[string]error // key: nil resolves; otherwise why it does not (forgotten, missing, corrupt)
}

func (s *Spiller) name() string {
	if s.Name == "" {
		return DefaultName
	}
	return s.Name
}

func (s *Spiller) ready() bool { return s != nil && s.Store != nil }

// SpillMessages stores ms as one segment under a fresh key, reads it back
// to verify it, and returns the pointer the messages share. It does not
// touch any Context: record the pointer with [pruneguard.Context.Spill],
// or use [Spiller.Spill]. The messages must be complete: a streaming
// message's content is not final (Spill checks this; SpillMessages cannot).
// It fails with [ErrNotText] for an id, role or tool name that is not
// UTF-8, with [ErrCorrupt] when what the store gives back differs from
// what was written, and with the store's error otherwise (ctx's, when it
// ends first); no pointer is handed out then. It implements
// [pruneguard.Spiller].
func (s *Spiller) SpillMessages(ctx context.Context, ms []pruneguard.Message) (pruneguard.Pointer, error) {
	if !s.ready() {
		return pruneguard.Pointer{}, ErrNoStore
	}
	if len(ms) == 0 {
		return pruneguard.Pointer{}, ErrNothingToSpill
	}
	var err error
	// A fresh random key is free unless the store is shared with something
	// else that chose it; try another then.
	for range 3 {
		key := segmentPrefix + uuid.NewString()
		var p pruneguard.Pointer
		p, err = s.write(ctx, key, ms)
		if !errors.Is(err, ErrKeyExists) {
			return p, err
		}
	}
	return pruneguard.Pointer{}, err
}

func (s *Spiller) write(ctx context.Context, key string, ms []pruneguard.Message) (pruneguard.Pointer, error) {
	b, err := encodeSegment(key, ms)
	if err != nil {
		return pruneguard.Pointer{}, err
	}
	if err := s.Store.Put(ctx, key, b); err != nil {
		return pruneguard.Pointer{}, wrapKey("spill", key, err)
	}
	back, err := s.Store.Get(ctx, key)
	if err != nil {
		return pruneguard.Pointer{}, wrapKey("spill", key, err)
	}
	if !bytes.Equal(back, b) {
		return pruneguard.Pointer{}, keyErr("spill", key, fmt.Errorf("%w: content read back differs from content written", ErrCorrupt))
	}
	if got, _, err := decodeSegment(key, back); err != nil || !sameMessages(got, ms) {
		return pruneguard.Pointer{}, keyErr("spill", key, fmt.Errorf("%w: messages read back differ from messages spilled", ErrCorrupt))
	}
	s.remember(key, nil)
	return pruneguard.Pointer{Store: s.name(), Key: key}, nil
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

// remember records whether key resolves: err is nil if it does, or the
// reason it does not.
func (s *Spiller) remember(key string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index == nil {
		s.index = make(map[string]error)
	}
	s.index[key] = err
}

// known returns what the index says of key.
func (s *Spiller) known(key string) (err error, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	err, ok = s.index[key]
	return err, ok
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

// Resolvable reports whether p leads to a segment this Spiller's store
// holds, whole and verified, and that has not been forgotten, as far as
// the Spiller knows: it answers from memory, true for the pointers it
// wrote or [Spiller.Verify] checked, false for any other, and never
// reads the store. It implements [pruneguard.Resolver].
func (s *Spiller) Resolvable(p pruneguard.Pointer) bool {
	if !s.ready() || p.Store != s.name() {
		return false
	}
	err, known := s.known(p.Key)
	return known && err == nil
}

// Verify reads the segment p points to from the store and checks it (its
// checksum, its key, its messages), even when the Spiller already resolves
// it, and remembers the answer when it is definite: resolvable, or not
// found or corrupt. A read that fails otherwise (ctx ended, the store
// unreachable) is not remembered: the pointer stays as it was. A pointer
// known not to resolve (forgotten, missing, corrupt) is not read again:
// Verify returns the error it had. Verify the pointers a Context gets from
// elsewhere before its prunes and guard checks ask about them (see
// [Spiller]); it implements [pruneguard.Verifier].
func (s *Spiller) Verify(ctx context.Context, p pruneguard.Pointer) error {
	_, _, err := s.read(ctx, "resolve", p)
	return err
}

// read gets and decodes the segment of p, and updates the index.
func (s *Spiller) read(ctx context.Context, op string, p pruneguard.Pointer) ([]pruneguard.Message, []byte, error) {
	if !s.ready() {
		return nil, nil, ErrNoStore
	}
	if p.Store != s.name() {
		return nil, nil, keyErr(op, p.Key, fmt.Errorf("%w: %q, not %q", ErrForeignPointer, p.Store, s.name()))
	}
	old, known := s.known(p.Key)
	if old != nil {
		return nil, nil, wrapKey(op, p.Key, old)
	}
	if !ValidKey(p.Key) {
		// Not remembered: any string could come here.
		return nil, nil, keyErr(op, p.Key, ErrBadKey)
	}
	b, err := s.Store.Get(ctx, p.Key)
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			s.remember(p.Key, err)
		}
		return nil, nil, wrapKey(op, p.Key, err)
	}
	ms, body, err := decodeSegment(p.Key, b)
	if err != nil {
		s.remember(p.Key, err)
		return nil, nil, keyErr(op, p.Key, err)
	}
	if !known {
		s.remember(p.Key, nil)
	}
	return ms, body, nil
}

// Forget makes p unresolvable for this Spiller, for example when the
// store expires it. The content stays in the store.
func (s *Spiller) Forget(p pruneguard.Pointer) {
	if !s.ready() || p.Store != s.name() {
		return
	}
	s.remember(p.Key, errForgotten)
}

var errForgotten = fmt.Errorf("%w: pointer forgotten", ErrNotFound)

// Recall reads back the messages of the segment p points to, in the order
// they were spilled, after checking the segment. Every field of each
// message comes back as it was spilled (IsError, Requires, each call's
// Server, a Class beyond Irreducible too), except Pointer, which a
// segment does not keep, and empty slices, which come back nil. A pointer of another
// store fails with [ErrForeignPointer]; a forgotten or missing one with
// [ErrNotFound]; a damaged segment with [ErrCorrupt]. A segment read whole
// resolves from then on, as after [Spiller.Verify].
func (s *Spiller) Recall(ctx context.Context, p pruneguard.Pointer) ([]pruneguard.Message, error) {
	ms, _, err := s.read(ctx, "recall", p)
	return ms, err
}

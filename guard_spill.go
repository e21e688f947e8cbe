package pruneguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Spiller is the durable store a [Guard] spills to: it stores messages
// and resolves the pointers it hands out. The package spill's Spiller is
// one; its SpillMessages writes the messages as one segment, reads it
// back and compares it before it returns the pointer.
//
// The guard calls SpillMessages from [Guard.CheckContext] with the
// context it was given, and with no lock of the Context held; the
// Resolver's Resolvable is called under the lock and answers from memory
// (see [Resolver]).
//
// A nil Spiller in a Guard spills nothing.
type Spiller interface {
	Resolver
	// SpillMessages stores ms together and returns the pointer they
	// share, once the content is durable and verified to read back
	// identical; otherwise an error, and no pointer. ctx governs the
	// I/O: once it is done, SpillMessages fails.
	SpillMessages(ctx context.Context, ms []Message) (Pointer, error)
}

// Discarder is a [Spiller] that can take back a segment it stored: a
// [Guard] discards the segment it spilled for a decision its Screen then
// refused, once no message of the segment carries its pointer, so that
// the store keeps nothing the prompt does not name. The package spill's
// Spiller is one. A Spiller that is not keeps such segments.
type Discarder interface {
	// Discard takes back the segment p points to; ctx governs the I/O.
	Discard(ctx context.Context, p Pointer) error
}

// ErrSpill is matched (with errors.Is) by every [*SpillError].
var ErrSpill = errors.New("pruneguard: spill failed")

// ErrUnresolvedSpill: a spill succeeded but the Context's Resolver does
// not resolve its pointer, so the content could not leave the prompt.
// Make the store the Context's Config.Resolver too.
var ErrUnresolvedSpill = errors.New("pruneguard: the context's resolver does not resolve the spill's pointer")

// SpillError reports a spill a [Guard] tried and that failed: the
// messages stay in the prompt, unspilled. It matches [ErrSpill] and its
// Err with errors.Is.
//
// The zero SpillError, with no Err, is not a valid error; the package never
// returns one.
type SpillError struct {
	Units    []UnitID    // the units whose content was to be spilled
	Messages []MessageID // the messages, in transcript order
	// Err is the store's error, [ErrUnresolvedSpill], or the
	// [*InputError] of recording a pointer.
	Err error
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *SpillError) Error() string {
	return fmt.Sprintf("pruneguard: spill failed: units %s messages %s: %s", joinIDs(e.Units), joinIDs(e.Messages),
		strings.TrimPrefix(e.Err.Error(), "pruneguard: "))
}

// Unwrap returns [ErrSpill] and Err.
func (e *SpillError) Unwrap() []error { return []error{ErrSpill, e.Err} }

// SpillReport is one spill a [Guard] made: the messages stored together
// and the pointer recorded on each. The zero SpillReport is no spill.
type SpillReport struct {
	Pointer  Pointer
	Units    []UnitID
	Messages []MessageID // in the order stored
	Tokens   int         // the messages' tokens
}

// spillCand is a unit to spill whole (stub empty) or a result to spill
// so that it may be stubbed.
type spillCand struct {
	unit UnitID
	stub MessageID
}

// spill stores the messages of the candidates that still have no
// resolvable pointer as one segment and records the pointer on each. It
// reports whether anything was spilled; a failure is reported in the
// result and leaves its units out of the rest of the check.
func (r *guardRun) spill(cands []spillCand) bool {
	c := r.c
	if r.spillTried == nil {
		r.spillTried = make(map[string]bool)
	}
	var rep SpillReport
	var ms []Message
	var olds []Pointer
	taken := map[MessageID]bool{}
	add := func(u UnitID, id MessageID) {
		if taken[id] {
			return
		}
		taken[id] = true
		m, ok := c.Message(id)
		if !ok || r.resolvable(m.Pointer) {
			return
		}
		ms = append(ms, m)
		olds = append(olds, m.Pointer)
		rep.Messages = append(rep.Messages, id)
		rep.Tokens += m.Tokens
		if len(rep.Units) == 0 || rep.Units[len(rep.Units)-1] != u {
			rep.Units = append(rep.Units, u)
		}
	}
	for _, k := range cands {
		if k.stub != "" {
			r.spillTried[string(k.stub)] = true
			if u, ok := c.UnitOf(k.stub); ok && prunable(u) {
				add(k.unit, k.stub)
			}
			continue
		}
		r.spillTried[string(k.unit)] = true
		u, ok := c.UnitOf(MessageID(k.unit))
		if !ok || u.ID != k.unit || !prunable(u) {
			// No longer closed, or unread (a result joined it), or
			// merged: the next prune says.
			continue
		}
		for _, id := range u.Messages {
			add(k.unit, id)
		}
	}
	if len(ms) == 0 {
		return false
	}
	ptr, err := r.g.Spill.SpillMessages(r.ctx, ms)
	if err == nil && !r.resolvable(ptr) {
		err = ErrUnresolvedSpill
	}
	if err == nil {
		for i, m := range ms {
			if e := c.Spill(m.ID, ptr); e != nil {
				for j := range i {
					c.Spill(ms[j].ID, olds[j]) // take back; fails only if it left
				}
				err = e
				break
			}
		}
	}
	if err != nil {
		se := &SpillError{Units: rep.Units, Messages: rep.Messages, Err: err}
		r.res.SpillErrors = append(r.res.SpillErrors, se)
		r.log.spillFailed(r, se, rep.Tokens)
		for _, k := range cands {
			if k.stub != "" {
				r.v.hideStub(k.stub)
			} else {
				r.noEvictUnit(k.unit)
			}
		}
		return false
	}
	rep.Pointer = ptr
	if r.spilledNow == nil {
		r.spilledNow = make(map[MessageID]Pointer, len(ms))
	}
	for i, m := range ms {
		r.spilledNow[m.ID] = olds[i]
	}
	r.res.Spills = append(r.res.Spills, rep)
	r.log.spill(r, rep)
	return true
}

func (r *guardRun) resolvable(p Pointer) bool {
	return !p.IsZero() && r.cfg.Resolver != nil && r.cfg.Resolver.Resolvable(p)
}

// takeBack gives the messages ids this check spilled, and whose pruning
// the Screen then refused, their pointers from before the spill, so that
// a later round spills them with what it prunes, in one segment, and the
// prompt carries no pointer to a segment nothing left for. A segment none
// of whose messages carries its pointer any more, nor left, is dropped
// from the result's spills and discarded (see [Discarder]).
func (r *guardRun) takeBack(ids []MessageID) {
	var ptrs []Pointer
	for _, id := range ids {
		old, ok := r.spilledNow[id]
		if !ok {
			continue
		}
		if m, ok := r.c.Message(id); ok && !slices.Contains(ptrs, m.Pointer) {
			ptrs = append(ptrs, m.Pointer)
		}
		delete(r.spilledNow, id)
		_ = r.c.Spill(id, old) // fails only if the message left
	}
	for _, p := range ptrs {
		r.discard(p)
	}
}

// discard drops the spill of pointer p from the result and discards its
// segment, when no message of it carries p nor left the Context.
func (r *guardRun) discard(p Pointer) {
	i := slices.IndexFunc(r.res.Spills, func(s SpillReport) bool { return s.Pointer == p })
	if i < 0 {
		return
	}
	for _, id := range r.res.Spills[i].Messages {
		if m, ok := r.c.Message(id); !ok || m.Pointer == p {
			return // left behind its pointer, or still carries it
		}
	}
	r.res.Spills = slices.Delete(r.res.Spills, i, i+1)
	if d, ok := r.g.Spill.(Discarder); ok {
		_ = d.Discard(r.ctx, p) // a segment left behind is harmless: nothing names it
	}
}

// spilledFor reports whether decision d prunes a message this check
// spilled.
func (r *guardRun) spilledFor(d *Decision) bool {
	if len(r.spilledNow) == 0 {
		return false
	}
	for _, ids := range [][]MessageID{d.Evict, d.Stub} {
		for _, id := range ids {
			if _, ok := r.spilledNow[id]; ok {
				return true
			}
		}
	}
	return false
}

// applied forgets the messages of an applied decision: their spill
// stands.
func (r *guardRun) applied(d *Decision) {
	if len(r.spilledNow) == 0 {
		return
	}
	for _, id := range d.Evict {
		delete(r.spilledNow, id)
	}
	for _, id := range d.Stub {
		delete(r.spilledNow, id)
	}
}

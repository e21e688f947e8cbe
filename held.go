package pruneguard

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard/internal/arena"
)

// Held accounts, in tokens, for what a check left in the prompt that no
// prune of it could touch, each token counted once, in the first of
// these that holds it:
//
//   - Lines: pointer lines (Config.PointerTokens), one per segment of
//     the messages evicted behind a pointer;
//   - Tools: the tool schemas in the prompt and the tombstones that stand
//     (with Config.Counter);
//   - InFlight: units with a pending call or a streaming message;
//   - Unread: units holding a message the model has not read yet
//     ([Context.Unread]);
//   - Pinned: units holding a pinned message;
//   - Refused: units the gates refused in this check, or in earlier ones
//     when those refusals are the check's Reason.
//
// What a check left beyond these is Unreached: what it could have pruned
// but did not reach (the policy proposed no more, its keep, Guard.Rounds),
// or what the Screen refused.
//
// The zero Held holds nothing: a check within its budget reports it.
type Held struct {
	Lines, Tools, InFlight, Unread, Pinned, Refused int
	Unreached                                       int
}

// total is what h's parts but Unreached hold.
func (h Held) total() int {
	return h.Lines + h.Tools + h.InFlight + h.Unread + h.Pinned + h.Refused
}

// IsZero reports whether h holds nothing.
func (h Held) IsZero() bool { return h == Held{} }

// String lists the parts of h that hold tokens, largest first, as
// "pointer lines 300, pinned 40".
func (h Held) String() string {
	parts := []struct {
		name string
		n    int
	}{
		{"pointer lines", h.Lines}, {"schemas and tombstones", h.Tools}, {"in flight", h.InFlight},
		{"unread", h.Unread}, {"pinned", h.Pinned}, {"refused", h.Refused},
		{"not reached", h.Unreached},
	}
	slices.SortStableFunc(parts, func(a, b struct {
		name string
		n    int
	}) int {
		return b.n - a.n
	})
	var out []string
	for _, p := range parts {
		if p.n > 0 {
			out = append(out, fmt.Sprintf("%s %d", p.name, p.n))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// ErrHeld is matched by a [*HeldError].
var ErrHeld = errors.New("pruneguard: over budget with what no prune may touch")

// HeldError is the Reason of a check that ends over its budget having
// met no refusal, deferral or stale decision: what stays is what no prune
// may touch, as Held accounts for it. It matches [ErrHeld].
//
// The zero HeldError holds nothing; the package returns it filled in.
type HeldError struct {
	Tokens int // tokens after the check
	Budget int
	Held   Held
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *HeldError) Error() string {
	return fmt.Sprintf("pruneguard: over budget: %d tokens, budget %d: held: %s", e.Tokens, e.Budget, e.Held)
}

// Unwrap returns [ErrHeld].
func (e *HeldError) Unwrap() error { return ErrHeld }

// heldAccount accounts for what the Context holds that no prune may
// touch, the units refused named by vs. It walks the units in flight,
// unread, pinned and refused, and nothing else. Under no lock.
func (c *Context) heldAccount(vs []*Violation) Held {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.heldIn(vs)
}

// heldIn is heldAccount under a lock.
func (c *Context) heldIn(vs []*Violation) Held {
	h := Held{Lines: c.lineTokens, Tools: c.toolTokens}
	seen := arena.NewSet(c.units.Len())
	take := func(u int32) int {
		if u == none || seen.Has(u) || c.unit(u).head == none {
			return 0
		}
		seen.Add(u)
		return c.unitTokens(u)
	}
	for _, k := range c.pend {
		h.InFlight += take(c.msg(c.call(k).caller).unit)
	}
	for _, p := range c.open {
		h.InFlight += take(c.msg(p).unit)
	}
	for p := c.readEnd; p < c.msgs.Len(); p++ {
		if c.msg(p).flags&mDead == 0 {
			h.Unread += take(c.msg(p).unit)
		}
	}
	for _, p := range c.pins {
		h.Pinned += take(c.msg(p).unit)
	}
	for _, v := range vs {
		if c.current(v.seen) && len(v.Units) == 1 {
			h.Refused += take(v.seen.unit) // as the gate saw it, unchanged
			continue
		}
		if len(v.us) == len(v.Units) && v.seen.comp == c.compactions {
			for _, u := range v.us {
				h.Refused += take(u) // units are renumbered by a compaction alone
			}
			continue
		}
		for _, id := range v.Units {
			if p, ok := c.find(MessageID(id)); ok {
				h.Refused += take(c.msg(p).unit)
			}
		}
	}
	return h
}

// pin records that message p is pinned.
func (c *Context) pin(p int32) {
	c.msg(p).flags |= mPinned
	c.pins = append(c.pins, p)
}

// unpin forgets the pin of message p, which leaves.
func (c *Context) unpin(p int32) {
	if i := slices.Index(c.pins, p); i >= 0 {
		c.pins = slices.Delete(c.pins, i, i+1)
	}
}

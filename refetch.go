package pruneguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/pruneguard/pruneguard/internal/jsoncanon"
)

// Refetch signals: every result a decision evicts or stubs is remembered
// by the signature of its call, with its class and a hash of its content;
// when a later call with that signature gets its result, the Context
// raises a RefetchAlert saying whether the content came back the same.
// An irreducible result fetched again means a gate was bypassed; a
// result that came back different is a measurement that could not be
// taken again (seed 002's "ulimit is now 1024").

// ContentHash is the first 16 bytes of the SHA-256 of a message's
// content. The zero ContentHash means "none".
type ContentHash [16]byte

// String returns the hash in lower-case hex.
func (h ContentHash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero ContentHash.
func (h ContentHash) IsZero() bool { return h == ContentHash{} }

// hashOf returns the ContentHash of content b. Empty content, which is
// what a result carries when the Context holds its tokens but not its
// bytes (as a wire body's view does), hashes to a constant.
func hashOf(b []byte) ContentHash {
	if len(b) == 0 {
		return emptyHash
	}
	s := sha256.Sum256(b)
	return ContentHash(s[:16])
}

// emptyHash is the ContentHash of empty content.
var emptyHash = func() ContentHash {
	s := sha256.Sum256(nil)
	return ContentHash(s[:16])
}()

// RefetchAlert reports a result fetched again after pruning took the
// result of a call with the same signature: the same tool, and arguments
// equal as JSON up to key order and white space (arguments that are not
// valid JSON must be equal byte for byte). The Context queues one when
// such a call's result closes, unless a result of that signature is still
// in the prompt (closed, not stubbed), and then forgets the pruned
// result. A [Call.Server] call's result is the message that carries it:
// it leaves with that message and closes with it. Looking for such a result costs time in proportion to the calls
// to the tool the Context holds, and happens only for a call whose
// signature was pruned.
//
// The zero RefetchAlert names no tool or call; [Context.TakeAlerts]
// returns them filled in.
type RefetchAlert struct {
	Tool   string
	Call   CallID    // the call that fetched again
	Result MessageID // the message carrying its result
	// Pruned is the message that carried the pruned result, and Stubbed
	// says it was stubbed rather than evicted.
	Pruned  MessageID
	Stubbed bool
	// Class is the class the pruned result had: [Irreducible] means a
	// gate was bypassed, as the regenerability gate never lets one go.
	Class Class
	// Match says the new result's content hashes equal to the pruned
	// one's: the fetch only redid work. A mismatch means what was pruned
	// could not be had again: the world changed in between.
	Match bool
	// Was and Now are the hashes of the pruned and the new content.
	Was, Now ContentHash
}

// alertBound is how many alerts wait for TakeAlerts; beyond it the oldest
// are dropped (the counters of [ToolState] keep counting).
const alertBound = 1024

// prunedResult is what the Context remembers of a result pruned.
type prunedResult struct {
	class   Class
	hash    ContentHash
	msg     MessageID
	stubbed bool
}

// TakeAlerts returns the refetch alerts raised since the last call, in
// the order raised, and empties the queue. The queue keeps the 1,024
// latest. It is safe to call from any goroutine, for example from a
// logger after each turn.
func (c *Context) TakeAlerts() []RefetchAlert {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.alerts
	c.alerts = nil
	return out
}

// sigKey returns the signature of a call to tool with args: 16 bytes of
// the SHA-256 of the tool's name and the canonical arguments. It builds
// what it hashes in buf and returns buf for reuse.
func sigKey(buf []byte, tool string, args []byte) (string, []byte) {
	buf = append(buf[:0], tool...)
	n := len(buf)
	buf, ok := jsoncanon.Append(append(buf, 0), args)
	if !ok {
		buf = append(append(buf[:n], 1), args...)
	}
	sum := sha256.Sum256(buf)
	return string(sum[:16]), buf
}

// sigOf returns the signature of call k. The caller holds c.mu for
// writing (it uses the Context's scratch buffer).
func (c *Context) sigOf(k int32) string {
	key, buf := sigKey(c.sigBuf, c.tools[c.call(k).tool].t.Name, c.args(k))
	if cap(buf) <= maxSigBuf {
		c.sigBuf = buf
	}
	return key
}

// maxSigBuf is the largest scratch buffer a Context keeps for signatures.
const maxSigBuf = 4096

// refetched looks, once result p has closed, for calls it answers, and
// for the server calls it carries (their results are inside it), whose
// signature matches a pruned result: each raises an alert, unless a
// result of that signature is still in the prompt, and is forgotten.
func (c *Context) refetched(p int32) {
	c.settleCleared()
	if c.cleared.Len() == 0 {
		return
	}
	var now ContentHash
	hashed := false
	check := func(k int32) {
		key := c.sigOf(k)
		was, ok := c.cleared.Get(key)
		if !ok {
			return
		}
		c.cleared.Forget(key)
		if c.held(k, key, p) {
			return
		}
		if !hashed {
			now, hashed = hashOf(c.content(p)), true
		}
		t := &c.tools[c.call(k).tool]
		a := RefetchAlert{
			Tool: t.t.Name, Call: CallID(c.callID(k)), Result: c.id(p), Pruned: was.msg, Stubbed: was.stubbed,
			Class: was.class, Match: was.hash == now, Was: was.hash, Now: now,
		}
		t.refetches++
		if a.Class == Irreducible {
			t.irreducibleRefetches++
		}
		if !a.Match {
			t.mismatchedRefetches++
		}
		if len(c.alerts) == alertBound {
			c.alerts = slices.Delete(c.alerts, 0, 1)
		}
		c.alerts = append(c.alerts, a)
	}
	for k := range c.answersOf(p) {
		check(k)
	}
	for k := range c.callsOf(p) {
		if c.call(k).flags&cServer != 0 {
			check(k)
		}
	}
}

// held reports whether a call to k's tool other than k, whose signature
// is key, has its closed, unstubbed result in the prompt in a message
// other than p: a result message, or for a server call the message that
// carries it. It costs time in proportion to the tool's calls in the
// Context, and runs only for a call whose signature was pruned.
func (c *Context) held(k int32, key string, p int32) bool {
	args := c.args(k)
	for q := c.tools[c.call(k).tool].head; q != none; q = c.call(q).nextTool {
		r := c.call(q)
		if q == k {
			continue
		}
		res := r.result
		if r.flags&cServer != 0 {
			res = r.caller
		} else if r.flags&(cArgsMade|cDone) != cArgsMade|cDone {
			continue
		}
		if res == none || res == p || c.msg(res).flags&(mDead|mStubbed|mOpen) != 0 {
			continue
		}
		if bytes.Equal(c.args(q), args) || c.sigOf(q) == key {
			return true
		}
	}
	return false
}

// answered runs once result p has closed: the ghost-tool detector reads
// an error it reports, and the refetch signals compare it with what was
// pruned.
func (c *Context) answered(p int32) {
	c.rejected(p)
	c.refetched(p)
}

package pruneguard

import "slices"

// ledger queues what Apply takes out of the prompt for the Context's two
// memories of it: the ids of the pruned calls (c.gone), by which a late
// result is refused, and the signatures of the pruned results (c.cleared),
// by which a refetch is noticed. A decision pays only for queueing ids and
// arguments; the signatures are hashed and the memories written when the
// next message arrives, when one of them is read (a result closing,
// Abandon, Save), or when the queue reaches ledgerBound entries. So a
// session's queue never outlives its turn, and a Context pruned and then
// dropped, such as the view of one request body, never hashes what it
// pruned.
//
// Reading the memories after the queue is written gives what writing
// each entry at once would have given: the entries are written in the
// order queued, with the same merges.
//
// The queue refers to the ids and arguments where the Context's slab
// holds them: the slab never writes over bytes it handed out, so they stay
// as they were after the Context lets them go. Before a text compaction
// the queue copies them into one buffer of its own (see rehome), so that
// it does not hold on to the old chunks.
type ledger struct {
	gone   []queuedGone
	forgot []queuedForgot
}

// queuedGone is a pruned call.
type queuedGone struct {
	id        []byte
	abandoned bool
}

// queuedForgot is a pruned result of a call to tool tools[tool].
type queuedForgot struct {
	tool int32
	args []byte
	was  prunedResult
}

// ledgerBound is how many entries the ledger queues before writing them
// (a variable so that tests can make the ledger write through).
var ledgerBound = 4 * recentBound

// reserve makes room in the queues for a decision that evicts the
// messages at positions evict and stubs those at stubs: a pruned call
// for each call an evicted message emits, a pruned result for each call
// an evicted or stubbed message answers, up to what the queues hold
// before they are written.
func (c *Context) reserveLedger(evict, stubs []int32) {
	gone, forgot := 0, 0
	for _, p := range evict {
		for range c.callsOf(p) {
			gone++
		}
		for range c.answersOf(p) {
			forgot++
		}
	}
	for _, p := range stubs {
		for range c.answersOf(p) {
			forgot++
		}
	}
	l := &c.ledger
	l.gone = slices.Grow(l.gone, min(gone, ledgerBound))
	l.forgot = slices.Grow(l.forgot, min(forgot, ledgerBound))
}

// queueGone queues call k, pruned, for c.gone.
func (c *Context) queueGone(k int32, abandoned bool) {
	c.ledger.gone = append(c.ledger.gone, queuedGone{c.callID(k), abandoned})
	c.boundLedger()
}

// queueForgot queues the result of call k, carried by message id and
// left the prompt as audited by rc, for c.cleared.
func (c *Context) queueForgot(k int32, rc rec, id MessageID, stubbed bool) {
	c.ledger.forgot = append(c.ledger.forgot, queuedForgot{
		tool: c.call(k).tool, args: c.args(k),
		was: prunedResult{class: rc.class, hash: rc.hash, msg: id, stubbed: stubbed},
	})
	c.boundLedger()
}

// rehome copies what the queue refers to into one buffer of its own.
func (l *ledger) rehome() {
	n := 0
	for _, e := range l.gone {
		n += len(e.id)
	}
	for _, e := range l.forgot {
		n += len(e.args)
	}
	if n == 0 {
		return
	}
	buf := make([]byte, 0, n)
	own := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	for i := range l.gone {
		l.gone[i].id = own(l.gone[i].id)
	}
	for i := range l.forgot {
		l.forgot[i].args = own(l.forgot[i].args)
	}
}

// boundLedger writes the queue out once it holds ledgerBound entries.
func (c *Context) boundLedger() {
	if len(c.ledger.gone)+len(c.ledger.forgot) >= ledgerBound {
		// More of the decision follows: the queues keep their room.
		c.writeGone(false)
		c.writeCleared(false)
	}
}

// settleGone writes the queued pruned calls into c.gone. Once as many
// were queued as it keeps, it keeps only those: the last recentBound,
// in order, as if each had been put.
func (c *Context) settleGone() { c.writeGone(true) }

// writeGone writes the queued pruned calls into c.gone; with trim, a
// large queue lets its room go.
func (c *Context) writeGone(trim bool) {
	q := c.ledger.gone
	if len(q) == 0 {
		return
	}
	if len(q) > recentBound {
		q = q[len(q)-recentBound:] // the puts before them would be pushed out
	}
	c.gone.reserve(len(q))
	for _, e := range q {
		c.gone.put(string(e.id), e.abandoned)
	}
	c.ledger.gone = emptyQueue(c.ledger.gone, trim)
}

// settleCleared hashes the queued pruned results' signatures and writes
// them into c.cleared, in order: a signature put again keeps the higher
// class.
func (c *Context) settleCleared() { c.writeCleared(true) }

// writeCleared writes the queued pruned results into c.cleared; with
// trim, a large queue lets its room go.
func (c *Context) writeCleared(trim bool) {
	q := c.ledger.forgot
	if len(q) == 0 {
		return
	}
	c.cleared.reserve(len(q))
	for _, e := range q {
		key, buf := sigKey(c.sigBuf, c.tools[e.tool].t.Name, e.args)
		if cap(buf) <= maxSigBuf {
			c.sigBuf = buf
		}
		v := e.was
		if old, ok := c.cleared.get(key); ok {
			v.class = max(v.class, old.class)
		}
		c.cleared.put(key, v)
	}
	c.ledger.forgot = emptyQueue(c.ledger.forgot, trim)
}

// emptyQueue empties a queue written out: it lets go of what the entries
// refer to and, with trim, of a large array.
func emptyQueue[E any](q []E, trim bool) []E {
	if trim && cap(q) > maxQueue {
		return nil
	}
	clear(q)
	return q[:0]
}

// maxQueue is the most entries an empty queue keeps room for.
const maxQueue = 1024

// settleLedger writes out whatever the ledger queues.
func (c *Context) settleLedger() {
	if len(c.ledger.gone) > 0 || len(c.ledger.forgot) > 0 {
		c.settleGone()
		c.settleCleared()
	}
}

// goneGet reports whether a call with id was pruned lately, and whether
// it had been abandoned.
func (c *Context) goneGet(id CallID) (abandoned, ok bool) {
	c.settleGone()
	return c.gone.get(string(id))
}

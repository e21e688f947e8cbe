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
// A queued pruned call is its id and, at the same index, a bit that
// says whether it was abandoned (the bits are made when the first
// abandoned call is queued; each call queued sets or clears its own).
// c.gone keeps only the last recentBound calls put, so the queue of calls
// keeps only as many: once full, it is a ring whose oldest entry, at
// goneAt, gives way to each call queued. For ledgerBound it counts in
// goneN every call queued since it was last written.
//
// A queued pruned result is its call's tool and arguments and the index
// of its audit record in the decision that pruned it: the record holds
// its class and hash, and the index says which message carried it
// (Evict, then Stub) and whether it was stubbed. Each run of results
// queued by one decision names it once, in decisions. A decision's
// records and ids do not change after Prune, and the ledger holds the
// decisions only until it is written.
//
// The queue refers to the ids and arguments where the Context's slab
// holds them: the slab never writes over bytes it handed out, so they stay
// as they were after the Context lets them go. Before a text compaction
// the queue copies them into one buffer of its own (see rehome), so that
// it does not hold on to the old chunks.
type ledger struct {
	gone      [][]byte // the ids of the pruned calls
	abandoned []uint64 // bit i: gone[i] was abandoned; nil until one was
	goneAt    int      // with recentBound calls queued, the oldest's index
	goneN     int      // the calls queued since the queue was last written
	forgot    []queuedForgot
	decisions []queuedDecision
}

// queuedForgot is a pruned result of a call to tool tools[tool] with
// arguments args, recorded at recs[rec] of the decision that pruned it.
type queuedForgot struct {
	args []byte
	tool int32
	rec  int32
}

// queuedDecision names the decision that pruned the results queued from
// forgot[from] on, up to the next queuedDecision's.
type queuedDecision struct {
	d    *Decision
	from int
}

// ledgerBound is how many entries the ledger queues before writing them
// (a variable so that tests can make the ledger write through).
var ledgerBound = 4 * recentBound

// reserve makes room in the queues for a decision that evicts the
// messages at positions evict and stubs those at stubs: a pruned call
// for each call an evicted message emits, a pruned result for each call
// an evicted or stubbed message answers, up to what the queues hold
// before they are written (for the calls, before they are a ring).
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
	if room := recentBound - len(l.gone); room > 0 {
		l.gone = slices.Grow(l.gone, min(gone, room))
	}
	l.forgot = slices.Grow(l.forgot, min(forgot, ledgerBound))
}

// queueGone queues call k, pruned, for c.gone.
func (c *Context) queueGone(k int32, abandoned bool) {
	l := &c.ledger
	i := len(l.gone)
	if i < recentBound {
		l.gone = append(l.gone, c.callID(k))
	} else {
		// Written, the oldest would be pushed out of c.gone by this one.
		i = l.goneAt
		l.gone[i] = c.callID(k)
		if l.goneAt++; l.goneAt == recentBound {
			l.goneAt = 0
		}
	}
	if abandoned && l.abandoned == nil {
		l.abandoned = make([]uint64, recentBound/64)
	}
	if l.abandoned != nil {
		bit := uint64(1) << (i % 64)
		if abandoned {
			l.abandoned[i/64] |= bit
		} else {
			l.abandoned[i/64] &^= bit
		}
	}
	l.goneN++
	c.boundLedger()
}

// queueForgot queues the result of call k, pruned by d and recorded at
// d.recs[i], for c.cleared.
func (c *Context) queueForgot(k int32, d *Decision, i int) {
	l := &c.ledger
	if n := len(l.decisions); n == 0 || l.decisions[n-1].d != d {
		l.decisions = append(l.decisions, queuedDecision{d, len(l.forgot)})
	}
	l.forgot = append(l.forgot, queuedForgot{args: c.args(k), tool: c.call(k).tool, rec: int32(i)})
	c.boundLedger()
}

// forgotten returns what c.cleared remembers of result e, queued by d.
func (e *queuedForgot) forgotten(d *Decision) prunedResult {
	i := int(e.rec)
	rc := d.recs[i]
	v := prunedResult{class: rc.class, hash: rc.hash}
	if i < len(d.Evict) {
		v.msg = d.Evict[i]
	} else {
		v.msg, v.stubbed = d.Stub[i-len(d.Evict)], true
	}
	return v
}

// rehome copies what the queue refers to into one buffer of its own.
func (l *ledger) rehome() {
	n := 0
	for _, id := range l.gone {
		n += len(id)
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
		l.gone[i] = own(l.gone[i])
	}
	for i := range l.forgot {
		l.forgot[i].args = own(l.forgot[i].args)
	}
}

// boundLedger writes the queue out once it holds ledgerBound entries.
func (c *Context) boundLedger() {
	if c.ledger.goneN+len(c.ledger.forgot) >= ledgerBound {
		// More of the decision follows: the queues keep their room.
		c.writeGone(false)
		c.writeCleared(false)
	}
}

// settleGone writes the queued pruned calls into c.gone. Once as many
// were queued as it keeps, it keeps only those: the last recentBound,
// in order, as if each had been put.
func (c *Context) settleGone() { c.writeGone(true) }

// writeGone writes the queued pruned calls into c.gone, oldest first;
// with trim, a large queue lets its room go.
func (c *Context) writeGone(trim bool) {
	l := &c.ledger
	q := l.gone
	if len(q) == 0 {
		return
	}
	// The calls the ring let go would have been pushed out by those after.
	c.gone.Reserve(len(q))
	for j := range q {
		i := l.goneAt + j
		if i >= len(q) {
			i -= len(q)
		}
		c.gone.Put(string(q[i]), l.wasAbandoned(i))
	}
	l.gone = emptyQueue(q, trim)
	l.goneAt, l.goneN = 0, 0
}

// wasAbandoned reports whether the call queued at gone[i] was abandoned.
func (l *ledger) wasAbandoned(i int) bool {
	return l.abandoned != nil && l.abandoned[i/64]&(1<<(i%64)) != 0
}

// settleCleared hashes the queued pruned results' signatures and writes
// them into c.cleared, in order: a signature put again keeps the higher
// class.
func (c *Context) settleCleared() { c.writeCleared(true) }

// writeCleared writes the queued pruned results into c.cleared; with
// trim, a large queue lets its room go.
func (c *Context) writeCleared(trim bool) {
	l := &c.ledger
	q := l.forgot
	if len(q) == 0 {
		return
	}
	c.cleared.Reserve(len(q))
	ds := l.decisions
	for j := range q {
		for len(ds) > 1 && ds[1].from <= j {
			ds = ds[1:]
		}
		e := &q[j]
		key, buf := sigKey(c.sigBuf, c.tools[e.tool].t.Name, e.args)
		if cap(buf) <= maxSigBuf {
			c.sigBuf = buf
		}
		v := e.forgotten(ds[0].d)
		if old, ok := c.cleared.Get(key); ok {
			v.class = max(v.class, old.class)
		}
		c.cleared.Put(key, v)
	}
	l.forgot = emptyQueue(q, trim)
	l.decisions = emptyQueue(l.decisions, trim)
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
	return c.gone.Get(string(id))
}

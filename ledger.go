package pruneguard

// ledger queues what Apply takes out of the prompt for the Context's two
// memories of it: the ids of the pruned calls (c.gone), by which a late
// result is refused, and the signatures of the pruned results (c.cleared),
// by which a refetch is noticed. A decision pays only for copying ids and
// arguments; the signatures are hashed and the memories written when one
// of them is read (a result arriving or closing, Abandon, Save) or when
// the queue reaches ledgerBound entries. A Context pruned and then dropped,
// such as the view of one request body, never hashes what it pruned.
//
// Reading the memories after the queue is written gives what writing
// each entry at once would have given: the entries are written in the
// order queued, with the same merges.
type ledger struct {
	text   []byte // the queued ids and arguments, back to back
	gone   []queuedGone
	forgot []queuedForgot
}

// queuedGone is a pruned call: its id is text[at:end].
type queuedGone struct {
	at, end   int32
	abandoned bool
}

// queuedForgot is a pruned result of a call to tool tools[tool] whose
// arguments are text[at:end].
type queuedForgot struct {
	tool    int32
	at, end int32
	was     prunedResult
}

// ledgerBound is how many entries the ledger queues before writing them
// (a variable so that tests can make the ledger write through).
var ledgerBound = 4 * recentBound

// hold copies b into the ledger's text and returns where it lies.
func (l *ledger) hold(b []byte) (int32, int32) {
	at := int32(len(l.text))
	l.text = append(l.text, b...)
	return at, int32(len(l.text))
}

// queueGone queues call k, pruned, for c.gone.
func (c *Context) queueGone(k int32, abandoned bool) {
	at, end := c.ledger.hold(c.callID(k))
	c.ledger.gone = append(c.ledger.gone, queuedGone{at, end, abandoned})
	c.boundLedger()
}

// queueForgot queues the result of call k, carried by message id and
// left the prompt as audited by rc, for c.cleared.
func (c *Context) queueForgot(k int32, rc rec, id MessageID, stubbed bool) {
	at, end := c.ledger.hold(c.args(k))
	c.ledger.forgot = append(c.ledger.forgot, queuedForgot{
		tool: c.call(k).tool, at: at, end: end,
		was: prunedResult{class: rc.class, hash: rc.hash, msg: id, stubbed: stubbed},
	})
	c.boundLedger()
}

// boundLedger writes the queue out once it holds ledgerBound entries.
func (c *Context) boundLedger() {
	if len(c.ledger.gone)+len(c.ledger.forgot) >= ledgerBound {
		c.settleGone()
		c.settleCleared()
	}
}

// settleGone writes the queued pruned calls into c.gone. Once as many
// were queued as it keeps, it keeps only those: the last recentBound,
// in order, as if each had been put.
func (c *Context) settleGone() {
	q := c.ledger.gone
	if len(q) == 0 {
		return
	}
	if len(q) > recentBound {
		q = q[len(q)-recentBound:] // the puts before them would be pushed out
	}
	c.gone.reserve(len(q))
	for _, e := range q {
		c.gone.put(string(c.ledger.text[e.at:e.end]), e.abandoned)
	}
	c.ledger.gone = c.ledger.gone[:0]
	c.trimLedger()
}

// settleCleared hashes the queued pruned results' signatures and writes
// them into c.cleared, in order: a signature put again keeps the higher
// class.
func (c *Context) settleCleared() {
	q := c.ledger.forgot
	if len(q) == 0 {
		return
	}
	c.cleared.reserve(len(q))
	for _, e := range q {
		var args []byte
		if e.end > e.at {
			args = c.ledger.text[e.at:e.end]
		}
		key, buf := sigKey(c.sigBuf, c.tools[e.tool].t.Name, args)
		if cap(buf) <= maxSigBuf {
			c.sigBuf = buf
		}
		v := e.was
		if old, ok := c.cleared.get(key); ok {
			v.class = max(v.class, old.class)
		}
		c.cleared.put(key, v)
	}
	c.ledger.forgot = c.ledger.forgot[:0]
	c.trimLedger()
}

// trimLedger empties the text once nothing queued refers to it, and lets
// a large buffer go.
func (c *Context) trimLedger() {
	if len(c.ledger.gone) > 0 || len(c.ledger.forgot) > 0 {
		return
	}
	if cap(c.ledger.text) > maxLedgerText {
		c.ledger = ledger{}
		return
	}
	c.ledger.text = c.ledger.text[:0]
}

// maxLedgerText is the largest text buffer an empty ledger keeps.
const maxLedgerText = 64 << 10

// goneGet reports whether a call with id was pruned lately, and whether
// it had been abandoned.
func (c *Context) goneGet(id CallID) (abandoned, ok bool) {
	c.settleGone()
	return c.gone.get(string(id))
}

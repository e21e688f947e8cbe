package pruneguard

import "math"

// Counter counts the tokens of a piece of text or JSON as a model's
// tokenizer would. Count must be deterministic and safe for concurrent
// use; the Context calls it under its lock and must not be called back.
// A negative count counts as zero.
//
// A nil Counter (the zero Config's) counts nothing: messages keep the
// counts the runtime gives.
type Counter interface {
	Count(b []byte) int
}

// ApproxCounter is the approximate [Counter]: a quarter of the bytes,
// rounded up. It is close enough for English text and JSON with the
// common byte pair encodings; use a real tokenizer for accurate budgets.
// The zero value is ready to use.
type ApproxCounter struct{}

// Count returns (len(b)+3)/4.
func (ApproxCounter) Count(b []byte) int { return (len(b) + 3) / 4 }

// count counts b with the configured Counter, or returns zero; a
// negative count is zero.
func (c *Context) count(b []byte) int {
	if c.cfg.Counter == nil || len(b) == 0 {
		return 0
	}
	return max(0, c.cfg.Counter.Count(b))
}

// tally sums token counts, none negative, that may not fit an int: once
// the sum passes math.MaxInt it stays there, and over says so.
type tally struct {
	n    int
	over bool
}

// add adds k, which must not be negative.
func (t *tally) add(k int) {
	if k > math.MaxInt-t.n {
		t.n, t.over = math.MaxInt, true
		return
	}
	t.n += k
}

// plus adds the sum u.
func (t *tally) plus(u tally) {
	t.add(u.n)
	t.over = t.over || u.over
}

// fits reports whether adding n tokens (less, when n is negative) keeps
// what the Context holds within an int. Under a lock.
func (c *Context) fits(n int) bool { return n <= math.MaxInt-c.heldTokens() }

// tokensFor returns the token count message m starts with: the count
// given, or with a Counter and none given, the count of its content and
// of its calls' arguments; ok is false when that count passes
// math.MaxInt.
func (c *Context) tokensFor(m Message) (n int, ok bool) {
	if m.Tokens != 0 || c.cfg.Counter == nil {
		return m.Tokens, true
	}
	var t tally
	t.add(c.count(m.Content))
	for _, k := range m.Calls {
		t.add(c.count(k.Args))
	}
	return t.n, !t.over
}

// addTokens adds n tokens to message p, keeping the order by size.
func (c *Context) addTokens(p int32, n int) {
	if n == 0 {
		return
	}
	sized := c.isResult(p) && c.msg(p).flags&mStubbed == 0
	if sized {
		c.bySize.Delete(c.sizeKey(p))
	}
	c.setTokens(p, c.tokensOf(p)+n)
	if sized {
		c.bySize.Insert(c.sizeKey(p))
	}
	c.tokens += n
	c.trackLarge(p)
}

// toolTokensAfter returns what tool t would add to the tokens held with
// its schema shown as compressed says (nil: the registered schema;
// withdrawn: none at all) and the tombstone text given (empty: none).
func (c *Context) toolTokensAfter(t *toolRec, withdrawn bool, compressed []byte, tomb string) tally {
	var n tally
	switch {
	case withdrawn:
	case compressed != nil:
		n.add(c.count(compressed))
	default:
		n.add(t.schemaTok)
	}
	n.add(c.count([]byte(tomb)))
	return n
}

// heldBy returns what tool t adds to the tokens held in its state: its
// schema, or compressed schema, while resident, and its tombstone while
// one stands.
func heldBy(t *toolRec) tally {
	var n tally
	if t.resident {
		if t.compressed != nil {
			n.add(t.compTok)
		} else {
			n.add(t.schemaTok)
		}
	}
	if t.tombstoned {
		n.add(t.tombTok)
	}
	return n
}

// retally brings what tool i adds to the tokens held up to date with its
// state (see heldBy). The events that change it check first that the
// total fits.
func (c *Context) retally(i int32) {
	t := &c.tools[i]
	n := heldBy(t).n
	c.toolTokens += n - t.held
	t.held = n
}

package pruneguard

// Counter counts the tokens of a piece of text or JSON as a model's
// tokenizer would. Count must be deterministic and safe for concurrent
// use; the Context calls it under its lock and must not be called back.
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

// count counts b with the configured Counter, or returns zero.
func (c *Context) count(b []byte) int {
	if c.cfg.Counter == nil || len(b) == 0 {
		return 0
	}
	return c.cfg.Counter.Count(b)
}

// tokensFor returns the token count message m starts with: the count
// given, or with a Counter and none given, the count of its content and
// of its calls' arguments.
func (c *Context) tokensFor(m Message) int {
	if m.Tokens != 0 || c.cfg.Counter == nil {
		return m.Tokens
	}
	n := c.count(m.Content)
	for _, k := range m.Calls {
		n += c.count(k.Args)
	}
	return n
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
func (c *Context) toolTokensAfter(t *toolRec, withdrawn bool, compressed []byte, tomb string) int {
	n := 0
	switch {
	case withdrawn:
	case compressed != nil:
		n = c.count(compressed)
	default:
		n = t.schemaTok
	}
	return n + c.count([]byte(tomb))
}

// retally brings what tool i adds to the tokens held up to date with its
// state: its schema, or compressed schema, while resident, and its
// tombstone while one stands.
func (c *Context) retally(i int32) {
	t := &c.tools[i]
	n := 0
	if t.resident {
		n = t.schemaTok
		if t.compressed != nil {
			n = t.compTok
		}
	}
	if t.tombstoned {
		n += t.tombTok
	}
	c.toolTokens += n - t.held
	t.held = n
}

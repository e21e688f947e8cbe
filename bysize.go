package pruneguard

import "cmp"

// sizeKey files a tool result in Context.bySize: its token count when it
// was filed, then its position. A B+tree keeps copies of its keys as the
// separators of its inner nodes, so a key must never change its order
// while it may serve as one: the key holds the count it was filed with,
// and a result whose count changes is taken out under its old key and
// filed again under the new one.
type sizeKey struct {
	tokens int32
	pos    int32
}

// bySizeOrder orders the results largest first, then in transcript order.
func bySizeOrder(a, b sizeKey) int {
	if a.tokens != b.tokens {
		return cmp.Compare(b.tokens, a.tokens)
	}
	return cmp.Compare(a.pos, b.pos)
}

// sizeKey returns the key message p is filed under in Context.bySize
// while its token count stays what it is now.
func (c *Context) sizeKey(p int32) sizeKey { return sizeKey{c.msg(p).tokens, p} }

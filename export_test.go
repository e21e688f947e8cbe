package pruneguard

import (
	"bytes"
	"regexp"
)

// Names the black-box tests reach.

var digestMember = regexp.MustCompile(`,?"sha256":"[0-9a-f]*"\}\s*$`)

// Reseal gives a saved state edited by a test the digest Save would have
// given it, so that the test reaches the check it means to: b with its
// digest member (if any) removed, sealed again.
func Reseal(b []byte) []byte {
	if len(b) == 0 || b[len(b)-1] != '}' && digestMember.FindIndex(b) == nil {
		return b
	}
	if loc := digestMember.FindIndex(b); loc != nil {
		b = append(bytes.Clone(b[:loc[0]]), '}')
	}
	return sealState(b)
}

// LockHeld reports whether c's lock is held, by any goroutine, for
// reading or writing: a probe for tests that check what runs under it.
func (c *Context) LockHeld() bool {
	if c.mu.TryLock() {
		c.mu.Unlock()
		return false
	}
	return true
}

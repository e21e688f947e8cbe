package sessions

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxIDLen is the longest id a Store accepts, in bytes.
const MaxIDLen = 200

// ValidID reports whether id is a valid session id: 1 to [MaxIDLen]
// bytes of lower-case ASCII letters, digits, '-' and '_'. Ids are opaque
// to stores; the alphabet is small so that every store can use an id as
// it is, as a file name (on case-insensitive file systems too), a Redis
// key or a SQL text value, with no escaping and no way to name anything
// outside the store. [ID] makes a valid id of any tenant and session
// names.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !literal(id[i]) && id[i] != '_' {
			return false
		}
	}
	return true
}

// literal reports whether ID keeps byte b as it is.
func literal(b byte) bool {
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-'
}

// ID returns the session id of session within tenant: a valid id
// (see [ValidID]) that no other pair of strings gives, whatever they
// hold, so that one tenant can never name another's session. Tenant and
// session may be any strings, empty ones too; the tenant is typically
// the authenticated account, never a value the client chooses freely.
//
// Lower-case letters, digits and '-' are kept, other bytes escaped, and
// the two parts joined by "__":
//
//	ID("acme", "3f2a-77")   == "acme__3f2a-77"
//	ID("Acme", "a_b")       == "_41cme__a_5fb"
//
// A pair whose id would be longer than [MaxIDLen] gets "_h" and the
// SHA-256 of the long form in hex instead (66 bytes), which no short
// form can equal.
//
// A runtime that names tenants should make every id it stores with ID:
// an id made by hand may equal one ID makes.
func ID(tenant, session string) string {
	var b strings.Builder
	b.Grow(len(tenant) + 2 + len(session))
	escape(&b, tenant)
	b.WriteString("__")
	escape(&b, session)
	if b.Len() <= MaxIDLen {
		return b.String()
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "_h" + hex.EncodeToString(sum[:])
}

// escape writes s with every byte but the literal ones as '_' and two
// lower-case hex digits. Its output never holds "__" and never starts
// with "_h", so the forms ID makes cannot be confused.
func escape(b *strings.Builder, s string) {
	const digits = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if literal(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&15])
	}
}

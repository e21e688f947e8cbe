package spill

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxKeyLen is the longest key a Store accepts, in bytes.
const MaxKeyLen = 128

// ValidKey reports whether key is a valid store key: 1 to [MaxKeyLen]
// bytes of lower-case ASCII letters, digits, '-' and '_'. Keys are opaque
// to stores; the alphabet is small so that every store can use a key as
// it is, as a file name (on case-insensitive file systems too), a Redis
// key or a SQL text value, with no escaping and no way to name anything
// outside the store.
func ValidKey(key string) bool {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if !keyByte(key[i]) {
			return false
		}
	}
	return true
}

func keyByte(b byte) bool {
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_'
}

// validPrefix reports whether prefix can start a valid key: "" or a
// valid key.
func validPrefix(prefix string) bool { return prefix == "" || ValidKey(prefix) }

// The form of a segment's key. A Spiller with no namespace writes
//
//	seg-HASH
//
// and one with a namespace writes
//
//	seg-NS_HASH
//
// where HASH is [keyHashLen] lower-case hex digits of the SHA-256 of the
// namespace and the segment's encoded messages, and NS is the namespace
// itself when it is 1 to [maxPlainNamespace] bytes of lower-case ASCII
// letters, digits and '-', or else '_' and [keyHashLen] hex digits of the
// namespace's SHA-256. A plain NS has no '_', so the namespace of a key
// is never ambiguous; a key is at most 4+32+1+24 = 61 bytes.
const (
	segmentPrefix     = "seg-"
	keyHashLen        = 24 // 96 bits
	maxPlainNamespace = 32
)

// Namespace returns a Spiller namespace for one session of one tenant:
// the session id when tenant is empty and the id holds no '/', and
// otherwise the tenant, with '%' and '/' escaped, then '/' and the
// session id. Different (tenant, session) pairs give different
// namespaces. Any string may serve as a namespace; use Namespace when a
// runtime names tenants, for every Spiller of a store, so that a tenant
// never picks a session id that is another tenant's namespace.
func Namespace(tenant, session string) string {
	if tenant == "" && !strings.Contains(session, "/") {
		return session
	}
	t := strings.ReplaceAll(tenant, "%", "%25")
	t = strings.ReplaceAll(t, "/", "%2F")
	return t + "/" + session
}

// namespacePart is the part of a key that names namespace ns; see the
// key form above.
func namespacePart(ns string) string {
	plain := len(ns) <= maxPlainNamespace
	for i := 0; plain && i < len(ns); i++ {
		plain = ns[i] != '_' && keyByte(ns[i])
	}
	if plain {
		return ns
	}
	sum := sha256.Sum256([]byte("pruneguard-spill-namespace\x00" + ns))
	return "_" + hex.EncodeToString(sum[:])[:keyHashLen]
}

// keyPrefixFor is the start of every key of namespace ns.
func keyPrefixFor(ns string) string {
	if ns == "" {
		return segmentPrefix
	}
	return segmentPrefix + namespacePart(ns) + "_"
}

// segmentKey returns the key of a segment of namespace ns whose encoded
// messages are body: the same namespace and messages always give the
// same key.
func segmentKey(ns, prefix string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(ns))
	h.Write([]byte{0})
	h.Write(body)
	return prefix + hex.EncodeToString(h.Sum(nil))[:keyHashLen]
}

// hashSuffix reports whether s is a key's hash: keyHashLen lower-case
// hex digits.
func hashSuffix(s string) bool {
	if len(s) != keyHashLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

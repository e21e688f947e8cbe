package spill

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
		switch b := key[i]; {
		case 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '_':
		default:
			return false
		}
	}
	return true
}

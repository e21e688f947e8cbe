package arena

// Set is a set of record indexes, a bit each.
type Set []uint64

// NewSet returns an empty set for the indexes below n.
func NewSet(n int32) Set { return make(Set, (n+63)/64) }

// Add puts r in the set.
func (s Set) Add(r int32) { s[r/64] |= 1 << (r % 64) }

// Has reports whether r is in the set.
func (s Set) Has(r int32) bool { return s[r/64]&(1<<(r%64)) != 0 }

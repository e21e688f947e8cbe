package tokenizer

import (
	"encoding/binary"
	"math/bits"
)

// hashBytes is a fast, fixed hash of short byte strings for the vocab
// table and the piece cache. It is fixed, not seeded: the table's keys are
// the encoding's own tokens, so no input can lengthen its probe chains,
// and a text chosen to collide in the cache only costs the cache's hits.
func hashBytes(p []byte) uint64 {
	const (
		m1 = 0xa0761d6478bd642f
		m2 = 0xe7037ed1a0b428db
		m3 = 0x8ebc6af09c88c6e3
	)
	h := uint64(len(p)) * m1
	for len(p) >= 8 {
		h = mix(h^binary.LittleEndian.Uint64(p), m2)
		p = p[8:]
	}
	if len(p) > 0 {
		var t uint64
		for i := len(p) - 1; i >= 0; i-- {
			t = t<<8 | uint64(p[i])
		}
		h = mix(h^t, m3)
	}
	return mix(h, m1)
}

// mix folds the 128-bit product of a and b to 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

package tokenizer

import (
	"encoding/binary"
	"math/bits"
)

// hashBytes is a fast, fixed hash of short byte strings for the vocab
// table and the piece cache, after the manner of wyhash: whole words
// where it can, overlapping loads for what is left. It is fixed, not
// seeded: the table's keys are the encoding's own tokens, so no input can
// lengthen its probe chains, and a text chosen to collide in the cache
// only costs the cache's hits.
func hashBytes(p []byte) uint64 {
	const (
		m1 = 0xa0761d6478bd642f
		m2 = 0xe7037ed1a0b428db
		m3 = 0x8ebc6af09c88c6e3
	)
	n := len(p)
	h := uint64(n) * m1
	var a, b uint64
	switch {
	case n > 16:
		for i := 0; i+16 < n; i += 16 {
			h = mix(h^binary.LittleEndian.Uint64(p[i:]), m2^binary.LittleEndian.Uint64(p[i+8:]))
		}
		// The last 16 bytes, overlapping what came before.
		a, b = binary.LittleEndian.Uint64(p[n-16:]), binary.LittleEndian.Uint64(p[n-8:])
	case n >= 8:
		a, b = binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[n-8:])
	case n >= 4:
		a, b = uint64(binary.LittleEndian.Uint32(p)), uint64(binary.LittleEndian.Uint32(p[n-4:]))
	case n > 0:
		a = uint64(p[0])<<16 | uint64(p[n>>1])<<8 | uint64(p[n-1])
	}
	return mix(mix(a^m2, b^h), m3^uint64(n))
}

// mix folds the 128-bit product of a and b to 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

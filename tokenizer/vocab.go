package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// A vocab maps the byte strings of an encoding's tokens to their ranks,
// which are also their ids, and back. Its tables hold no pointers, so the
// garbage collector never scans them.
type vocab struct {
	blob  []byte   // every token's bytes, in rank order
	offs  []uint32 // token r is blob[offs[r]:offs[r+1]]
	slots []uint32 // open-addressed table: hash tag | rank+1, or 0
	mask  uint32

	byteRank  [256]uint32 // the rank of each single byte
	pairRank2 []uint32    // the rank of each two bytes b0<<8|b1, or noRank
}

// A slot keeps the rank plus one in its low bits and the top bits of the
// token's hash in the rest, so most probes of the wrong token end without
// comparing bytes.
const (
	rankBits = 18
	rankMask = 1<<rankBits - 1
	noRank   = ^uint32(0)
)

// loadVocab reads the embedded rank data: gzip of uvarint(count) followed,
// in rank order, by uvarint(length) and the token's bytes. The data ships
// inside the module, so an error here is a broken build, not bad input.
func loadVocab(gz string, want int) (*vocab, error) {
	zr, err := gzip.NewReader(strings.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || int(n) != want || n >= rankMask {
		return nil, fmt.Errorf("token count %d, want %d", n, want)
	}
	raw = raw[k:]
	v := &vocab{offs: make([]uint32, 0, n+1)}
	// The token bytes take a little less room than their framing.
	v.blob = make([]byte, 0, len(raw))
	for len(raw) > 0 {
		l, k := binary.Uvarint(raw)
		if k <= 0 || uint64(len(raw)-k) < l {
			return nil, fmt.Errorf("token %d: truncated", len(v.offs))
		}
		v.offs = append(v.offs, uint32(len(v.blob)))
		v.blob = append(v.blob, raw[k:k+int(l)]...)
		raw = raw[k+int(l):]
	}
	if len(v.offs) != want {
		return nil, fmt.Errorf("%d tokens, want %d", len(v.offs), want)
	}
	v.offs = append(v.offs, uint32(len(v.blob)))
	size := 1
	for size < 2*want {
		size <<= 1
	}
	v.slots = make([]uint32, size)
	v.mask = uint32(size - 1)
	for r := 0; r < want; r++ {
		tok := v.token(r)
		if _, dup := v.rank(tok); dup {
			return nil, fmt.Errorf("token %d repeats an earlier one", r)
		}
		h := hashBytes(tok)
		i := uint32(h) & v.mask
		for v.slots[i] != 0 {
			i = (i + 1) & v.mask
		}
		v.slots[i] = tag(h) | uint32(r+1)
	}
	v.pairRank2 = make([]uint32, 1<<16)
	for i := range v.pairRank2 {
		v.pairRank2[i] = noRank
	}
	for r := 0; r < want; r++ {
		if tok := v.token(r); len(tok) == 2 {
			v.pairRank2[int(tok[0])<<8|int(tok[1])] = uint32(r)
		}
	}
	for c := 0; c < 256; c++ {
		r, ok := v.rank([]byte{byte(c)})
		if !ok {
			return nil, fmt.Errorf("byte %#x is not a token", c)
		}
		v.byteRank[c] = r
	}
	return v, nil
}

func tag(h uint64) uint32 { return uint32(h>>32) &^ rankMask }

// token returns the bytes of token r, which the caller must not change.
func (v *vocab) token(r int) []byte { return v.blob[v.offs[r]:v.offs[r+1]:v.offs[r+1]] }

// rank returns the rank of the token whose bytes are p.
func (v *vocab) rank(p []byte) (uint32, bool) { return v.rankHashed(p, hashBytes(p)) }

// rankHashed is rank for a caller that has hashed p already.
func (v *vocab) rankHashed(p []byte, h uint64) (uint32, bool) {
	t := tag(h)
	for i := uint32(h) & v.mask; ; i = (i + 1) & v.mask {
		s := v.slots[i]
		if s == 0 {
			return noRank, false
		}
		if s&^rankMask == t {
			r := s&rankMask - 1
			if bytes.Equal(v.blob[v.offs[r]:v.offs[r+1]], p) {
				return r, true
			}
		}
	}
}

// pairRank returns the rank of p, or noRank if p is not a token.
func (v *vocab) pairRank(p []byte) uint32 {
	r, _ := v.rank(p)
	return r
}

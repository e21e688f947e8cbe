package tokenizer

import "sync"

// A pieceCache remembers the token counts of recent short pieces, and the
// rank of those that are one token. Text repeats its pieces (words, JSON
// keys and punctuation), and a hit costs one hash and a compare in a
// table small enough to stay in the processor's cache, where a miss costs
// a lookup in the vocab table or a byte pair merge.
//
// A pieceCache is used by one goroutine at a time: callers take one from
// the encoding's pool and put it back. Its entries never go stale, since
// the vocab never changes, so it needs no clearing between uses.
type pieceCache struct {
	entries [cacheSize]cacheEntry
	scratch mergeScratch // for pieces too long to merge on the stack
}

const (
	cacheBits  = 13
	cacheSize  = 1 << cacheBits
	cachePiece = 26 // the longest piece cached
)

// A cacheEntry takes 32 bytes, half a cache line.
type cacheEntry struct {
	n     uint8 // length of the piece; 0 if the entry is empty
	count uint8 // tokens in the piece, at most cachePiece
	key   [cachePiece]byte
	rank  uint32 // the piece's rank if count is 1, else noRank
}

// cachePool holds the caches of every encoding; a cache belongs to one
// encoding for as long as it lives.
type cachePool struct{ sync.Pool }

func (p *cachePool) get() *pieceCache {
	if c, ok := p.Get().(*pieceCache); ok {
		return c
	}
	return new(pieceCache)
}

func (p *cachePool) put(c *pieceCache) { p.Put(c) }

// lookup returns the entry for p, whose hash is h, or nil.
func (c *pieceCache) lookup(p []byte, h uint64) *cacheEntry {
	e := &c.entries[h>>(64-cacheBits)]
	if int(e.n) != len(p) || string(e.key[:e.n]) != string(p) {
		return nil
	}
	return e
}

// store records that p, whose hash is h, has count tokens, the first of
// rank rank.
func (c *pieceCache) store(p []byte, h uint64, count int, rank uint32) {
	e := &c.entries[h>>(64-cacheBits)]
	e.n = uint8(copy(e.key[:], p))
	e.count = uint8(count)
	e.rank = rank
}

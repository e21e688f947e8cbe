package tokenizer

// Byte pair encoding of one piece: start from its single bytes and, while
// two adjacent parts join into a token, join the pair whose token has the
// lowest rank, the leftmost of equals. Short pieces, nearly all of them,
// rescan their parts after each join; long ones keep their pairs in a heap
// so that a piece of a megabyte costs n log n, not n squared. Both give
// the same parts.

// smallPiece is the longest piece merged by rescanning.
const smallPiece = 48

// A part is a token that starts at byte start of the piece; tok is its
// rank, and rank that of the pair it forms with the next part, noRank if
// none.
type part struct {
	start int32
	rank  uint32
	tok   uint32
}

// mergeSmall merges p, of 2 to smallPiece bytes, in buf and returns its
// parts followed by one that starts at len(p).
func (v *vocab) mergeSmall(p []byte, buf *[smallPiece + 1]part) []part {
	parts := buf[:len(p)+1]
	for i := range p {
		parts[i] = part{int32(i), noRank, v.byteRank[p[i]]}
	}
	parts[len(p)] = part{int32(len(p)), noRank, noRank}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = v.pairRank2[int(p[i])<<8|int(p[i+1])]
	}
	for {
		best, at := noRank, -1
		for i := 0; i+2 < len(parts); i++ {
			if parts[i].rank < best {
				best, at = parts[i].rank, i
			}
		}
		if at < 0 {
			return parts
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at].tok = best
		parts[at].rank = noRank
		if at+2 < len(parts) {
			parts[at].rank = v.pairRank(p[parts[at].start:parts[at+2].start])
		}
		if at > 0 {
			parts[at-1].rank = v.pairRank(p[parts[at-1].start:parts[at+1].start])
		}
	}
}

// A pairEntry proposes joining the part that starts at pos with the next;
// it is stale once gen no longer matches the part's generation.
type pairEntry struct {
	rank uint32
	pos  int32
	gen  uint32
}

func (a pairEntry) less(b pairEntry) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// pairHeap is a binary min-heap of pair entries.
type pairHeap []pairEntry

func (h *pairHeap) push(e pairEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		up := (i - 1) / 2
		if !s[i].less(s[up]) {
			break
		}
		s[i], s[up] = s[up], s[i]
		i = up
	}
}

func (h *pairHeap) pop() pairEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		min, l := i, 2*i+1
		if l < len(s) && s[l].less(s[min]) {
			min = l
		}
		if r := l + 1; r < len(s) && s[r].less(s[min]) {
			min = r
		}
		if min == i {
			break
		}
		s[i], s[min] = s[min], s[i]
		i = min
	}
	*h = s
	return top
}

// mergeScratch holds the working slices of mergeLarge for reuse.
type mergeScratch struct {
	next, prev, starts []int32
	gen, tok, toks     []uint32
	heap               pairHeap
}

// keepScratch is the most elements a scratch slice keeps between merges,
// so that one huge piece does not pin its buffers in the cache.
const keepScratch = 1 << 16

func grow32[T int32 | uint32](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// release drops the buffers too big to keep.
func (s *mergeScratch) release() {
	if cap(s.next) > keepScratch {
		*s = mergeScratch{}
	}
}

// mergeLarge merges p, of at least 2 bytes, and returns the start of each
// part followed by len(p), and the rank of each part. The results live in
// s, which may be nil, until the next merge in s.
func (v *vocab) mergeLarge(p []byte, s *mergeScratch) ([]int32, []uint32) {
	if s == nil {
		s = new(mergeScratch)
	}
	n := int32(len(p))
	next := grow32(s.next, int(n))
	prev := grow32(s.prev, int(n))
	gen := grow32(s.gen, int(n))
	tok := grow32(s.tok, int(n))
	h := s.heap[:0]
	for i := int32(0); i < n; i++ {
		next[i], prev[i], gen[i], tok[i] = i+1, i-1, 0, v.byteRank[p[i]]
		if i+1 < n {
			if r := v.pairRank2[int(p[i])<<8|int(p[i+1])]; r != noRank {
				h.push(pairEntry{r, i, 0})
			}
		}
	}
	for len(h) > 0 {
		e := h.pop()
		i := e.pos
		if gen[i] != e.gen {
			continue
		}
		j := next[i]
		k := next[j]
		next[i] = k
		tok[i] = e.rank
		if k < n {
			prev[k] = i
		}
		gen[j]++
		gen[i]++
		if k < n {
			if r := v.pairRank(p[i:next[k]]); r != noRank {
				h.push(pairEntry{r, i, gen[i]})
			}
		}
		if pi := prev[i]; pi >= 0 {
			gen[pi]++
			if r := v.pairRank(p[pi:k]); r != noRank {
				h.push(pairEntry{r, pi, gen[pi]})
			}
		}
	}
	starts, toks := s.starts[:0], s.toks[:0]
	for i := int32(0); i < n; i = next[i] {
		starts = append(starts, i)
		toks = append(toks, tok[i])
	}
	starts = append(starts, n)
	*s = mergeScratch{next: next, prev: prev, starts: starts, gen: gen, tok: tok, toks: toks, heap: h}
	return starts, toks
}

// countCached returns the number of tokens of p, through the cache c.
func (v *vocab) countCached(c *pieceCache, p []byte) int {
	if len(p) == 1 {
		return 1
	}
	h := hashBytes(p)
	if len(p) > cachePiece {
		if _, ok := v.rankHashed(p, h); ok {
			return 1
		}
		return v.countMerged(p, &c.scratch)
	}
	if e := c.lookup(p, h); e != nil {
		return int(e.count)
	}
	if r, ok := v.rankHashed(p, h); ok {
		c.store(p, h, 1, r)
		return 1
	}
	n := v.countMerged(p, &c.scratch)
	c.store(p, h, n, noRank)
	return n
}

// countMerged returns the number of tokens of p, which is not one token.
func (v *vocab) countMerged(p []byte, s *mergeScratch) int {
	if len(p) <= smallPiece {
		var buf [smallPiece + 1]part
		return len(v.mergeSmall(p, &buf)) - 1
	}
	_, toks := v.mergeLarge(p, s)
	n := len(toks)
	s.release()
	return n
}

// appendCached appends the ids of the tokens of p, through the cache c.
func (v *vocab) appendCached(c *pieceCache, ids []int, p []byte) []int {
	if len(p) == 1 {
		return append(ids, int(v.byteRank[p[0]]))
	}
	h := hashBytes(p)
	cached := len(p) <= cachePiece
	known := false // p is known to be more than one token
	if cached {
		if e := c.lookup(p, h); e != nil {
			if e.count == 1 {
				return append(ids, int(e.rank))
			}
			known = true
		}
	}
	if !known {
		if r, ok := v.rankHashed(p, h); ok {
			if cached {
				c.store(p, h, 1, r)
			}
			return append(ids, int(r))
		}
	}
	n := len(ids)
	if len(p) <= smallPiece {
		var buf [smallPiece + 1]part
		parts := v.mergeSmall(p, &buf)
		for _, pt := range parts[:len(parts)-1] {
			ids = append(ids, int(pt.tok))
		}
	} else {
		_, toks := v.mergeLarge(p, &c.scratch)
		for _, r := range toks {
			ids = append(ids, int(r))
		}
		c.scratch.release()
	}
	if cached && !known {
		c.store(p, h, len(ids)-n, noRank)
	}
	return ids
}

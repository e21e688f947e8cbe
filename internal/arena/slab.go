package arena

// Ref addresses a byte string in a [Slab]: a chunk, an offset in it, a
// length. The zero Ref is the empty string.
type Ref struct {
	chunk, off, n uint32
}

// Slab keeps byte strings in large chunks. A string longer than [Large]
// gets a chunk of its own, freed with it; the others share chunks and
// leave garbage when released, which [Slab.Garbage] reports: the owner
// then copies what is live into a new Slab.
//
// The zero Slab is empty and ready to use. It is not safe for concurrent
// use.
type Slab struct {
	chunks [][]byte
	cur    int      // the chunk being filled, plus one; 0 for none
	free   []uint32 // released chunk numbers
	live   int      // bytes referenced
	dead   int      // bytes no longer referenced in shared chunks
}

const (
	slabFirst = 4 << 10   // the least size of a shared chunk
	slabMax   = 256 << 10 // the most
	// Large is the length above which a byte string gets a chunk of its
	// own.
	Large = slabMax / 4
)

// Add stores the concatenation of parts and returns where. The slab never
// writes over the bytes of a string it holds, so a slice of them stays
// good after the string is released.
func (s *Slab) Add(parts ...[]byte) Ref {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		return Ref{}
	}
	s.live += n
	var r Ref
	if n > Large {
		r = Ref{chunk: s.chunk(make([]byte, 0, n)), n: uint32(n)}
	} else {
		if s.cur == 0 || cap(s.chunks[s.cur-1])-len(s.chunks[s.cur-1]) < n {
			// A quarter of what is live, within bounds: the room left in
			// the chunk being filled stays small beside what the slab holds.
			size := min(max(s.live/4, slabFirst, n), slabMax)
			s.cur = int(s.chunk(make([]byte, 0, size))) + 1
		}
		r = Ref{chunk: uint32(s.cur - 1), off: uint32(len(s.chunks[s.cur-1])), n: uint32(n)}
	}
	c := s.chunks[r.chunk]
	for _, p := range parts {
		c = append(c, p...)
	}
	s.chunks[r.chunk] = c
	return r
}

// chunk installs b as a chunk and returns its number.
func (s *Slab) chunk(b []byte) uint32 {
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.chunks[i] = b
		return i
	}
	s.chunks = append(s.chunks, b)
	return uint32(len(s.chunks) - 1)
}

// Bytes returns the string r addresses, nil for the empty one. Its
// capacity ends with it.
func (s *Slab) Bytes(r Ref) []byte {
	if r.n == 0 {
		return nil
	}
	return s.chunks[r.chunk][r.off : r.off+r.n : r.off+r.n]
}

// own reports whether r has a chunk of its own.
func (s *Slab) own(r Ref) bool {
	return r.n > 0 && r.off == 0 && int(r.chunk) != s.cur-1 && len(s.chunks[r.chunk]) == int(r.n)
}

// Release forgets r.
func (s *Slab) Release(r Ref) {
	if r.n == 0 {
		return
	}
	s.live -= int(r.n)
	if s.own(r) {
		s.chunks[r.chunk] = nil
		s.free = append(s.free, r.chunk)
		return
	}
	s.dead += int(r.n)
}

// Truncate keeps the first n bytes of r and forgets the rest. A string
// with a chunk of its own moves what it keeps to a shared chunk, so that
// its chunk is freed at once.
func (s *Slab) Truncate(r Ref, n uint32) Ref {
	if n >= r.n {
		return r
	}
	if s.own(r) {
		k := s.Add(s.Bytes(r)[:n])
		s.Release(r)
		return k
	}
	s.live -= int(r.n - n)
	s.dead += int(r.n - n)
	r.n = n
	return r
}

// Garbage reports whether copying the live strings into a new slab would
// be worth its cost: the dead bytes outweigh the live ones, and there are
// enough of them.
func (s *Slab) Garbage() bool { return s.dead > s.live && s.dead > slabMax }

// Chunks returns the slab's chunks, shared with it: what a test reads to
// learn which memory a string it was handed lies in.
func (s *Slab) Chunks() [][]byte { return s.chunks }

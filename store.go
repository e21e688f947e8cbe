package pruneguard

import (
	"hash/maphash"
	"math/bits"
)

// The storage of a Context: records in chunked arenas addressed by int32,
// the bytes of ids, contents and arguments in a slab, and open-addressing
// indexes from ids to records. None of it holds a pointer per message, so
// a Context of a million messages costs the garbage collector a few
// hundred objects, and its bookkeeping a few dozen bytes per message.

// none marks a missing record in an int32 link.
const none int32 = -1

// arena is a growing array of records in chunks of arenaChunk, so that
// growing never copies more than one chunk. The first chunk grows as a
// slice does, so that a small Context stays small; a pointer into the
// arena is good until the next push.
type arena[T any] struct {
	chunks [][]T
	n      int32
}

const (
	arenaBits  = 10
	arenaChunk = 1 << arenaBits
)

func (a *arena[T]) at(i int32) *T { return &a.chunks[i>>arenaBits][i&(arenaChunk-1)] }

// push adds a zero record and returns its index.
func (a *arena[T]) push() int32 {
	last := len(a.chunks) - 1
	if last < 0 || len(a.chunks[last]) == arenaChunk {
		c := 16
		if last >= 0 {
			c = arenaChunk
		}
		a.chunks = append(a.chunks, make([]T, 0, c))
		last++
	}
	var zero T
	a.chunks[last] = append(a.chunks[last], zero)
	i := a.n
	a.n++
	return i
}

// reserve makes room for n records in an empty arena: its first chunk
// takes them, or as many as a chunk holds.
func (a *arena[T]) reserve(n int) {
	if len(a.chunks) == 0 && n > 0 {
		a.chunks = append(a.chunks, make([]T, 0, min(n, arenaChunk)))
	}
}

// truncate keeps the first n records and drops the chunks past them.
func (a *arena[T]) truncate(n int32) {
	keep := int((n + arenaChunk - 1) >> arenaBits)
	clear(a.chunks[keep:])
	a.chunks = a.chunks[:keep]
	if keep > 0 {
		a.chunks[keep-1] = a.chunks[keep-1][:int(n)-(keep-1)<<arenaBits]
	}
	a.n = n
}

// sref addresses bytes in a slab: a chunk, an offset in it, a length.
type sref struct {
	chunk, off, n uint32
}

// slab keeps byte strings in large chunks. A string larger than a
// quarter of the chunk size gets a chunk of its own, freed with it; the
// others leave garbage that the Context compacts when it outweighs what
// is live.
type slab struct {
	chunks [][]byte
	cur    int      // the chunk being filled, or -1
	free   []uint32 // released chunk numbers
	live   int      // bytes referenced
	dead   int      // bytes no longer referenced in shared chunks
}

const (
	slabFirst = 4 << 10   // the least size of a shared chunk
	slabMax   = 256 << 10 // the most
)

// add stores the concatenation of parts.
func (s *slab) add(parts ...[]byte) sref {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		return sref{}
	}
	s.live += n
	var r sref
	if n > slabMax/4 {
		r = sref{chunk: s.chunk(make([]byte, 0, n)), n: uint32(n)}
	} else {
		if s.cur < 0 || len(s.chunks) == 0 || cap(s.chunks[s.cur])-len(s.chunks[s.cur]) < n {
			// A quarter of what is live, within bounds: the room left in
			// the chunk being filled stays small beside what the slab holds.
			size := min(max(s.live/4, slabFirst, n), slabMax)
			s.cur = int(s.chunk(make([]byte, 0, size)))
		}
		r = sref{chunk: uint32(s.cur), off: uint32(len(s.chunks[s.cur])), n: uint32(n)}
	}
	c := s.chunks[r.chunk]
	for _, p := range parts {
		c = append(c, p...)
	}
	s.chunks[r.chunk] = c
	return r
}

// chunk installs b as a chunk and returns its number.
func (s *slab) chunk(b []byte) uint32 {
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.chunks[i] = b
		return i
	}
	s.chunks = append(s.chunks, b)
	return uint32(len(s.chunks) - 1)
}

func (s *slab) bytes(r sref) []byte {
	if r.n == 0 {
		return nil
	}
	return s.chunks[r.chunk][r.off : r.off+r.n : r.off+r.n]
}

// own reports whether r has a chunk of its own.
func (s *slab) own(r sref) bool {
	return r.n > 0 && r.off == 0 && int(r.chunk) != s.cur && len(s.chunks[r.chunk]) == int(r.n)
}

// release forgets r.
func (s *slab) release(r sref) {
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

// truncate keeps the first n bytes of r and forgets the rest. A string
// with a chunk of its own moves what it keeps to a shared chunk, so that
// its chunk is freed at once.
func (s *slab) truncate(r sref, n uint32) sref {
	if n >= r.n {
		return r
	}
	if s.own(r) {
		k := s.add(s.bytes(r)[:n])
		s.release(r)
		return k
	}
	s.live -= int(r.n - n)
	s.dead += int(r.n - n)
	r.n = n
	return r
}

// garbage reports whether compacting would be worth its cost: the dead
// bytes outweigh the live ones, and there are enough of them.
func (s *slab) garbage() bool { return s.dead > s.live && s.dead > slabMax }

// index maps ids to the records that hold them: open addressing over
// int32 slots (a record's index plus one; zero is empty), Robin Hood
// linear probing, deletion by shifting back. Beside each slot it keeps a
// byte of the id's hash and the slot's distance from where the id
// hashes, so that it reads an id only when the hash bytes match and never
// to delete. It keeps no key: key reads the id of a record, or nil for a
// record gone, which no id matches and a resize leaves out. Its load
// stays between about a half and four fifths, so it costs 7 to 11 bytes
// per id.
type index struct {
	slots []int32
	meta  []uint16 // distance<<8 | hash byte
	lost  []int32  // records a failed place left out, until the resize
	n     int
	seed  maphash.Seed
	key   func(i int32) []byte
}

func (t *index) home(h uint64) int { return int(uint64(uint32(h)) * uint64(len(t.slots)) >> 32) }

func (t *index) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// find returns the record holding id.
func (t *index) find(id string) (int32, bool) {
	if t.n == 0 {
		return none, false
	}
	h := maphash.String(t.seed, id)
	g := uint16(h >> 56)
	for i, d := t.home(h), uint16(0); ; i, d = t.next(i), d+1 {
		s, m := t.slots[i], t.meta[i]
		if s == 0 || m>>8 < d {
			return none, false
		}
		if m == d<<8|g {
			if k := t.key(s - 1); k != nil && string(k) == id {
				return s - 1, true
			}
		}
	}
}

// put maps the id of record r to r. The id must not be in the index.
func (t *index) put(r int32) {
	if (t.n+1)*5 > len(t.slots)*4 {
		t.resize(indexSize(len(t.slots) * 3 / 2))
	}
	if !t.place(r, maphash.Bytes(t.seed, t.key(r))) {
		t.resize(indexSize(len(t.slots) * 3 / 2))
	}
	t.n++
}

// place puts record r, whose id hashes to h, taking the slot of any
// record nearer to its home on the way. It reports false, leaving the
// index without some record, when a distance would not fit its byte;
// the caller then resizes, which places every record again.
func (t *index) place(r int32, h uint64) bool { return t.placeAt(r, t.home(h), uint16(h>>56)) }

// placeAt is place for a record whose home slot is i and whose meta is m
// at distance zero.
func (t *index) placeAt(r int32, i int, m uint16) bool {
	s := r + 1
	for ; ; i = t.next(i) {
		if t.slots[i] == 0 {
			t.slots[i], t.meta[i] = s, m
			return true
		}
		if t.meta[i]>>8 < m>>8 {
			t.slots[i], s = s, t.slots[i]
			t.meta[i], m = m, t.meta[i]
		}
		if m>>8 == 0xff {
			t.lost = append(t.lost, s-1)
			return false
		}
		m += 1 << 8
	}
}

// remove unmaps record r.
func (t *index) remove(r int32) {
	if t.n == 0 {
		return
	}
	i := t.home(maphash.Bytes(t.seed, t.key(r)))
	for t.slots[i] != r+1 {
		if t.slots[i] == 0 {
			return
		}
		i = t.next(i)
	}
	t.n--
	// Shift back the records after it that are away from home.
	for j := t.next(i); t.slots[j] != 0 && t.meta[j]>>8 > 0; i, j = j, t.next(j) {
		t.slots[i], t.meta[i] = t.slots[j], t.meta[j]-1<<8
	}
	t.slots[i], t.meta[i] = 0, 0
}

// resize rebuilds the index with size slots.
func (t *index) resize(size int) {
	old := t.slots
	lost := t.lost
	t.lost = nil
	t.slots = make([]int32, size)
	t.meta = make([]uint16, size)
	for _, s := range old {
		if s != 0 {
			t.rehash(s - 1)
		}
	}
	for _, r := range lost {
		t.rehash(r)
	}
}

func (t *index) rehash(r int32) {
	k := t.key(r)
	if k == nil {
		t.n-- // a record gone: it leaves the index here
		return
	}
	if !t.place(r, maphash.Bytes(t.seed, k)) {
		t.resize(indexSize(len(t.slots) * 3 / 2))
	}
}

// reset empties the index and sizes it for n ids.
func (t *index) reset(n int) {
	size := indexSize(n * 3 / 2)
	t.slots = make([]int32, size)
	t.meta = make([]uint16, size)
	t.n = 0
}

// indexSize rounds a number of slots: at least 16, and from
// indexRound slots on a multiple of 16, so that renumber can mostly
// shrink an index by a whole factor.
func indexSize(n int) int {
	if n < indexRound {
		return max(16, n)
	}
	return (n + 15) &^ 15
}

const indexRound = 1024

// renumber maps every record r of the index to m[r], drops those m maps
// to none, and sizes the index for n records, as reset does within a
// factor of two. It returns how many it kept. It reads no id when it can
// shrink the index by a whole factor f or keep its size: a slot's home
// in a table of len(slots)/f slots is its home now divided by f, since
// home scales the hash's 32 low bits to the table, and the hash byte
// does not depend on the size. Keeping its size, it works in the slots
// it has (see renumberInPlace); shrinking, in new ones. Otherwise it
// places every record again.
func (t *index) renumber(m []int32, n int) int {
	size := len(t.slots)
	want := indexSize(n * 3 / 2)
	f := max(size/want, 1)
	for size%f != 0 {
		f--
	}
	if n == 0 || size == 0 || size/f > 2*want {
		// Too sparse: place every record again from its id.
		old := t.slots
		t.reset(n)
		for _, s := range old {
			if s != 0 {
				if r := m[s-1]; r != none {
					t.put(r)
				}
			}
		}
		return t.n
	}
	if f == 1 {
		t.renumberInPlace(m)
		return t.n
	}
	slots, meta := t.slots, t.meta
	t.slots = make([]int32, size/f)
	t.meta = make([]uint16, size/f)
	t.n = 0
	// From an empty slot on, records come in the order of their homes,
	// counted on past the end of the table rather than wrapping, and a
	// home in the table shrunk is the home divided by f, wrapped or not.
	// Placed in that order, each record lands on its home or just past
	// the one placed before it, which is where a linear probe would put
	// it, in the order of distances that find relies on.
	start := 0
	for slots[start] != 0 {
		start++
	}
	small := len(t.slots)
	shift := -1 // f as a shift, when it is a power of two
	if f&(f-1) == 0 {
		shift = bits.TrailingZeros(uint(f))
	}
	failed := false
	last := -1 // where the record placed last landed, not wrapped
	for j := range size {
		u := start + 1 + j // the slot, not wrapped
		i := u
		if i >= size {
			i -= size
		}
		s := slots[i]
		if s == 0 {
			continue
		}
		r := m[s-1]
		if r == none {
			continue
		}
		t.n++
		if failed {
			t.lost = append(t.lost, r)
			continue
		}
		home := u - int(meta[i]>>8)
		if shift >= 0 {
			home >>= shift
		} else {
			home /= f
		}
		at := max(home, last+1)
		k := at
		for k >= small {
			k -= small
		}
		if d := at - home; d >= 0xff || t.slots[k] != 0 || t.n*5 > small*4 {
			// Too far from home, or more kept than sized for: the
			// rest wait in lost for a resize.
			failed = true
			t.lost = append(t.lost, r)
			continue
		}
		t.slots[k], t.meta[k] = r+1, uint16(at-home)<<8|meta[i]&0xff
		last = at
	}
	if failed {
		t.resize(indexSize(max(len(t.slots), t.n) * 3 / 2))
	}
	return t.n
}

// renumberInPlace is renumber keeping the size, in the slots the index
// has: the pass of keepInPlace, renaming each record r to m[r].
func (t *index) renumberInPlace(m []int32) {
	t.keepInPlace(func(r int32) int32 { return m[r] })
}

// recent remembers the keys of its last puts, up to a bound, with a
// value each: the oldest puts are forgotten first, and a key put again
// lives from its latest put.
type recent[V any] struct {
	m    map[string]recentEntry[V]
	ring []string
	next int
}

type recentEntry[V any] struct {
	v    V
	slot int // the ring slot of the key's latest put
}

// recentBound is how many pruned calls a Context remembers, by id for
// results that arrive too late and by signature for refetches.
const recentBound = 4096

func (r *recent[V]) get(k string) (V, bool) {
	e, ok := r.m[k]
	return e.v, ok
}

// reserve makes room, in a window not used yet, for n keys.
func (r *recent[V]) reserve(n int) {
	if r.m == nil && n > 0 {
		n = min(n, recentBound)
		r.m = make(map[string]recentEntry[V], n)
		r.ring = make([]string, 0, n)
	}
}

// put sets k's value and makes k the most recent key.
func (r *recent[V]) put(k string, v V) {
	if r.m == nil {
		r.m = make(map[string]recentEntry[V])
	}
	slot := len(r.ring)
	if slot < recentBound {
		r.ring = append(r.ring, k)
	} else {
		slot = r.next
		if old := r.ring[slot]; r.m[old].slot == slot {
			delete(r.m, old)
		}
		r.ring[slot] = k
		r.next = (r.next + 1) % recentBound
	}
	r.m[k] = recentEntry[V]{v, slot}
}

// forget drops k.
func (r *recent[V]) forget(k string) { delete(r.m, k) }

// recordSet is a set of record indexes, a bit each.
type recordSet []uint64

// newRecordSet returns an empty set for the records below n.
func newRecordSet(n int32) recordSet { return make(recordSet, (n+63)/64) }

func (s recordSet) add(r int32)      { s[r/64] |= 1 << (r % 64) }
func (s recordSet) has(r int32) bool { return s[r/64]&(1<<(r%64)) != 0 }

// removeSet unmaps every record of gone the index holds, as remove would
// one by one, in one pass over the slots that reads no id (keepInPlace).
func (t *index) removeSet(gone recordSet) {
	if t.n == 0 {
		return
	}
	t.keepInPlace(func(r int32) int32 {
		if gone.has(r) {
			return none
		}
		return r
	})
}

// keepInPlace maps every record r of the index to f(r), dropping those f
// maps to none, in one pass over the slots that reads no id: from an
// empty slot on, each record kept moves back to its home or just past the
// one kept before it, which is where removing the others one by one would
// have shifted it. It moves no further from home than it was, to a slot
// already passed and emptied or its own, so it fits its distance byte and
// meets no record. It takes time in proportion to the slots.
func (t *index) keepInPlace(f func(r int32) int32) {
	size := len(t.slots)
	start := 0
	for t.slots[start] != 0 {
		start++
	}
	last := -1 // where the record kept last lies, not wrapped
	for j := 1; j <= size; j++ {
		u := start + j // the slot, not wrapped
		i := u
		if i >= size {
			i -= size
		}
		s := t.slots[i]
		if s == 0 {
			continue
		}
		m := t.meta[i]
		t.slots[i], t.meta[i] = 0, 0
		r := f(s - 1)
		if r == none {
			t.n--
			continue
		}
		// A record lies no further from its home than the empty slot
		// before the run it is in, so home is not wrapped either.
		home := u - int(m>>8)
		at := max(home, last+1)
		last = at
		k := at
		if k >= size {
			k -= size
		}
		t.slots[k], t.meta[k] = r+1, uint16(at-home)<<8|m&0xff
	}
}

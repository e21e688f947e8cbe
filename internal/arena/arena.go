// Package arena stores records and byte strings in large chunks addressed
// by integers rather than by pointers: a million records, or their ids
// and contents, cost the garbage collector a few hundred objects.
package arena

// Arena is a growing array of records in chunks of [Chunk], addressed by
// their index from 0, so that growing never copies more than one chunk.
// The first chunk grows as a slice does, so that a small arena stays
// small. A pointer [Arena.At] returns is good until the next
// [Arena.Push].
//
// The zero Arena is empty and ready to use. It is not safe for concurrent
// use.
type Arena[T any] struct {
	chunks [][]T
	n      int32
}

const (
	chunkBits = 10
	// Chunk is how many records a chunk holds.
	Chunk = 1 << chunkBits
)

// At returns the record of index i, which must be below [Arena.Len].
func (a *Arena[T]) At(i int32) *T { return &a.chunks[i>>chunkBits][i&(Chunk-1)] }

// Len returns the number of records.
func (a *Arena[T]) Len() int32 { return a.n }

// Push adds a zero record and returns its index.
func (a *Arena[T]) Push() int32 {
	last := len(a.chunks) - 1
	if last < 0 || len(a.chunks[last]) == Chunk {
		c := 16
		if last >= 0 {
			c = Chunk
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

// Reserve makes room for n records in an empty arena: its first chunk
// takes them, or as many as a chunk holds.
func (a *Arena[T]) Reserve(n int) {
	if len(a.chunks) == 0 && n > 0 {
		a.chunks = append(a.chunks, make([]T, 0, min(n, Chunk)))
	}
}

// Truncate keeps the first n records and drops the chunks past them.
func (a *Arena[T]) Truncate(n int32) {
	keep := int((n + Chunk - 1) >> chunkBits)
	clear(a.chunks[keep:])
	a.chunks = a.chunks[:keep]
	if keep > 0 {
		a.chunks[keep-1] = a.chunks[keep-1][:int(n)-(keep-1)<<chunkBits]
	}
	a.n = n
}

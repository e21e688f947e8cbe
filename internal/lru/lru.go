// Package lru provides a map that remembers only its most recent keys.
package lru

import "iter"

// Map remembers the keys of its last puts, up to a bound, with a value
// each: the oldest puts are forgotten first, and a key put again lives
// from its latest put. Reading a key does not make it recent.
//
// Make a Map with [New]: the zero Map has no room, and Put on it panics.
// A Map is not safe for concurrent use.
type Map[V any] struct {
	m     map[string]entry[V]
	ring  []string // keys in the order of their puts, from slot next on
	next  int      // with the ring full, the slot of the oldest put
	bound int
}

type entry[V any] struct {
	v    V
	slot int // the ring slot of the key's latest put
}

// New returns an empty map that remembers the keys of its last bound
// puts.
func New[V any](bound int) Map[V] { return Map[V]{bound: bound} }

// Get returns the value of k, and whether the map remembers k.
func (r *Map[V]) Get(k string) (V, bool) {
	e, ok := r.m[k]
	return e.v, ok
}

// Len returns the number of keys remembered.
func (r *Map[V]) Len() int { return len(r.m) }

// Reserve makes room for n keys in a map that has had none yet.
func (r *Map[V]) Reserve(n int) {
	if r.m == nil && n > 0 && r.bound > 0 {
		n = min(n, r.bound)
		r.m = make(map[string]entry[V], n)
		r.ring = make([]string, 0, n)
	}
}

// Put sets k's value and makes k the most recent key.
func (r *Map[V]) Put(k string, v V) {
	if r.m == nil {
		r.m = make(map[string]entry[V])
	}
	slot := len(r.ring)
	if slot < r.bound {
		r.ring = append(r.ring, k)
	} else {
		slot = r.next
		if old := r.ring[slot]; r.m[old].slot == slot {
			delete(r.m, old)
		}
		r.ring[slot] = k
		r.next = (r.next + 1) % r.bound
	}
	r.m[k] = entry[V]{v, slot}
}

// Forget drops k.
func (r *Map[V]) Forget(k string) { delete(r.m, k) }

// All yields the keys remembered with their values, from the least
// recently put to the most: put in that order into an empty Map of the
// same bound, they make one that remembers the same.
func (r *Map[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for k, v := range r.Slots() {
			if v != nil && !yield(k, *v) {
				return
			}
		}
	}
}

// Slots yields the puts the map holds a slot for, from the oldest to
// the most recent: the key and value of a put the map remembers, with
// ok true, and for a put forgotten or put again since, ok false. A
// forgotten put keeps its slot until a newer put takes it, so the map
// forgets its other keys later than a map without it would: put in
// that order into an empty Map of the same bound, each put not ok
// forgotten at once, the puts make a map that remembers, and goes on
// forgetting, as this one does.
func (r *Map[V]) Slots() iter.Seq2[string, *V] {
	return func(yield func(string, *V) bool) {
		n := len(r.ring)
		start := 0
		if n == r.bound {
			start = r.next
		}
		for i := range n {
			slot := (start + i) % max(n, 1)
			k := r.ring[slot]
			if e, ok := r.m[k]; ok && e.slot == slot {
				if !yield(k, &e.v) {
					return
				}
			} else if !yield("", nil) {
				return
			}
		}
	}
}

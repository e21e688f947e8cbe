package lru

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// The map against a list of its puts: a key is remembered while its
// latest put is among the last bound puts and no Forget followed it,
// with the value of that put, and All yields the keys remembered in the
// order of their latest puts.
func TestMapRemembersTheLatestPuts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := rapid.IntRange(1, 50).Draw(rt, "bound")
		m := New[int](bound)
		if rapid.Bool().Draw(rt, "reserve") {
			m.Reserve(rapid.IntRange(0, 2*bound).Draw(rt, "room"))
		}
		type put struct {
			k string
			v int
		}
		var puts []put             // every put, in order
		forgot := map[string]int{} // key -> the number of puts made when it was forgotten
		span := rapid.IntRange(1, 3*bound).Draw(rt, "span")
		for i := range rapid.IntRange(0, 400).Draw(rt, "steps") {
			k := fmt.Sprint("k", rapid.IntRange(0, span).Draw(rt, "k"))
			if rapid.IntRange(0, 9).Draw(rt, "forget") == 0 {
				m.Forget(k)
				forgot[k] = len(puts)
			} else {
				m.Put(k, i)
				puts = append(puts, put{k, i})
			}
			// The model: of the last bound puts, each key's latest not
			// forgotten since.
			latest := map[string]int{} // key -> index of its latest put
			for j, p := range puts {
				latest[p.k] = j
			}
			want := map[string]int{}
			var order []string
			for j := max(len(puts)-bound, 0); j < len(puts); j++ {
				p := puts[j]
				if f, ok := forgot[p.k]; latest[p.k] == j && (!ok || f <= j) {
					want[p.k] = p.v
					order = append(order, p.k)
				}
			}
			if m.Len() != len(want) {
				rt.Fatalf("Len %d, want %d", m.Len(), len(want))
			}
			for q := range span + 1 {
				k := fmt.Sprint("k", q)
				v, ok := m.Get(k)
				if w, wok := want[k]; ok != wok || v != w {
					rt.Fatalf("Get(%s) = %d %v, want %d %v", k, v, ok, w, wok)
				}
			}
			var all []string
			for k, v := range m.All() {
				if v != want[k] {
					rt.Fatalf("All yields %s=%d, want %d", k, v, want[k])
				}
				all = append(all, k)
			}
			if !slices.Equal(all, order) {
				rt.Fatalf("All yields %v, want %v", all, order)
			}
		}
	})
}

// Put back in the order All yields them into an empty map of the same
// bound, the keys make a map that remembers the same, in the same order.
func TestMapAllRestores(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := rapid.IntRange(1, 20).Draw(rt, "bound")
		a := New[int](bound)
		for i := range rapid.IntRange(0, 100).Draw(rt, "puts") {
			a.Put(fmt.Sprint("k", rapid.IntRange(0, 30).Draw(rt, "k")), i)
		}
		b := New[int](bound)
		for k, v := range a.All() {
			b.Put(k, v)
		}
		type kv struct {
			k string
			v int
		}
		var ka, kb []kv
		for k, v := range a.All() {
			ka = append(ka, kv{k, v})
		}
		for k, v := range b.All() {
			kb = append(kb, kv{k, v})
		}
		if !slices.Equal(ka, kb) {
			rt.Fatalf("%v, restored %v", ka, kb)
		}
	})
}

// A map made again from the slots of another, each forgotten slot a put
// forgotten at once, remembers what the other does, and keeps doing so
// as the same puts and forgets follow on both.
func TestSlotsMakeAMapThatForgetsAlike(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := rapid.IntRange(1, 20).Draw(rt, "bound")
		span := rapid.IntRange(1, 3*bound).Draw(rt, "span")
		step := func(ms ...*Map[int]) {
			k := fmt.Sprint("k", rapid.IntRange(0, span).Draw(rt, "k"))
			forget := rapid.IntRange(0, 4).Draw(rt, "forget") == 0
			for _, m := range ms {
				if forget {
					m.Forget(k)
				} else {
					m.Put(k, len(k))
				}
			}
		}
		a := New[int](bound)
		for range rapid.IntRange(0, 100).Draw(rt, "before") {
			step(&a)
		}
		b := New[int](bound)
		for k, v := range a.Slots() {
			if v == nil {
				b.Put("", 0)
				b.Forget("")
				continue
			}
			b.Put(k, *v)
		}
		all := func(m *Map[int]) []string {
			var out []string
			for k, v := range m.All() {
				out = append(out, fmt.Sprint(k, "=", v))
			}
			return out
		}
		for i := range rapid.IntRange(0, 100).Draw(rt, "after") {
			if !slices.Equal(all(&a), all(&b)) {
				rt.Fatalf("after %d steps: %v, made again %v", i, all(&a), all(&b))
			}
			step(&a, &b)
		}
	})
}

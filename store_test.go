package pruneguard

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// The index against a map: random puts and removes of ids, every id
// looked up after each step.
func TestIndexMatchesAMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var keys []string
		ix := index{key: func(i int32) []byte { return []byte(keys[i]) }}
		ix.seed = (&Context{}).byID.seed
		c := NewContext(Config{})
		ix.seed = c.byID.seed
		in := map[string]int32{}
		span := rapid.IntRange(1, 3000).Draw(rt, "span")
		for range rapid.IntRange(1, 4000).Draw(rt, "steps") {
			id := fmt.Sprint("k", rapid.IntRange(0, span).Draw(rt, "k"))
			if r, ok := in[id]; ok && rapid.Bool().Draw(rt, "remove") {
				ix.remove(r)
				delete(in, id)
			} else if !ok {
				keys = append(keys, id)
				r := int32(len(keys) - 1)
				ix.put(r)
				in[id] = r
			}
			if ix.n != len(in) {
				rt.Fatalf("n %d, model %d", ix.n, len(in))
			}
			q := fmt.Sprint("k", rapid.IntRange(0, span).Draw(rt, "q"))
			r, ok := ix.find(q)
			if w, wok := in[q]; ok != wok || ok && r != w {
				rt.Fatalf("find(%s) = %d %v, model %d %v", q, r, ok, w, wok)
			}
		}
		for id, r := range in {
			if got, ok := ix.find(id); !ok || got != r {
				rt.Fatalf("find(%s) = %d %v, want %d", id, got, ok, r)
			}
		}
	})
}

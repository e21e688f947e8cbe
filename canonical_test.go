package pruneguard

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// canonicalModel is canonical written plainly: each object's members
// canonicalised on their own, sorted stably by key, then joined.
func canonicalModel(b []byte) []byte {
	var v func(i int) ([]byte, int)
	v = func(i int) ([]byte, int) {
		i = skipSpace(b, i)
		switch b[i] {
		case '{':
			var keys, vals [][]byte
			for i++; ; {
				i = skipSpace(b, i)
				if b[i] == '}' {
					i++
					break
				}
				if b[i] == ',' {
					i++
					continue
				}
				start := i
				i = skipString(b, i)
				keys = append(keys, b[start:i])
				var val []byte
				val, i = v(skipSpace(b, i) + 1)
				vals = append(vals, val)
			}
			order := make([]int, len(keys))
			for j := range order {
				order[j] = j
			}
			slices.SortStableFunc(order, func(x, y int) int { return bytes.Compare(keys[x], keys[y]) })
			out := []byte{'{'}
			for j, o := range order {
				if j > 0 {
					out = append(out, ',')
				}
				out = append(append(append(out, keys[o]...), ':'), vals[o]...)
			}
			return append(out, '}'), i
		case '[':
			out := []byte{'['}
			first := true
			for i++; ; {
				i = skipSpace(b, i)
				if b[i] == ']' {
					return append(out, ']'), i + 1
				}
				if b[i] == ',' {
					i++
					continue
				}
				if !first {
					out = append(out, ',')
				}
				first = false
				var e []byte
				e, i = v(i)
				out = append(out, e...)
			}
		case '"':
			j := skipString(b, i)
			return b[i:j], j
		}
		j := i
		for j < len(b) && !endsLiteral(b[j]) {
			j++
		}
		return b[i:j], j
	}
	out, _ := v(0)
	return out
}

// jsonText draws JSON text with objects of repeated and unordered keys,
// escapes, nesting and white space between tokens.
func jsonText() *rapid.Generator[string] {
	ws := rapid.SampledFrom([]string{"", "", " ", "\n\t", "\r\n  "})
	key := rapid.SampledFrom([]string{`"a"`, `"b"`, `"B"`, `"ab"`, `"a\"b"`, `"\u0061"`, `""`, `"z"`, `"é"`})
	scalar := rapid.SampledFrom([]string{`1`, `-2.5e3`, `0`, `true`, `false`, `null`, `"x"`, `"a,b}"`, `"\\"`, `"\n"`})
	var value func(t *rapid.T, depth int) string
	value = func(t *rapid.T, depth int) string {
		kind := rapid.IntRange(0, 2).Draw(t, "kind")
		if depth > 3 {
			kind = 0
		}
		var b strings.Builder
		switch kind {
		case 0:
			return scalar.Draw(t, "scalar")
		case 1:
			b.WriteString("[" + ws.Draw(t, "ws"))
			for j := range rapid.IntRange(0, 4).Draw(t, "n") {
				if j > 0 {
					b.WriteString(ws.Draw(t, "ws") + "," + ws.Draw(t, "ws"))
				}
				b.WriteString(value(t, depth+1))
			}
			b.WriteString(ws.Draw(t, "ws") + "]")
		default:
			b.WriteString("{" + ws.Draw(t, "ws"))
			for j := range rapid.IntRange(0, 12).Draw(t, "n") {
				if j > 0 {
					b.WriteString(ws.Draw(t, "ws") + "," + ws.Draw(t, "ws"))
				}
				b.WriteString(key.Draw(t, "key") + ws.Draw(t, "ws") + ":" + ws.Draw(t, "ws") + value(t, depth+1))
			}
			b.WriteString(ws.Draw(t, "ws") + "}")
		}
		return b.String()
	}
	return rapid.Custom(func(t *rapid.T) string { return value(t, 0) })
}

func TestCanonicalEqualsModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := jsonText().Draw(t, "json")
		if !json.Valid([]byte(text)) {
			t.Fatalf("generator made invalid JSON %s", text)
		}
		prefix := []byte("tool\x00")
		got, ok := canonical(slices.Clone(prefix), []byte(text))
		if !ok {
			t.Fatalf("canonical refuses %s", text)
		}
		want := append(slices.Clone(prefix), canonicalModel([]byte(text))...)
		if !bytes.Equal(got, want) {
			t.Fatalf("canonical(%s)\n got %s\nwant %s", text, got, want)
		}
		var x, y any
		if json.Unmarshal([]byte(text), &x) != nil || json.Unmarshal(got[len(prefix):], &y) != nil {
			t.Fatalf("canonical(%s) = %s is not JSON", text, got)
		}
	})
}

func TestSigKeyReusesItsBuffer(t *testing.T) {
	args := []byte(`{"path": "/etc/hosts", "flags": {"z": 1, "a": [2, {"y": 3, "x": 4}]}}`)
	k1, buf := sigKey(nil, "read_file", args)
	k2, buf2 := sigKey(buf, "read_file", []byte(`{"flags":{"a":[2,{"x":4,"y":3}],"z":1},"path":"/etc/hosts"}`))
	if k1 != k2 || len(k1) != 16 {
		t.Errorf("the same arguments written two ways sign %x and %x", k1, k2)
	}
	if &buf[:1][0] != &buf2[:1][0] {
		t.Error("sigKey did not reuse its buffer")
	}
	if k3, _ := sigKey(buf2, "grep", args); k3 == k1 {
		t.Error("two tools sign the same arguments alike")
	}
	// Arguments whose keys are in order are signed in the buffer: the
	// key is the only allocation.
	ordered := []byte(`{"flags": {"a": [2, {"x": 4, "y": 3}], "z": 1}, "path": "/etc/hosts"}`)
	if k4, _ := sigKey(buf, "read_file", ordered); k4 != k1 {
		t.Errorf("ordered arguments sign %x, want %x", k4, k1)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, buf = sigKey(buf, "read_file", ordered) }); allocs > 1 {
		t.Errorf("sigKey allocates %v times with a buffer, want at most 1 (the key)", allocs)
	}
}

// endsLiteral reports whether ch ends a number, true, false or null.
func endsLiteral(ch byte) bool {
	switch ch {
	case ',', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// canonical accepts exactly what encoding/json's Valid accepts, and on
// what it accepts writes what the model writes.
func FuzzCanonicalValid(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, ` { "b" : [1, 2.5e-3, true, false, null, "x\u00e9\n"] , "a" : {} } `, `[]`, `""`, `0`, `-0.0E+1`,
		`01`, `1.`, `.5`, `-`, `1e`, `"\x"`, `"\u12"`, "\"a\tb\"", `{"a"}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{,}`,
		`tru`, `nul`, `truex`, `{} {}`, `"\ud800"`, "\"\xff\"", `[[[[]]]]`, `{"a":1 "b":2}`, ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := canonical(nil, b)
		if ok != json.Valid(b) {
			t.Fatalf("canonical(%q) ok=%v, json.Valid %v", b, ok, !ok)
		}
		if ok {
			if want := canonicalModel(b); !bytes.Equal(got, want) {
				t.Fatalf("canonical(%q) = %s, want %s", b, got, want)
			}
		}
	})
}

// Nesting deeper than encoding/json allows is refused as it refuses it.
func TestCanonicalDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		b := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		_, ok := canonical(nil, b)
		assert.Equal(t, json.Valid(b), ok, "depth %d", n)
	}
}

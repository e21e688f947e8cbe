package jsoncanon

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// canonicalModel is Append written plainly: each object's members
// canonicalised on their own, sorted stably by key, then joined.
func canonicalModel(b []byte) []byte {
	var v func(i int) ([]byte, int)
	v = func(i int) ([]byte, int) {
		i = SkipSpace(b, i)
		switch b[i] {
		case '{':
			var keys, vals [][]byte
			for i++; ; {
				i = SkipSpace(b, i)
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
				val, i = v(SkipSpace(b, i) + 1)
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
				i = SkipSpace(b, i)
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
		got, ok := Append(slices.Clone(prefix), []byte(text))
		if !ok {
			t.Fatalf("canonical refuses %s", text)
		}
		want := append(slices.Clone(prefix), canonicalModel([]byte(text))...)
		if !bytes.Equal(got, want) {
			t.Fatalf("Append(%s)\n got %s\nwant %s", text, got, want)
		}
		var x, y any
		if json.Unmarshal([]byte(text), &x) != nil || json.Unmarshal(got[len(prefix):], &y) != nil {
			t.Fatalf("Append(%s) = %s is not JSON", text, got)
		}
	})
}

// endsLiteral reports whether ch ends a number, true, false or null.
func endsLiteral(ch byte) bool {
	switch ch {
	case ',', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// Append and Valid accept exactly what encoding/json's Valid accepts,
// and on what it accepts Append writes what the model writes; Value
// finds where the value ends, with or without text after it.
func FuzzCanonicalValid(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, ` { "b" : [1, 2.5e-3, true, false, null, "x\u00e9\n"] , "a" : {} } `, `[]`, `""`, `0`, `-0.0E+1`,
		`01`, `1.`, `.5`, `-`, `1e`, `"\x"`, `"\u12"`, "\"a\tb\"", `{"a"}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{,}`,
		`tru`, `nul`, `truex`, `{} {}`, `"\ud800"`, "\"\xff\"", `[[[[]]]]`, `{"a":1 "b":2}`, ``, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := Append(nil, b)
		if ok != json.Valid(b) {
			t.Fatalf("Append(%q) ok=%v, json.Valid %v", b, ok, !ok)
		}
		if Valid(b) != ok {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, !ok, ok)
		}
		if ok {
			tail := append(slices.Clone(b), ` ,x`...)
			if end, vok := Value(tail, 0, MaxDepth); !vok || SkipSpace(tail, end) != len(b)+1 {
				t.Fatalf("Value(%q) = %d %v, want the end of the value before %d", tail, end, vok, len(b)+1)
			}
		}
		if ok {
			if want := canonicalModel(b); !bytes.Equal(got, want) {
				t.Fatalf("Append(%q) = %s, want %s", b, got, want)
			}
		}
	})
}

// Nesting deeper than encoding/json allows is refused as it refuses it.
func TestCanonicalDepth(t *testing.T) {
	for _, n := range []int{MaxDepth, MaxDepth + 1} {
		b := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		_, ok := Append(nil, b)
		assert.Equal(t, json.Valid(b), ok, "depth %d", n)
		assert.Equal(t, json.Valid(b), Valid(b), "depth %d", n)
		_, ok = Value(b, 0, n-1)
		assert.False(t, ok, "%d deep with room for %d", n, n-1)
	}
}

package schemadiff

import (
	"slices"
	"strings"
	"testing"
)

// FuzzCompare feeds Compare any pair of inputs: it must not panic, must
// answer the same twice, must list its losses sorted and without
// duplicates, must find nothing lost from an original that accepts
// anything, and nothing but the withdrawal itself lost to a compressed
// schema that accepts nothing.
func FuzzCompare(f *testing.F) {
	for _, tt := range hostile {
		f.Add([]byte(tt.orig), []byte(tt.comp))
	}
	f.Add([]byte(incident), []byte(`{}`))
	f.Add([]byte(`{`), []byte(`{}`))
	f.Add([]byte(`{}`), []byte("\xff\xfe"))
	f.Add([]byte(strings.Repeat(`{"items":`, 300)+`{}`+strings.Repeat(`}`, 300)), []byte(`{}`))
	f.Add([]byte(strings.Repeat(`[`, 100)), []byte(`true`))
	f.Add([]byte(`{"maximum":1e999999999,"multipleOf":1e-999999999}`), []byte(`{"maximum":-1e999999999,"multipleOf":3e-999999998}`))
	f.Add([]byte(`{"minLength":123456789012345678901234567890}`), []byte(`{"minLength":1.5e2}`))
	f.Add([]byte(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`), []byte(`{"$ref":"#"}`))
	f.Add([]byte(`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"string"}]}},"$ref":"#/$defs/a"}`), []byte(`{"anyOf":[{"$ref":"#"}]}`))
	f.Add([]byte(`{"$ref":"#/$defs/%zz"}`), []byte(`{"$ref":"#/~2"}`))
	f.Add([]byte(`{"$id":"::bad","$ref":"x#y"}`), []byte(`{"$anchor":"y","$ref":"#y"}`))
	f.Add([]byte(`{"patternProperties":{"(":{}},"pattern":"[[:alpha:]"}`), []byte(`{"patternProperties":{"(?<=a)b":{}}}`))
	f.Add([]byte(`{"oneOf":[{"unevaluatedProperties":false},{"if":{},"then":{"unevaluatedItems":false}}],"dependentSchemas":{"a":{"contains":{}}}}`), []byte(`{"not":{"not":{}}}`))

	f.Fuzz(func(t *testing.T, orig, comp []byte) {
		got, err := Compare(orig, comp)
		again, err2 := Compare(orig, comp)
		if (err == nil) != (err2 == nil) || !slices.Equal(got, again) {
			t.Fatalf("two answers: %v %v / %v %v", got, err, again, err2)
		}
		if err != nil {
			return
		}
		for i, l := range got {
			if l.Kind == "" || l.String() == "" {
				t.Fatalf("empty loss %#v", l)
			}
			if i > 0 && !(lossLess(got[i-1], l)) {
				t.Fatalf("losses out of order or repeated: %v", got)
			}
		}
		if open, _ := Compare([]byte(`true`), comp); !onlyWithdrawal(open) {
			t.Fatalf("an original accepting anything lost %v", open)
		}
		if closed, _ := Compare(orig, []byte(`false`)); !onlyWithdrawal(closed) {
			t.Fatalf("a compression accepting nothing lost %v", closed)
		}
		if self, _ := Compare(orig, orig); len(self) > 0 {
			t.Fatalf("a schema lost %v against itself", self)
		}
	})
}

func lossLess(a, b Loss) bool {
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.What < b.What
}

// onlyWithdrawal says whether the losses are at most the report that the
// compressed schema accepts nothing, or a comparison cut short.
func onlyWithdrawal(ls []Loss) bool {
	for _, l := range ls {
		if l.Kind != "limit" && (l.Kind != "false" || l.Path != "") {
			return false
		}
	}
	return true
}

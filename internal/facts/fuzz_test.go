package facts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExtract checks the promises of Extract on any input: no more than
// MaxFacts facts, none empty or longer than MaxLen, each string once, in
// the order of their offsets, the same facts on a second run; for a
// plain text, each fact the span at its offset, and carried by the text.
func FuzzExtract(f *testing.F) {
	for _, s := range exampleTexts {
		f.Add(s)
	}
	f.Add(`{"a": [1, 22, true, {"id": "x y"}], "error": "` + strings.Repeat("e ", 150) + `"}`)
	f.Add("[\"{\\\"k\\\": \\\"v\\\"}\"]")
	f.Fuzz(func(t *testing.T, in string) {
		fs := Extract(in)
		if len(fs) > MaxFacts {
			t.Fatalf("%d facts", len(fs))
		}
		seen := map[string]bool{}
		for i, f := range fs {
			if f.Text == "" || len(f.Text) > MaxLen || f.Kind == 0 || f.Kind >= numKinds {
				t.Fatalf("bad fact %+v", f)
			}
			if seen[f.Text] {
				t.Fatalf("fact %q twice", f.Text)
			}
			seen[f.Text] = true
			if i > 0 && f.Offset < fs[i-1].Offset {
				t.Fatalf("facts out of order: %+v before %+v", fs[i-1], f)
			}
			if f.Offset < 0 || f.Offset > len(in) {
				t.Fatalf("offset out of the text: %+v", f)
			}
			if utf8.ValidString(in) && !utf8.ValidString(f.Text) {
				t.Fatalf("fact %q of valid UTF-8 is not", f.Text)
			}
		}
		if again := Extract(in); len(again) != len(fs) {
			t.Fatalf("a second run gives %d facts, not %d", len(again), len(fs))
		}
		if looksJSON(in) {
			return
		}
		c := NewCarrier(in)
		for _, f := range fs {
			if !strings.HasPrefix(in[f.Offset:], f.Text) {
				t.Fatalf("%+v is not the text at its offset", f)
			}
			if !c.Carries(f) {
				t.Fatalf("the text does not carry its own fact %+v", f)
			}
		}
	})
}

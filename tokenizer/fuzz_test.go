package tokenizer_test

import (
	"testing"
)

// FuzzEncodeDecode checks, for any bytes, valid UTF-8 or not, that Decode
// gives back what Encode took, that Count agrees with Encode, and that
// every id is a ranked token.
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range corpus(f) {
		f.Add(s)
	}
	for _, s := range invalidUTF8 {
		f.Add(s)
	}
	sizes := map[string]int{"o200k_base": 199998, "cl100k_base": 100256}
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range encodings {
			ids := e.Encode(s)
			for _, id := range ids {
				if id < 0 || id >= sizes[e.Name()] {
					t.Fatalf("%s: Encode(%q) gave id %d", e.Name(), s, id)
				}
			}
			got, err := e.Decode(ids)
			if err != nil || got != s {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, %v", e.Name(), s, got, err)
			}
			if n := e.Count([]byte(s)); n != len(ids) {
				t.Fatalf("%s: Count(%q) = %d, len(Encode) = %d", e.Name(), s, n, len(ids))
			}
			if len(s) > 0 && (len(ids) == 0 || len(ids) > len(s)) {
				t.Fatalf("%s: %d tokens for %d bytes", e.Name(), len(ids), len(s))
			}
		}
	})
}

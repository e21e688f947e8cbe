package tokenizer

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestMergeSmallEqualsLarge checks that the two merge strategies give the
// same parts, on pieces of real text and of random bytes.
func TestMergeSmallEqualsLarge(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	words := []string{"internationalization", "ThisIsCamel", "   ", "=====", "0123456789", "naïveté", "字字字字", "🙂🙂🙂", "aaaaaaaaaaaaaaa", "\n\n\n\n"}
	var shared mergeScratch
	for _, e := range []*Encoding{O200k(), Cl100k()} {
		v := e.load()
		for k := 0; k < 3000; k++ {
			var p []byte
			if k%2 == 0 {
				for len(p) < 2+r.Intn(smallPiece-2) {
					p = append(p, words[r.Intn(len(words))]...)
				}
				if len(p) > smallPiece {
					p = p[:smallPiece]
				}
			} else {
				p = make([]byte, 2+r.Intn(smallPiece-1))
				alpha := "abcdeABC =\n\xc3\xa9\xf0\x9f"
				for i := range p {
					p[i] = alpha[r.Intn(len(alpha))]
				}
			}
			var buf [smallPiece + 1]part
			parts := v.mergeSmall(p, &buf)
			var small []int32
			for _, pt := range parts {
				small = append(small, pt.start)
			}
			large, largeToks := v.mergeLarge(p, nil)
			if !reflect.DeepEqual(small, large) {
				t.Fatalf("%s %q: mergeSmall %v, mergeLarge %v", e.Name(), p, small, large)
			}
			// Scratch left over from other pieces changes nothing.
			if reused, _ := v.mergeLarge(p, &shared); !reflect.DeepEqual(small, reused) {
				t.Fatalf("%s %q: mergeSmall %v, mergeLarge with used scratch %v", e.Name(), p, small, reused)
			}
			for i := 0; i+1 < len(small); i++ {
				r, ok := v.rank(p[small[i]:small[i+1]])
				if !ok || r != parts[i].tok || r != largeToks[i] {
					t.Fatalf("%s %q: part %q has rank %d, %v; merges say %d and %d", e.Name(), p, p[small[i]:small[i+1]], r, ok, parts[i].tok, largeToks[i])
				}
			}
		}
	}
}

// TestClasses checks the class of every rune against package unicode.
func TestClasses(t *testing.T) {
	classOnce.Do(buildClasses)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r < 0xE000 {
			continue // surrogates are not runes of valid UTF-8
		}
		var want uint8
		if unicode.IsLetter(r) {
			want |= cLetter
		}
		if unicode.IsNumber(r) {
			want |= cNumber
		}
		if unicode.IsSpace(r) {
			want |= cSpace
		}
		if r == '\r' || r == '\n' {
			want |= cNewline
		}
		if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
			want |= cUpper
		}
		if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
			want |= cLower
		}
		var b [utf8.UTFMax]byte
		n := utf8.EncodeRune(b[:], r)
		if got, size := runeAt(b[:n], 0); got != want || size != n {
			t.Fatalf("runeAt(%U) = %08b, %d; want %08b, %d", r, got, size, want, n)
		}
	}
	// A byte that does not start valid UTF-8 is one rune classed as U+FFFD.
	for _, s := range []string{"\xff", "\x80", "\xc3", "\xe2\x82", "\xed\xa0\x80"} {
		if c, n := runeAt([]byte(s), 0); c != 0 || n != 1 {
			t.Errorf("runeAt(%q) = %08b, %d; want 0, 1", s, c, n)
		}
	}
}

// TestFolding checks that foldedAt maps a rune to an ASCII letter exactly
// when Unicode simple case folding does.
func TestFolding(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r < 0xE000 {
			continue
		}
		var want rune
		if r < utf8.RuneSelf {
			want = unicode.ToLower(r)
		} else {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if 'a' <= f && f <= 'z' {
					want = f
				}
			}
		}
		var b [utf8.UTFMax]byte
		n := utf8.EncodeRune(b[:], r)
		got, size := foldedAt(b[:n], 0)
		if got != want || want != 0 && size != n {
			t.Fatalf("foldedAt(%U) = %q, %d; want %q, %d", r, got, size, want, n)
		}
	}
}

// TestSplitCovers checks that the pieces of any bytes are non-empty, cover
// the input in order, and end on rune boundaries.
func TestSplitCovers(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	alpha := []string{"a", "Z", " ", "\n", "\r", "'", "s", "1", "!", "/", "\u00e9", "\u0301", "\u3000", "字", "🙂", "\xff", "\xc3"}
	for _, e := range []*Encoding{O200k(), Cl100k()} {
		e.load()
		for k := 0; k < 5000; k++ {
			var b []byte
			for n := r.Intn(30); n > 0; n-- {
				b = append(b, alpha[r.Intn(len(alpha))]...)
			}
			for i := 0; i < len(b); {
				j := e.split(b, i)
				if j <= i || j > len(b) {
					t.Fatalf("%s %q: piece at %d ends at %d", e.Name(), b, i, j)
				}
				if j < len(b) && utf8.Valid(b) && !utf8.RuneStart(b[j]) {
					t.Fatalf("%s %q: piece [%d,%d) ends inside a rune", e.Name(), b, i, j)
				}
				i = j
			}
		}
	}
}

// TestCacheCollisions counts pieces that share a cache slot, in turns, so
// that each evicts the other, and checks every count and id against the
// reference path without a cache.
func TestCacheCollisions(t *testing.T) {
	e := O200k()
	v := e.load()
	seen := map[uint64]string{}
	var pairs [][2]string
	for k := 0; len(pairs) < 50; k++ {
		p := " word" + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676%26))
		slot := hashBytes([]byte(p)) >> (64 - cacheBits)
		if q, ok := seen[slot]; ok {
			pairs = append(pairs, [2]string{q, p})
			delete(seen, slot)
			continue
		}
		seen[slot] = p
	}
	c := new(pieceCache)
	for round := 0; round < 3; round++ {
		for _, pr := range pairs {
			for _, p := range pr {
				b := []byte(p)
				want := uncachedIDs(v, b)
				if n := v.countCached(c, b); n != len(want) {
					t.Fatalf("%q: countCached %d, want %d", p, n, len(want))
				}
				if ids := v.appendCached(c, nil, b); !reflect.DeepEqual(ids, want) {
					t.Fatalf("%q: appendCached %v, want %v", p, ids, want)
				}
			}
		}
	}
}

// uncachedIDs encodes one piece without the cache.
func uncachedIDs(v *vocab, p []byte) []int {
	if r, ok := v.rank(p); ok {
		return []int{int(r)}
	}
	var ids []int
	starts, _ := v.mergeLarge(p, nil)
	for k := 0; k+1 < len(starts); k++ {
		r, _ := v.rank(p[starts[k]:starts[k+1]])
		ids = append(ids, int(r))
	}
	return ids
}

// TestCountThenEncode counts texts on a fresh encoding before encoding
// them, so that Encode meets pieces that Count put in the cache.
func TestCountThenEncode(t *testing.T) {
	fresh := func() *Encoding {
		return &Encoding{name: o200k.name, ranks: o200k.ranks, size: o200k.size, special: o200k.special, split: o200k.split}
	}
	texts := []string{"hello world", "The quick brown fox. It's here!", `{"role":"user","content":"hi"}`, "naïve café 字字 🙂"}
	counted, plain := fresh(), fresh()
	for _, s := range texts {
		counted.Count([]byte(s))
	}
	for _, s := range texts {
		if got, want := counted.Encode(s), plain.Encode(s); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: after Count, Encode = %v; without, %v", s, got, want)
		}
	}
}

// TestEmbeddedData checks the embedded rank files against the hashes that
// data/SOURCES.md gives, and that each loads whole.
func TestEmbeddedData(t *testing.T) {
	want := map[*Encoding]string{
		o200k:  "8eb31bb21ae3636e7729b77d91bcfce1ab309af753a0ea6ae9683a51957611f7",
		cl100k: "d5fcb4f45ff5d84182049dfede1e25806c6d59b2608f576b781f91d227fbee03",
	}
	for e, sum := range want {
		if got := fmt.Sprintf("%x", sha256.Sum256([]byte(e.ranks))); got != sum {
			t.Errorf("%s: embedded data has sha256 %s, SOURCES.md says %s", e.name, got, sum)
		}
		v := e.load()
		if n := len(v.offs) - 1; n != e.size {
			t.Errorf("%s: %d tokens loaded, want %d", e.name, n, e.size)
		}
		for r := 0; r < e.size; r++ {
			if got, ok := v.rank(v.token(r)); !ok || int(got) != r {
				t.Fatalf("%s: token %d looks up as %d, %v", e.name, r, got, ok)
			}
		}
	}
}

func TestLoadRejectsBadData(t *testing.T) {
	if _, err := loadVocab("not gzip", 10); err == nil {
		t.Error("loadVocab accepted data that is not gzip")
	}
	if _, err := loadVocab(o200k.ranks, o200k.size+1); err == nil {
		t.Error("loadVocab accepted a token count that does not match")
	}
}

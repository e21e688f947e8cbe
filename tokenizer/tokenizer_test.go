package tokenizer_test

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard/tokenizer"
)

var encodings = []*tokenizer.Encoding{tokenizer.O200k(), tokenizer.Cl100k()}

// counter is the shape of the core's token counter.
type counter interface{ Count(b []byte) int }

var _ counter = tokenizer.O200k()

func corpus(t testing.TB) []string {
	t.Helper()
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []struct{ Name, Text string }
	if err := json.Unmarshal(raw, &cs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
	}
	return out
}

// invalidUTF8 holds texts that are not valid UTF-8.
var invalidUTF8 = []string{
	"\xff", "\x80abc", "abc\xc3", "\xe2\x82", "a\xffb\xfec", "\xed\xa0\x80", // a surrogate
	"\xf4\x90\x80\x80", " \xff\xff\xff ", "it'\xff", "12\x8034", "\n\xc0\n",
	strings.Repeat("\xff", 100), "caf\xe9",
}

func TestRoundTrip(t *testing.T) {
	texts := append(corpus(t), invalidUTF8...)
	var all []byte
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
		texts = append(texts, string([]byte{byte(c)}))
	}
	texts = append(texts, string(all), "")
	for _, e := range encodings {
		for _, s := range texts {
			ids := e.Encode(s)
			got, err := e.Decode(ids)
			if err != nil || got != s {
				t.Errorf("%s: Decode(Encode(%q)) = %q, %v", e.Name(), s, got, err)
			}
			if n := e.Count([]byte(s)); n != len(ids) {
				t.Errorf("%s: Count(%q) = %d, len(Encode) = %d", e.Name(), s, n, len(ids))
			}
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, e := range encodings {
		if n := e.Count(nil); n != 0 {
			t.Errorf("%s: Count(nil) = %d", e.Name(), n)
		}
		if ids := e.Encode(""); len(ids) != 0 {
			t.Errorf("%s: Encode(\"\") = %v", e.Name(), ids)
		}
		if s, err := e.Decode(nil); s != "" || err != nil {
			t.Errorf("%s: Decode(nil) = %q, %v", e.Name(), s, err)
		}
	}
}

func TestNamesAndSingletons(t *testing.T) {
	if tokenizer.O200k() != tokenizer.O200k() || tokenizer.Cl100k() != tokenizer.Cl100k() {
		t.Error("O200k or Cl100k returned two different encodings")
	}
	if got := tokenizer.O200k().Name(); got != "o200k_base" {
		t.Errorf("O200k().Name() = %q", got)
	}
	if got := tokenizer.Cl100k().Name(); got != "cl100k_base" {
		t.Errorf("Cl100k().Name() = %q", got)
	}
}

var specials = map[string]map[int]string{
	"o200k_base":  {199999: "<|endoftext|>", 200018: "<|endofprompt|>"},
	"cl100k_base": {100257: "<|endoftext|>", 100258: "<|fim_prefix|>", 100259: "<|fim_middle|>", 100260: "<|fim_suffix|>", 100276: "<|endofprompt|>"},
}

func TestSpecialTokens(t *testing.T) {
	for _, e := range encodings {
		for id, text := range specials[e.Name()] {
			got, err := e.Decode([]int{id})
			if err != nil || got != text {
				t.Errorf("%s: Decode(%d) = %q, %v; want %q", e.Name(), id, got, err, text)
			}
			// Spelled in text, a special token is ordinary text.
			ids := e.Encode(text)
			if len(ids) < 2 {
				t.Errorf("%s: Encode(%q) = %v, want ordinary tokens", e.Name(), text, ids)
			}
			for _, x := range ids {
				if _, special := specials[e.Name()][x]; special {
					t.Errorf("%s: Encode(%q) = %v holds a special token", e.Name(), text, ids)
				}
			}
		}
	}
}

func TestDecodeUnknown(t *testing.T) {
	unknown := map[string][]int{
		"o200k_base":  {-1, 199998, 200000, 200017, 200019, 1 << 40},
		"cl100k_base": {-1, 100256, 100261, 100275, 100277, 199999},
	}
	for _, e := range encodings {
		for _, id := range unknown[e.Name()] {
			got, err := e.Decode([]int{1, id, 2})
			var te *tokenizer.TokenError
			if !errors.As(err, &te) || te.ID != id || te.Encoding != e.Name() {
				t.Errorf("%s: Decode(%d): err = %v, want a *TokenError naming it", e.Name(), id, err)
			}
			if !errors.Is(err, tokenizer.ErrUnknownToken) {
				t.Errorf("%s: Decode(%d): %v does not match ErrUnknownToken", e.Name(), id, err)
			}
			if got != "" {
				t.Errorf("%s: Decode(%d) returned text %q with its error", e.Name(), id, got)
			}
		}
		// The last ranked token and the first byte still decode.
		if _, err := e.Decode([]int{0}); err != nil {
			t.Errorf("%s: Decode(0): %v", e.Name(), err)
		}
	}
	if _, err := tokenizer.O200k().Decode([]int{199997}); err != nil {
		t.Errorf("o200k_base: Decode(199997): %v", err)
	}
	if _, err := tokenizer.Cl100k().Decode([]int{100255}); err != nil {
		t.Errorf("cl100k_base: Decode(100255): %v", err)
	}
}

func TestZeroEncodingPanics(t *testing.T) {
	for name, call := range map[string]func(e *tokenizer.Encoding){
		"Count":  func(e *tokenizer.Encoding) { e.Count([]byte("x")) },
		"Encode": func(e *tokenizer.Encoding) { e.Encode("x") },
		"Decode": func(e *tokenizer.Encoding) { e.Decode([]int{1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a zero Encoding did not panic", name)
				}
			}()
			call(new(tokenizer.Encoding))
		}()
	}
}

// TestConcurrent runs Count, Encode and Decode from many goroutines at
// once, before and after the encodings have loaded, and checks each answer
// against one computed alone.
func TestConcurrent(t *testing.T) {
	texts := append(corpus(t), invalidUTF8...)
	want := map[string][][]int{}
	for _, e := range encodings {
		for _, s := range texts {
			want[e.Name()] = append(want[e.Name()], e.Encode(s))
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			for k := 0; k < 200; k++ {
				e := encodings[r.Intn(len(encodings))]
				i := r.Intn(len(texts))
				w := want[e.Name()][i]
				if n := e.Count([]byte(texts[i])); n != len(w) {
					t.Errorf("%s: concurrent Count = %d, want %d", e.Name(), n, len(w))
				}
				if ids := e.Encode(texts[i]); !reflect.DeepEqual(ids, w) && len(w) > 0 {
					t.Errorf("%s: concurrent Encode(%q) = %v, want %v", e.Name(), texts[i], ids, w)
				}
				if s, err := e.Decode(w); err != nil || s != texts[i] {
					t.Errorf("%s: concurrent Decode = %q, %v", e.Name(), s, err)
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestLongPieces checks texts made of one piece of 64 KiB, which take
// the heap merge, against the same pieces cut into shorter runs that
// encode alike.
func TestLongPieces(t *testing.T) {
	e := tokenizer.O200k()
	for _, unit := range []string{"a", "=", " ", "ab", "🙂"} {
		long := strings.Repeat(unit, 1<<16/len(unit))
		ids := e.Encode(long)
		if s, err := e.Decode(ids); err != nil || s != long {
			t.Fatalf("%q x %d: round trip failed", unit, len(long)/len(unit))
		}
		if n := e.Count([]byte(long)); n != len(ids) {
			t.Errorf("%q: Count %d, len(Encode) %d", unit, n, len(ids))
		}
		if len(ids) >= len(long) && len(unit) == 1 {
			t.Errorf("%q: %d tokens for %d bytes: nothing merged", unit, len(ids), len(long))
		}
	}
}

// TestCountAllocs checks that Count, once warm, allocates nothing, on
// short messages and on a piece long enough to take the heap merge.
func TestCountAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	texts := [][]byte{
		[]byte(`{"role":"assistant","content":"The file has 3 functions; main() calls parse()."}`),
		[]byte(strings.Repeat("=", 500)),
	}
	for _, e := range encodings {
		for _, b := range texts {
			e.Count(b)
			if n := testing.AllocsPerRun(100, func() { e.Count(b) }); n != 0 {
				t.Errorf("%s: Count(%.20q...) allocates %.0f times a call", e.Name(), b, n)
			}
		}
	}
}

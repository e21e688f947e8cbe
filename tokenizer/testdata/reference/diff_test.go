package main

import (
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pruneguard/pruneguard/tokenizer"
)

var (
	refsOnce sync.Once
	refs     map[string]*reference
)

func loadRefs(t testing.TB) map[string]*reference {
	refsOnce.Do(func() {
		refs = map[string]*reference{}
		for name := range patterns {
			r, err := newReference(name)
			if err != nil {
				panic(err)
			}
			refs[name] = r
		}
	})
	return refs
}

var encodings = []*tokenizer.Encoding{tokenizer.O200k(), tokenizer.Cl100k()}

// check compares one valid UTF-8 text with the reference.
func check(t *testing.T, text string) {
	t.Helper()
	for _, e := range encodings {
		want := loadRefs(t)[e.Name()].encode(text)
		got := e.Encode(text)
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%s %q:\n got %v\nwant %v\nreference pieces %q", e.Name(), text, got, want, loadRefs(t)[e.Name()].pieces(text))
		}
		if n := e.Count([]byte(text)); n != len(want) {
			t.Fatalf("%s %q: Count %d, reference %d", e.Name(), text, n, len(want))
		}
	}
}

// TestRandom compares many short random texts over the alphabet.
func TestRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	n := 40000
	if testing.Short() || raceEnabled {
		n = 4000
	}
	for i := 0; i < n; i++ {
		check(t, randomText(r))
	}
}

// TestLongRuns compares texts made of long runs of one kind of rune, the
// inputs where a byte pair merge is long and the pre-tokenizer's greedy
// runs give back the most.
func TestLongRuns(t *testing.T) {
	for _, unit := range []string{" ", "\n", " \n", "\t ", "a", "A", "aB", "0", "=", "'s", "🙂", "字", "\u0301", "\u00a0", "/", "!/\n", "ab12"} {
		for _, n := range []int{1, 2, 3, 7, 64, 65, 1000} {
			s := ""
			for i := 0; i < n; i++ {
				s += unit
			}
			check(t, s)
			check(t, "x"+s+"x")
			check(t, " "+s+"\n")
		}
	}
}

func FuzzDiff(f *testing.F) {
	raw, err := os.ReadFile("../corpus.json")
	if err != nil {
		f.Fatal(err)
	}
	var corpus []struct{ Name, Text string }
	if err := json.Unmarshal(raw, &corpus); err != nil {
		f.Fatal(err)
	}
	for _, c := range corpus {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			t.Skip("the reference reads runes; invalid UTF-8 is checked by the package's own fuzz test")
		}
		check(t, text)
	})
}

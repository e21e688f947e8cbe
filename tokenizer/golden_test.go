package tokenizer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// testdata/golden.jsonl holds, for every case below, the token count, ids
// and pre-tokenizer pieces that an independent implementation produced
// (testdata/reference: github.com/pkoukk/tiktoken-go, which runs the
// encodings' regular expressions with a backtracking engine). Regenerate
// it there with `go run . golden`.
//
//	corpus/NAME      a text of testdata/corpus.json
//	transcript/PATH  the bytes of a recorded transcript (raw JSON)
//	strings/PATH     every JSON string of that transcript, in order

const transcriptsDir = "../testdata/transcripts"

type goldenCase struct {
	name  string
	texts []string
}

func loadGoldenCases(t testing.TB) []goldenCase {
	t.Helper()
	var corpus []struct{ Name, Text string }
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &corpus); err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, c := range corpus {
		cases = append(cases, goldenCase{"corpus/" + c.Name, []string{c.Text}})
	}
	var files []string
	err = filepath.WalkDir(transcriptsDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts under %s", transcriptsDir)
	}
	sort.Strings(files)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(transcriptsDir, p)
		rel = filepath.ToSlash(rel)
		strs, err := jsonStrings(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cases = append(cases,
			goldenCase{"transcript/" + rel, []string{string(b)}},
			goldenCase{"strings/" + rel, strs})
	}
	return cases
}

func jsonStrings(b []byte) ([]string, error) {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if s, ok := tok.(string); ok {
			out = append(out, s)
		}
	}
}

type goldenLine struct {
	Case   string                  `json:"case"`
	SHA256 string                  `json:"sha256"`
	Enc    map[string]goldenResult `json:"encodings"`
}

type goldenResult struct {
	Tokens    int    `json:"tokens"`
	Counts    []int  `json:"counts"`
	IDs       []int  `json:"ids"`
	Pieces    []int  `json:"pieces"`
	IDsSHA    string `json:"ids_sha256"`
	PiecesSHA string `json:"pieces_sha256"`
}

func digest(lists [][]int) string {
	h := sha256.New()
	var w [4]byte
	for _, l := range lists {
		for _, v := range l {
			binary.LittleEndian.PutUint32(w[:], uint32(v))
			h.Write(w[:])
		}
		h.Write([]byte{0xff, 0xff, 0xff, 0xff})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func textsDigest(texts []string) string {
	h := sha256.New()
	for _, t := range texts {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], uint64(len(t)))
		h.Write(w[:])
		h.Write([]byte(t))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pieceLengths returns the byte lengths of the pre-tokenizer's pieces.
func pieceLengths(e *Encoding, text string) []int {
	e.load()
	b := []byte(text)
	var out []int
	for i := 0; i < len(b); {
		j := e.split(b, i)
		out = append(out, j-i)
		i = j
	}
	return out
}

func readGolden(t *testing.T) map[string]goldenLine {
	t.Helper()
	f, err := os.Open("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]goldenLine{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var g goldenLine
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		out[g.Case] = g
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden checks token ids, counts and pieces against the reference on
// the corpus and on every recorded transcript, raw and as strings.
func TestGolden(t *testing.T) {
	golden := readGolden(t)
	cases := loadGoldenCases(t)
	if len(golden) != len(cases) {
		t.Errorf("golden.jsonl has %d cases, the inputs make %d: regenerate it", len(golden), len(cases))
	}
	encs := []*Encoding{O200k(), Cl100k()}
	total := map[string]int{}
	for _, c := range cases {
		g, ok := golden[c.name]
		if !ok {
			t.Errorf("%s: not in golden.jsonl", c.name)
			continue
		}
		if got := textsDigest(c.texts); got != g.SHA256 {
			t.Errorf("%s: input changed since golden.jsonl was made", c.name)
			continue
		}
		for _, e := range encs {
			want := g.Enc[e.Name()]
			var ids, pieces [][]int
			var counts []int
			tokens := 0
			for _, text := range c.texts {
				got := e.Encode(text)
				if n := e.Count([]byte(text)); n != len(got) {
					t.Errorf("%s %s: Count %d, len(Encode) %d", c.name, e.Name(), n, len(got))
				}
				ids = append(ids, got)
				pieces = append(pieces, pieceLengths(e, text))
				counts = append(counts, len(got))
				tokens += len(got)
			}
			total[e.Name()] += tokens
			if tokens != want.Tokens {
				t.Errorf("%s %s: %d tokens, reference %d", c.name, e.Name(), tokens, want.Tokens)
			}
			if want.Counts != nil && !reflect.DeepEqual(counts, want.Counts) {
				for k := range counts {
					if counts[k] != want.Counts[k] {
						t.Errorf("%s %s: string %d %q: %d tokens, reference %d", c.name, e.Name(), k, c.texts[k], counts[k], want.Counts[k])
						break
					}
				}
			}
			if want.IDs != nil {
				if !reflect.DeepEqual(ids[0], want.IDs) {
					t.Errorf("%s %s: ids\n got %v\nwant %v", c.name, e.Name(), ids[0], want.IDs)
				}
				if !reflect.DeepEqual(pieces[0], want.Pieces) {
					t.Errorf("%s %s: pieces\n got %v\nwant %v", c.name, e.Name(), pieces[0], want.Pieces)
				}
				continue
			}
			if digest(ids) != want.IDsSHA {
				t.Errorf("%s %s: ids differ from the reference", c.name, e.Name())
			}
			if digest(pieces) != want.PiecesSHA {
				t.Errorf("%s %s: pieces differ from the reference", c.name, e.Name())
			}
		}
	}
	t.Logf("%d cases; tokens: %v", len(cases), total)
}

package main

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
	"sort"
	"strings"
)

// The golden cases, built the same way by the tokenizer package's
// golden_test.go:
//
//	corpus/NAME      a text of ../corpus.json
//	transcript/PATH  the bytes of a file under testdata/transcripts
//	strings/PATH     every JSON string (keys too) of that file, in order
type goldenCase struct {
	name  string
	texts []string // one, but many for strings/
}

const (
	corpusFile     = "../corpus.json"
	transcriptsDir = "../../../testdata/transcripts"
	// fullIDs is the most tokens a corpus case records in full; past it,
	// and for transcript cases, ids and piece lengths are recorded by hash.
	fullIDs = 200
)

func loadCases() ([]goldenCase, error) {
	var corpus []struct{ Name, Text string }
	raw, err := os.ReadFile(corpusFile)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &corpus); err != nil {
		return nil, err
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
		return nil, err
	}
	sort.Strings(files)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(transcriptsDir, p)
		rel = filepath.ToSlash(rel)
		strs, err := jsonStrings(b)
		if err != nil {
			return nil, err
		}
		cases = append(cases,
			goldenCase{"transcript/" + rel, []string{string(b)}},
			goldenCase{"strings/" + rel, strs})
	}
	return cases, nil
}

// jsonStrings returns every string of the JSON values in b, keys included,
// in document order.
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

// A golden line records one case under each encoding.
type golden struct {
	Case   string            `json:"case"`
	SHA256 string            `json:"sha256"` // of the texts, to notice a changed input
	Enc    map[string]result `json:"encodings"`
}

type result struct {
	Tokens    int    `json:"tokens"`
	Counts    []int  `json:"counts,omitempty"` // per text, when there are several
	IDs       []int  `json:"ids,omitempty"`
	Pieces    []int  `json:"pieces,omitempty"` // byte lengths
	IDsSHA    string `json:"ids_sha256,omitempty"`
	PiecesSHA string `json:"pieces_sha256,omitempty"`
}

// digest hashes a list of lists of ints: each int as 4 bytes little
// endian, each list closed by 0xffffffff.
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

func refResult(ref *reference, c goldenCase) result {
	var res result
	var ids, pieces [][]int
	for _, t := range c.texts {
		e := ref.encode(t)
		var lens []int
		for _, p := range ref.pieces(t) {
			lens = append(lens, len(p))
		}
		ids = append(ids, e)
		pieces = append(pieces, lens)
		res.Tokens += len(e)
		if len(c.texts) > 1 {
			res.Counts = append(res.Counts, len(e))
		}
	}
	if strings.HasPrefix(c.name, "corpus/") && res.Tokens <= fullIDs {
		res.IDs, res.Pieces = ids[0], pieces[0]
	} else {
		res.IDsSHA, res.PiecesSHA = digest(ids), digest(pieces)
	}
	return res
}

func writeGolden(path string) error {
	cases, err := loadCases()
	if err != nil {
		return err
	}
	refs := map[string]*reference{}
	for name := range patterns {
		if refs[name], err = newReference(name); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, c := range cases {
		g := golden{Case: c.name, SHA256: textsDigest(c.texts), Enc: map[string]result{}}
		for name, ref := range refs {
			g.Enc[name] = refResult(ref, c)
		}
		line, _ := json.Marshal(g)
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

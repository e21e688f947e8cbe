package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// sourceHash pins each rank file to the SHA-256 that tiktoken itself
// checks before use (tiktoken_ext/openai_public.py, expected_hash).
var sourceHash = map[string]string{
	"o200k_base":  "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
	"cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

// readTiktoken returns the tokens of a .tiktoken file in rank order,
// after checking its hash and that the ranks run 0..n-1 without a gap.
func readTiktoken(name string) ([][]byte, error) {
	src, err := assets.Assets.ReadFile(name + ".tiktoken")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != sourceHash[name] {
		return nil, fmt.Errorf("%s: sha256 %s, want %s", name, got, sourceHash[name])
	}
	var toks [][]byte
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: bad line %q", name, sc.Text())
		}
		tok, err := base64.StdEncoding.DecodeString(f[0])
		if err != nil {
			return nil, err
		}
		rank, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, err
		}
		if rank != len(toks) {
			return nil, fmt.Errorf("%s: rank %d at line %d", name, rank, len(toks)+1)
		}
		toks = append(toks, tok)
	}
	return toks, sc.Err()
}

// packRanks writes the tokens in the format the tokenizer package embeds:
// gzip of uvarint(count) followed, in rank order, by uvarint(len) and the
// token's bytes.
func packRanks(toks [][]byte) []byte {
	var raw []byte
	raw = binary.AppendUvarint(raw, uint64(len(toks)))
	for _, t := range toks {
		raw = binary.AppendUvarint(raw, uint64(len(t)))
		raw = append(raw, t...)
	}
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	w.Write(raw)
	w.Close()
	return out.Bytes()
}

// writeRanks regenerates ../../data/<name>.bin.gz from the pinned files.
func writeRanks(dir string) error {
	for name := range sourceHash {
		toks, err := readTiktoken(name)
		if err != nil {
			return err
		}
		out := packRanks(toks)
		path := filepath.Join(dir, name+".bin.gz")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(out)
		fmt.Printf("%s: %d tokens, %d bytes, sha256 %x\n", path, len(toks), len(out), sum)
	}
	return nil
}

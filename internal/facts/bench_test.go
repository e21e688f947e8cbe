package facts

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// transcriptTexts returns the strings of the recorded transcripts, each
// a message's text, a call's arguments or a field of an envelope, as an
// agent runtime would hand them to Extract one at a time.
func transcriptTexts(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("../../testdata/transcripts/*/*")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no transcripts: %v", err)
	}
	var texts []string
	for _, name := range files {
		if strings.HasSuffix(name, ".md") {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		docs := [][]byte{data}
		if strings.HasSuffix(name, ".jsonl") {
			docs = bytes.Split(data, []byte("\n"))
		}
		for _, d := range docs {
			var v any
			if json.Unmarshal(d, &v) == nil {
				texts = appendStrings(texts, v)
			}
		}
	}
	return texts
}

func appendStrings(dst []string, v any) []string {
	switch v := v.(type) {
	case string:
		return append(dst, v)
	case []any:
		for _, x := range v {
			dst = appendStrings(dst, x)
		}
	case map[string]any:
		for _, x := range v {
			dst = appendStrings(dst, x)
		}
	}
	return dst
}

// BenchmarkExtract reports the speed of extraction over the recorded
// transcripts' texts, and over inputs made to be slow: a long line full
// of phrases, unclosed quotes, one long word, deep JSON.
func BenchmarkExtract(b *testing.B) {
	texts := transcriptTexts(b)
	total := 0
	for _, t := range texts {
		total += len(t)
	}
	b.Run("transcripts", func(b *testing.B) {
		b.SetBytes(int64(total))
		for b.Loop() {
			for _, t := range texts {
				Extract(t)
			}
		}
	})
	const size = 1 << 20
	for name, unit := range map[string]string{
		"phrases":  "error not found no x found failed ",
		"quotes":   `"` + strings.Repeat("a", 300),
		"word":     "x",
		"facts":    "INC-4711 /etc/x 1.2.3 $5 a@b.co ",
		"json":     `{"a":[`,
		"newlines": "error\n",
	} {
		in := strings.Repeat(unit, size/len(unit))
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				Extract(in)
			}
		})
	}
}

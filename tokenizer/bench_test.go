package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// benchInputs returns about 1 MiB of raw transcript JSON and about 1 MiB
// of the message text inside it, each made by repeating the transcripts.
func benchInputs(b *testing.B) (jsonData, text []byte) { return benchInputs2(b) }

func benchInputs2(b testing.TB) (jsonData, text []byte) {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join(transcriptsDir, "*", "*.json*"))
	sort.Strings(files)
	if len(files) == 0 {
		b.Fatal("no transcripts")
	}
	var js, tx bytes.Buffer
	for js.Len() < 1<<20 || tx.Len() < 1<<20 {
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			js.Write(raw)
			strs, err := jsonStrings(raw)
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range strs {
				tx.WriteString(s)
				tx.WriteByte('\n')
			}
		}
	}
	return js.Bytes()[:1<<20], tx.Bytes()[:1<<20]
}

func BenchmarkCount(b *testing.B) {
	js, tx := benchInputs(b)
	for _, e := range []*Encoding{O200k(), Cl100k()} {
		e.load()
		for _, in := range []struct {
			name string
			data []byte
		}{{"json", js}, {"text", tx}} {
			b.Run(e.Name()+"/"+in.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					e.Count(in.data)
				}
			})
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	_, tx := benchInputs(b)
	s := string(tx)
	e := O200k()
	e.load()
	b.ResetTimer()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Encode(s)
	}
}

// BenchmarkLoad measures what the first use of an encoding costs.
func BenchmarkLoad(b *testing.B) {
	classOnce.Do(buildClasses)
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := loadVocab(o200k.ranks, o200k.size); err != nil {
			b.Fatal(err)
		}
	}
}

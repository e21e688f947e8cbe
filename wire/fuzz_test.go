package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// maxSeed caps the size of transcript seeds so that fuzzing keeps a useful
// exec rate; the larger transcripts are covered by TestTranscripts.
const maxSeed = 128 << 10

func dialectIndex(d Dialect) uint8 {
	for i, x := range Dialects {
		if x == d {
			return uint8(i)
		}
	}
	return 0
}

// FuzzRead checks that reading never panics, that errors are worded as
// "wire: ...", and that whatever reads also validates, writes back
// JSON-equal, and survives stubbing and removal. Plain `go test` runs the
// seeds only.
func FuzzRead(f *testing.F) {
	for _, c := range ruleCases {
		f.Add(dialectIndex(c.d), []byte(c.body))
	}
	for _, name := range transcriptFiles(f) {
		file, err := os.ReadFile(filepath.Join(transcriptDir, name))
		if err != nil {
			f.Fatal(err)
		}
		body, d, err := Unwrap(file, name)
		if err != nil {
			f.Fatal(err)
		}
		if len(body) <= maxSeed {
			f.Add(dialectIndex(d), body)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		d := Dialects[int(k)%len(Dialects)]
		if got, err := Detect(data); err != nil {
			if !strings.HasPrefix(err.Error(), "wire: detect: ") {
				t.Fatalf("Detect error %q lacks the prefix", err)
			}
		} else if _, ok := got.messagesKey(); !ok {
			t.Fatalf("Detect returned unknown dialect %q", got)
		}
		b, err := Read(data, d)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "wire: "+string(d)+": ") {
				t.Fatalf("Read error %q lacks the prefix", err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("Read error %q is not one line", err)
			}
			return
		}
		for _, v := range b.Validate() {
			if v.Rule == "" || v.Message == "" || v.Index < 0 || v.Index >= max(len(b.Messages), 1) {
				t.Fatalf("bad violation %+v for %d messages", v, len(b.Messages))
			}
		}
		out, err := b.Marshal()
		if err != nil || string(out) != string(data) {
			t.Fatalf("untouched Marshal differs: %v", err)
		}
		b.dirty = true
		out, err = b.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		var x, y any
		if err := json.Unmarshal(data, &x); err != nil {
			t.Fatalf("input read but does not unmarshal: %v", err)
		}
		if err := json.Unmarshal(out, &y); err != nil {
			t.Fatalf("rewritten body is not JSON: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("rewritten body differs:\n%s\n%s", data, out)
		}
		for i := range b.Messages {
			if len(b.Messages[i].Results) == 0 {
				continue
			}
			want := append([]string(nil), b.Messages[i].Results...)
			if err := b.Stub(i, "[pruned]"); errors.Is(err, ErrUnstubbable) {
				continue // a screenshot or a tool list: nothing text can replace
			} else if err != nil {
				t.Fatalf("Stub(%d): %v", i, err)
			}
			if got := b.Messages[i].Results; !reflect.DeepEqual(got, want) {
				t.Fatalf("Stub(%d) changed results %v -> %v", i, want, got)
			}
		}
		if len(b.Messages) > 0 {
			if err := b.Remove([]int{0}); err != nil {
				t.Fatalf("Remove: %v", err)
			}
		}
		out, err = b.Marshal()
		if err != nil {
			t.Fatalf("Marshal after edits: %v", err)
		}
		b2, err := Read(out, d)
		if err != nil {
			t.Fatalf("edited body does not read back: %v\n%s", err, out)
		}
		if len(b2.Messages) != len(b.Messages) {
			t.Fatalf("edited body has %d messages, want %d", len(b2.Messages), len(b.Messages))
		}
		b2.Validate()
	})
}

// FuzzUnwrap checks that unwrapping arbitrary files never panics and that
// what it returns reads as the dialect it names.
func FuzzUnwrap(f *testing.F) {
	for _, name := range transcriptFiles(f) {
		file, err := os.ReadFile(filepath.Join(transcriptDir, name))
		if err != nil {
			f.Fatal(err)
		}
		if len(file) <= maxSeed {
			f.Add(file, strings.HasSuffix(name, ".jsonl"))
		}
	}
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"+
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":"a"}}`+"\n"+
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"b"}]}}`), true)
	f.Fuzz(func(t *testing.T, file []byte, jsonl bool) {
		name := "x.json"
		if jsonl {
			name = "x.jsonl"
		}
		body, d, err := Unwrap(file, name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "wire: unwrap "+name+": ") {
				t.Fatalf("Unwrap error %q lacks the prefix", err)
			}
			return
		}
		if _, ok := d.messagesKey(); !ok {
			t.Fatalf("Unwrap returned unknown dialect %q", d)
		}
		if b, err := Read(body, d); err == nil {
			b.Validate()
		}
	})
}

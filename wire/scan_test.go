package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanSeeds are texts at the edges of the JSON grammar.
var scanSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1e400`, `-1.5E-3`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`"\u00e9\ud83d\ude00\ud800x\udc00"`, `"\/\b\f\n\r\t\"\\"`, `"\x"`, `"\u12G4"`, "\"a\x01b\"",
	`{"a":1,"a":2}`, `{"a" : [1 , 2 ,{ } ] }`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a"}`, `{1:2}`,
	`true`, `tru`, `nulll`, ` { } `, `{} x`, "\"\u2028 \u00a0\u3000\"", `"  \n\t "`, `"\f"`, `"\u0085"`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

// FuzzScan checks the scanner and the string helpers against
// encoding/json: the same texts are valid, strings decode the same, the
// compact length is json.Compact's, and a blank string is one
// strings.TrimSpace empties.
func FuzzScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", data, got, want)
		}
		if !json.Valid(data) {
			return
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			t.Fatal(err)
		}
		if n := compactLen(trimSpace(data)); n != buf.Len() {
			t.Fatalf("compactLen(%q) = %d, json.Compact %d", data, n, buf.Len())
		}
		raw := trimSpace(data)
		if raw[0] != '"' || !utf8.Valid(raw) {
			return // the readers refuse text that is not UTF-8 first
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if got := unquote(raw); got != s {
			t.Fatalf("unquote(%q) = %q, json.Unmarshal %q", raw, got, s)
		}
		if got, want := blankString(raw), strings.TrimSpace(s) == ""; got != want {
			t.Fatalf("blankString(%q) = %v, want %v", raw, got, want)
		}
		if !rawEquals(raw, s) {
			t.Fatalf("rawEquals(%q, %q) = false", raw, s)
		}
	})
}

// The scanner takes the nesting encoding/json takes, counted from the
// value, and the reader counts it from each top-level value, as Read did
// when it decoded each value on its own.
func TestScanDepth(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		v := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		if got, want := validJSON([]byte(v)), json.Valid([]byte(v)); got != want {
			t.Errorf("depth %d: validJSON %v, json.Valid %v", depth, got, want)
		}
		body := `{"model":"m","x":` + v + `,"messages":[{"role":"user","content":"hi"}]}`
		_, err := Read([]byte(body), OpenAIChat)
		if (err == nil) != json.Valid([]byte(v)) {
			t.Errorf("depth %d inside a body: Read error %v", depth, err)
		}
	}
}

// The message array's elements are counted from the array, as
// encoding/json counts a decoded array.
func TestScanMessageDepth(t *testing.T) {
	for _, depth := range []int{9998, 9999} {
		v := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		arr := `[{"role":"user","content":"hi","x":` + v + `}]`
		_, err := Read([]byte(`{"messages":`+arr+`}`), OpenAIChat)
		if (err == nil) != json.Valid([]byte(arr)) {
			t.Errorf("depth %d: Read error %v, json.Valid %v", depth, err, json.Valid([]byte(arr)))
		}
	}
}

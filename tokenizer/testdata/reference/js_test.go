package main

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"testing"
)

// TestJS compares with the ids that js/encode.js wrote: by default those
// of tiktoken's own Rust core built to WebAssembly (npm package tiktoken),
// the reference that counts; or those of js-tiktoken, a JavaScript port
// that differs from tiktoken where JavaScript's \s and case folding do.
//
//	go run . random /tmp/random.json
//	cd js && npm install && node encode.js /tmp/ids.json tiktoken /tmp/random.json
//	cd .. && JS_IDS=/tmp/ids.json go test -run JS
func TestJS(t *testing.T) {
	path := os.Getenv("JS_IDS")
	if path == "" {
		t.Skip("JS_IDS names no js-tiktoken output")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(res))
	for k := range res {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, e := range encodings {
		tokens := 0
		for _, n := range names {
			var text string
			var want []int
			json.Unmarshal(res[n]["text"], &text)
			json.Unmarshal(res[n][e.Name()], &want)
			got := e.Encode(text)
			tokens += len(want)
			if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
				t.Errorf("%s %s: %d tokens, reference %d", e.Name(), n, len(got), len(want))
			}
		}
		t.Logf("%s: %d cases, %d tokens", e.Name(), len(names), tokens)
	}
}

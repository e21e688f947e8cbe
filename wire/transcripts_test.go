package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const transcriptDir = "../testdata/transcripts"

// transcriptFiles lists the recorded transcripts (every file except
// SOURCES.md), relative to transcriptDir.
func transcriptFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(transcriptDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() == "SOURCES.md" {
			return nil
		}
		rel, err := filepath.Rel(transcriptDir, path)
		files = append(files, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) != 33 {
		t.Fatalf("found %d transcripts, want 33", len(files))
	}
	return files
}

// wantPending lists the transcripts that end on calls still waiting for
// results, with the indexes reported under the pending-calls rule.
var wantPending = map[string][]int{
	"openai_chat/openhands-sdk__llm-log-claude-sonnet-4-1757015046.707.json": {12},
	"responses/nemo-gym__mini_swe_agent_2__line0.json":                       {21},
	"responses/nemo-gym__mini_swe_agent_2__line2.json":                       {54, 55, 56},
}

// wantClaudeCode gives, for the Claude Code logs, the main-thread
// assistant messages after merging lines that share message.id, and the
// main-thread tool calls (sidechain lines are dropped).
var wantClaudeCode = map[string][2]int{
	"anthropic/claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": {7, 12},
	"anthropic/claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": {10, 13},
	"anthropic/claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": {9, 11},
}

// wantDialect gives each transcript directory's dialect.
var wantDialect = map[string]Dialect{
	"openai_chat": OpenAIChat,
	"responses":   OpenAIResponses,
	"anthropic":   Anthropic,
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("unmarshal a: %v", err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal b: %v", err)
	}
	return reflect.DeepEqual(x, y)
}

func TestTranscripts(t *testing.T) {
	for _, name := range transcriptFiles(t) {
		t.Run(name, func(t *testing.T) {
			file, err := os.ReadFile(filepath.Join(transcriptDir, name))
			if err != nil {
				t.Fatal(err)
			}
			body, d, err := Unwrap(file, name)
			if err != nil {
				t.Fatalf("Unwrap: %v", err)
			}
			if want := wantDialect[filepath.Dir(name)]; d != want {
				t.Errorf("Unwrap dialect = %s, want %s", d, want)
			}
			if got, err := Detect(body); err != nil || got != d {
				t.Errorf("Detect = %s, %v; want %s", got, err, d)
			}
			b, err := Read(body, d)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if want, ok := wantClaudeCode[name]; ok {
				var got [2]int
				for _, m := range b.Messages {
					if m.Role == "assistant" {
						got[0]++
					}
					got[1] += len(m.Calls)
				}
				if got != want {
					t.Errorf("assistant messages and calls = %v, want %v", got, want)
				}
			}
			out, err := b.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if !jsonEqual(t, body, out) {
				t.Errorf("round trip changed the body")
			}
			var pending []int
			for _, v := range b.Validate() {
				if strings.HasSuffix(v.Rule, "/pending-calls") {
					pending = append(pending, v.Index)
					continue
				}
				t.Errorf("violation: %v", v)
			}
			if !reflect.DeepEqual(pending, wantPending[name]) {
				t.Errorf("pending calls at %v, want %v", pending, wantPending[name])
			}
			// Editing path: dropping nothing but marking dirty still gives
			// an equal body.
			if err := b.Remove(nil); err != nil {
				t.Fatal(err)
			}
			b.dirty = true
			out, err = b.Marshal()
			if err != nil {
				t.Fatalf("Marshal (rewritten): %v", err)
			}
			if !jsonEqual(t, body, out) {
				t.Errorf("rewritten body differs from the input")
			}
			// Stubbing every tool result keeps the body as valid as it was.
			stubbed := 0
			for i := range b.Messages {
				if len(b.Messages[i].Results) > 0 {
					if err := b.Stub(i, "[result pruned]"); err != nil {
						t.Fatalf("Stub(%d): %v", i, err)
					}
					stubbed++
				}
			}
			out, err = b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			vs, err := Validate(out, d)
			if err != nil {
				t.Fatalf("stubbed body: %v", err)
			}
			for _, v := range vs {
				if !strings.HasSuffix(v.Rule, "/pending-calls") {
					t.Errorf("stubbed body: %v", v)
				}
			}
			if len(pending) > 0 {
				t.Logf("pending calls at %v; %d result messages stubbed", pending, stubbed)
			}
		})
	}
}

// TestTranscriptBrokenPrunes removes, in every transcript, the first
// message that emits calls and, separately, the first message that carries
// results, and expects Validate to catch each broken history.
func TestTranscriptBrokenPrunes(t *testing.T) {
	for _, name := range transcriptFiles(t) {
		file, err := os.ReadFile(filepath.Join(transcriptDir, name))
		if err != nil {
			t.Fatal(err)
		}
		body, d, err := Unwrap(file, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, what := range []string{"calls", "results"} {
			b, err := Read(body, d)
			if err != nil {
				t.Fatal(err)
			}
			at := -1
			for i := range b.Messages {
				m := &b.Messages[i]
				if (what == "calls" && len(m.Calls) > 0) || (what == "results" && len(m.Results) > 0) {
					at = i
					break
				}
			}
			if at < 0 {
				continue
			}
			// Dropping the final result message turns its batch into a
			// pending one, which is reported as such.
			last := at == len(b.Messages)-1 && what == "results"
			if err := b.Remove([]int{at}); err != nil {
				t.Fatal(err)
			}
			out, err := b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			vs, err := Validate(out, d)
			if err != nil {
				t.Fatal(err)
			}
			caught := false
			for _, v := range vs {
				caught = caught || last == strings.HasSuffix(v.Rule, "/pending-calls")
			}
			if !caught {
				t.Errorf("%s: removing the first message with %s (index %d) went unnoticed: %v", name, what, at, vs)
			}
		}
	}
}

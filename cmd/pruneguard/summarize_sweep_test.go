package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// prune --summarize builtin on bundled transcripts of three dialects, at
// a quarter, half and three quarters of their tokens, with and without
// --spill: the output is no worse under check; it holds one summary
// message for each entry of "summarized", whose "index" is the input
// index of the first message it replaced; "summary" is the sum of those
// entries; a summary carries keys only with --spill, each of them listed
// in "spilled"; and "spilled" lists no input message the output still
// holds as it was.
func TestPruneSummarizeSweep(t *testing.T) {
	for _, name := range []string{
		"anthropic/claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
		"openai_chat/taubench-airline-gpt4o__idx033_task33_trial0.json",
		"responses/nemo-gym__mini_swe_agent_2__line0.json",
	} {
		path, body, d := extracted(t, name)
		b, err := wire.Read(body, d)
		if err != nil {
			t.Fatal(err)
		}
		inV := len(b.Validate())
		in := history(t, body, d)
		for _, pct := range []int{25, 50, 75} {
			for _, sp := range []bool{false, true} {
				at := name + " " + strconv.Itoa(pct) + "% spill=" + strconv.FormatBool(sp)
				args := []string{"prune", "--budget", strconv.Itoa(wire.Tokens(b, nil) * pct / 100), "--summarize", "builtin"}
				if sp {
					args = append(args, "--spill", filepath.Join(t.TempDir(), "spill"))
				}
				_, out, errs := pg(t, "", append(args, path)...)
				var rep summaryReport
				if err := json.Unmarshal([]byte(errs), &rep); err != nil {
					t.Fatalf("%s: report %q", at, errs)
				}
				got := history(t, []byte(out), d)
				shown := 0
				for _, m := range got {
					if strings.Contains(string(m), "[Summary of") {
						shown++
					}
				}
				if shown != len(rep.Summarized) {
					t.Errorf("%s: %d summaries in the output, %d reported", at, shown, len(rep.Summarized))
				}
				var idx []int
				var keys []string
				facts := 0
				for _, s := range rep.Summarized {
					if len(s.Indexes) == 0 || s.Index != s.Indexes[0] || !sp && len(s.Keys) > 0 {
						t.Errorf("%s: summary %+v", at, s)
					}
					idx = append(idx, s.Indexes...)
					facts += s.Facts
					for _, k := range s.Keys {
						if !slices.Contains(keys, k) {
							keys = append(keys, k)
						}
					}
				}
				slices.Sort(idx)
				if len(rep.Summarized) > 0 && (rep.Summary == nil || !slices.Equal(idx, rep.Summary.Indexes) || facts != rep.Summary.Facts || !slices.Equal(keys, rep.Summary.Keys)) {
					t.Errorf("%s: summary %+v, summarized %+v", at, rep.Summary, rep.Summarized)
				}
				count := func(ms []json.RawMessage, m json.RawMessage) (n int) {
					for _, x := range ms {
						if string(x) == string(m) {
							n++
						}
					}
					return n
				}
				for _, k := range keys {
					if !slices.ContainsFunc(rep.Spilled, func(s spilledEntry) bool { return s.Key == k }) {
						t.Errorf("%s: a summary carries key %s, which \"spilled\" does not list", at, k)
					}
				}
				for _, s := range rep.Spilled {
					for _, i := range s.Indexes {
						if count(got, in[i]) == count(in, in[i]) {
							t.Errorf("%s: spilled %s lists message %d, which the output holds as it was", at, s.Key, i)
						}
					}
				}
				outPath := filepath.Join(t.TempDir(), "out.json")
				if err := os.WriteFile(outPath, []byte(out), 0o600); err != nil {
					t.Fatal(err)
				}
				ob, err := wire.Read([]byte(out), d)
				if err != nil || len(ob.Validate()) > inV {
					t.Errorf("%s: the output breaks more rules than the input (%v)", at, err)
				}
			}
		}
	}
}

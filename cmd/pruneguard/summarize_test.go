package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/internal/facts"
	"github.com/pruneguard/pruneguard/wire"
)

// summaryReport is what the tests read of prune's report with
// --summarize.
type summaryReport struct {
	WithinBudget bool   `json:"within_budget"`
	Description  string `json:"description"`
	OutputTokens int    `json:"output_tokens"`
	Summary      *struct {
		Indexes []int    `json:"indexes"`
		Facts   int      `json:"facts"`
		Keys    []string `json:"keys"`
	} `json:"summary"`
	Summarized []struct {
		Index   int      `json:"index"`
		Indexes []int    `json:"indexes"`
		Facts   int      `json:"facts"`
		Keys    []string `json:"keys"`
	} `json:"summarized"`
	Spilled []spilledEntry `json:"spilled"`
}

// spilledEntry is an entry of the report's "spilled".
type spilledEntry struct {
	Key     string `json:"key"`
	Indexes []int  `json:"indexes"`
}

// prune --summarize builtin, with and without --spill, on a bundled
// transcript the guard alone cannot bring under the budget: the output
// holds one summary, a user message in the place of the first message
// it replaced; the report lists it with the input indexes it replaced,
// the facts it carries (each of them in the output) and, with --spill,
// the key it carries, which recall reads back; the output is no worse
// under check, and the messages before the summary are the input's.
func TestPruneSummarize(t *testing.T) {
	path, body, d := extracted(t, "openai_chat/taubench-airline-gpt4o__idx012_task12_trial0.json")
	in := history(t, body, d)
	for _, spill := range []bool{false, true} {
		t.Run("spill="+strconv.FormatBool(spill), func(t *testing.T) {
			args := []string{"prune", "--budget", "2000", "--summarize", "builtin"}
			dir := filepath.Join(t.TempDir(), "spill")
			if spill {
				args = append(args, "--spill", dir)
			}
			code, out, errs := pg(t, "", append(args, path)...)
			var rep summaryReport
			if err := json.Unmarshal([]byte(errs), &rep); err != nil {
				t.Fatalf("report %q: %v", errs, err)
			}
			if len(rep.Summarized) != 1 || !strings.Contains(rep.Description, "summarized") {
				t.Fatalf("exit %d, report %s", code, errs)
			}
			s := rep.Summarized[0]
			if sum := rep.Summary; sum == nil || !slices.Equal(sum.Indexes, s.Indexes) || sum.Facts != s.Facts || !slices.Equal(sum.Keys, s.Keys) {
				t.Fatalf("the report's summary %+v is not its one summary %+v", rep.Summary, s)
			}
			got := history(t, []byte(out), d)
			if s.Index != s.Indexes[0] || len(got) != len(in)-len(s.Indexes)+1 {
				t.Fatalf("summary %+v: %d messages out of %d", s, len(got), len(in))
			}
			for i := 0; i < s.Index; i++ {
				if string(got[i]) != string(in[i]) {
					t.Errorf("message %d before the summary changed", i)
				}
			}
			var m struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}
			if err := json.Unmarshal(got[s.Index], &m); err != nil || m.Role != "user" || !strings.HasPrefix(m.Content, "[Summary of") {
				t.Fatalf("message %d is not the summary: %s", s.Index, got[s.Index])
			}
			// The facts the report counts are those of the replaced
			// messages the summary carries.
			c := facts.NewCarrier(m.Content)
			carried := map[string]bool{}
			for _, i := range s.Indexes {
				for _, f := range facts.Extract(string(in[i])) {
					if c.Carries(f) {
						carried[f.Text] = true
					}
				}
			}
			if s.Facts == 0 || s.Facts > len(carried)+len(s.Keys)*2 {
				t.Errorf("facts %d, the summary carries %d of the replaced messages'", s.Facts, len(carried))
			}
			if spill != (len(s.Keys) == 1) {
				t.Fatalf("keys %v with spill %v", s.Keys, spill)
			}
			if spill {
				if !strings.Contains(m.Content, s.Keys[0]) {
					t.Errorf("the summary does not show its key %s", s.Keys[0])
				}
				code, got, errs := pg(t, "", "recall", "--spill", dir, s.Keys[0])
				var ms []json.RawMessage
				if code != 0 || json.Unmarshal([]byte(got), &ms) != nil || len(ms) != len(s.Indexes) {
					t.Errorf("recall %s: exit %d, %d messages for %d replaced: %s", s.Keys[0], code, len(ms), len(s.Indexes), errs)
				}
			}
			outPath := filepath.Join(t.TempDir(), "out.json")
			os.WriteFile(outPath, []byte(out), 0o600)
			if code, vs, _ := pg(t, "", "check", "--dialect", string(d), outPath); code != 0 {
				t.Errorf("check of the output: exit %d %s", code, vs)
			}
			b, err := wire.Read([]byte(out), d)
			if err != nil || wire.Tokens(b, nil) != rep.OutputTokens {
				t.Errorf("output tokens %d, the body %d (%v)", rep.OutputTokens, wire.Tokens(b, nil), err)
			}
		})
	}
}

// --summarize takes builtin only; the help of prune documents it.
func TestPruneSummarizeFlag(t *testing.T) {
	path, _, _ := extracted(t, "openai_chat/taubench-airline-gpt4o__idx012_task12_trial0.json")
	badInput(t, "", `unknown --summarize "model"`, "prune", "--budget", "100", "--summarize", "model", path)
	_, help, _ := pg(t, "", "help", "prune")
	if !strings.Contains(help, "--summarize") || !strings.Contains(help, `"summarized"`) {
		t.Errorf("help prune does not document --summarize:\n%s", help)
	}
	// Without --summarize, the report has neither "summary" nor
	// "summarized".
	_, _, errs := pg(t, "", "prune", "--budget", "2000", path)
	var rep map[string]json.RawMessage
	if err := json.Unmarshal([]byte(errs), &rep); err != nil {
		t.Fatalf("report %q: %v", errs, err)
	}
	if _, ok := rep["summarized"]; ok {
		t.Errorf("a report without --summarize lists summaries: %s", errs)
	}
	if _, ok := rep["summary"]; ok {
		t.Errorf("a report without --summarize totals summaries: %s", errs)
	}
}

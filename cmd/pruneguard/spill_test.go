package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// spillReport is what the tests read of prune's report.
type spillReport struct {
	Dialect      string `json:"dialect"`
	WithinBudget bool   `json:"within_budget"`
	InputTokens  int    `json:"input_tokens"`
	Spilled      []struct {
		Key     string `json:"key"`
		Indexes []int  `json:"indexes"`
	} `json:"spilled"`
	Evicted []struct {
		Indexes []int `json:"indexes"`
	} `json:"evicted"`
	Stubbed []struct {
		Index int `json:"index"`
	} `json:"stubbed"`
}

const transcripts = "../../testdata/transcripts"

// history returns the messages of a request body, one by one.
func history(t *testing.T, body []byte, d wire.Dialect) []json.RawMessage {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	key := map[wire.Dialect]string{wire.OpenAIResponses: "input", wire.Gemini: "contents"}[d]
	if key == "" {
		key = "messages"
	}
	var ms []json.RawMessage
	if err := json.Unmarshal(top[key], &ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func jsonEq(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// extracted writes the body inside a bundled transcript to a file.
func extracted(t *testing.T, name string) (string, []byte, wire.Dialect) {
	t.Helper()
	file, err := os.ReadFile(filepath.Join(transcripts, name))
	if err != nil {
		t.Fatal(err)
	}
	body, d, err := wire.Unwrap(file, name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, body, d
}

// prune --spill on bundled transcripts, at budgets that leave room only
// by spilling: the output fits and is no worse under check, every
// message evicted or stubbed is reconstructible or spilled, and recall
// of each key prints the input's messages at the reported indexes.
func TestPruneSpillRecall(t *testing.T) {
	for _, c := range []struct {
		name, policy string
		pct          int
	}{
		{"openai_chat/taubench-airline-gpt4o__idx003_task3_trial0.json", "oldest", 35},
		{"openai_chat/taubench-airline-gpt4o__idx052_task2_trial1.json", "keep-last-tools", 50},
		{"anthropic/claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "largest", 40},
		{"responses/nemo-gym__mini_swe_agent_2__line4.json", "oldest", 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, body, d := extracted(t, c.name)
			in := history(t, body, d)
			total := wire.Tokens(mustRead(t, body, d), nil)
			budget := total * c.pct / 100
			dir := filepath.Join(t.TempDir(), "spill")
			code, out, errs := pg(t, "", "prune", "--budget", strconv.Itoa(budget), "--policy", c.policy, "--report", "full", "--spill", dir, path)
			var rep spillReport
			if err := json.Unmarshal([]byte(errs), &rep); err != nil {
				t.Fatalf("report %q: %v", errs, err)
			}
			if code != 0 || !rep.WithinBudget || len(rep.Spilled) == 0 {
				t.Fatalf("exit %d, report %s", code, errs)
			}
			// Never worse under check.
			inCode, inOut, _ := pg(t, "", "check", "--dialect", rep.Dialect, path)
			outPath := filepath.Join(t.TempDir(), "out.json")
			os.WriteFile(outPath, []byte(out), 0o600)
			outCode, outOut, _ := pg(t, "", "check", "--dialect", rep.Dialect, outPath)
			if outCode > inCode || outCode == 1 && !sameRules(t, inOut, outOut) {
				t.Errorf("check: input exit %d %s, output exit %d %s", inCode, inOut, outCode, outOut)
			}
			// Recall each key.
			stored := map[int]bool{}
			for _, s := range rep.Spilled {
				code, got, errs := pg(t, "", "recall", "--spill", dir, s.Key)
				if code != 0 {
					t.Fatalf("recall %s: exit %d %s", s.Key, code, errs)
				}
				var ms []json.RawMessage
				if err := json.Unmarshal([]byte(got), &ms); err != nil || len(ms) != len(s.Indexes) {
					t.Fatalf("recall %s: %d messages for %d indexes (%v)", s.Key, len(ms), len(s.Indexes), err)
				}
				for k, i := range s.Indexes {
					stored[i] = true
					if !jsonEq(ms[k], in[i]) {
						t.Errorf("recall %s: message %d is not the input's message %d", s.Key, k, i)
					}
				}
				if !strings.Contains(out, s.Key) {
					t.Errorf("the output shows no pointer to %s", s.Key)
				}
			}
			// Every message that left is reconstructible or spilled.
			g, err := wire.Bind(body, d, wire.Options{Config: pruneguard.Config{Regen: pruneguard.RegenDropUnsafe}})
			if err != nil {
				t.Fatal(err)
			}
			gone := func(i int) {
				if cl, _ := g.Context().ClassOf(wire.ID(i)); !stored[i] && cl != pruneguard.Reconstructible {
					t.Errorf("message %d (%v) left, neither reconstructible nor spilled", i, cl)
				}
			}
			for _, u := range rep.Evicted {
				for _, i := range u.Indexes {
					gone(i)
				}
			}
			for _, m := range rep.Stubbed {
				gone(m.Index)
			}
		})
	}
}

func mustRead(t *testing.T, body []byte, d wire.Dialect) *wire.Body {
	t.Helper()
	b, err := wire.Read(body, d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameRules reports whether check's output for the output body names no
// rule the input's did not.
func sameRules(t *testing.T, in, out string) bool {
	t.Helper()
	var a, b struct {
		Violations []wire.RuleViolation `json:"violations"`
	}
	if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(out), &b) != nil {
		return false
	}
	return len(wire.NewViolations(a.Violations, b.Violations)) == 0
}

// recall exits 2 with one error line for a key the directory does not
// hold, a damaged entry, a bad key or no --spill.
func TestRecallErrors(t *testing.T) {
	path, _, _ := extracted(t, "openai_chat/taubench-airline-gpt4o__idx003_task3_trial0.json")
	dir := filepath.Join(t.TempDir(), "spill")
	code, _, errs := pg(t, "", "prune", "--budget", "3000", "--spill", dir, path)
	var rep spillReport
	if err := json.Unmarshal([]byte(errs), &rep); err != nil || code != 0 || len(rep.Spilled) == 0 {
		t.Fatalf("prune: exit %d %s", code, errs)
	}
	key := rep.Spilled[0].Key
	if code, _, errs := pg(t, "", "recall", "--spill", dir, "spill:"+key); code != 0 {
		t.Errorf("recall spill:KEY: exit %d %s", code, errs)
	}
	badInput(t, "", "not found", "recall", "--spill", dir, "seg-00000000-0000-0000-0000-000000000000")
	badInput(t, "", "bad key", "recall", "--spill", dir, "../etc")
	badInput(t, "", "recall needs --spill DIR", "recall", key)
	badInput(t, "", "recall takes one KEY", "recall", "--spill", dir)
	// Flip one byte of the entry.
	file := filepath.Join(dir, "spill-"+key)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0x20
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	badInput(t, "", "corrupt", "recall", "--spill", dir, key)
}

// recall has its help, like every subcommand.
func TestRecallHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "recall"}, {"recall", "-h"}, {"recall", "--help"}} {
		code, out, _ := pg(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage: pruneguard recall --spill DIR KEY") || !strings.Contains(out, "--spill DIR") {
			t.Errorf("%v: exit %d %q", args, code, out)
		}
	}
	if _, out, _ := pg(t, "", "prune", "-h"); !strings.Contains(out, "--spill DIR") {
		t.Errorf("prune's help does not name --spill: %q", out)
	}
}

// recall --query finds a spilled message by a word of it, in the answer
// the recall tool gives a model; bad uses exit 2 with one error line.
func TestRecallQuery(t *testing.T) {
	path, body, d := extracted(t, "openai_chat/taubench-airline-gpt4o__idx003_task3_trial0.json")
	in := history(t, body, d)
	dir := filepath.Join(t.TempDir(), "spill")
	code, _, errs := pg(t, "", "prune", "--budget", "3000", "--spill", dir, path)
	var rep spillReport
	if err := json.Unmarshal([]byte(errs), &rep); err != nil || code != 0 || len(rep.Spilled) == 0 {
		t.Fatalf("prune: exit %d %s", code, errs)
	}
	// The longest word of letters and digits of a spilled message.
	s := rep.Spilled[len(rep.Spilled)-1]
	word := ""
	for _, w := range strings.FieldsFunc(string(in[s.Indexes[0]]), func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		if len(w) > len(word) {
			word = w
		}
	}
	code, out, errs := pg(t, "", "recall", "--spill", dir, "--query", word)
	if code != 0 {
		t.Fatalf("recall --query %s: exit %d %s", word, code, errs)
	}
	var a struct {
		Query    string
		Pages    int
		Messages []struct {
			Key     string
			Index   int
			Content string
		}
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.Query != word || len(a.Messages) == 0 {
		t.Fatalf("recall --query %s: %v %s", word, err, out)
	}
	found := false
	for _, m := range a.Messages {
		found = found || m.Key == s.Key && m.Index == 0 && strings.Contains(m.Content, word)
	}
	if !found {
		t.Errorf("recall --query %s: the message at index %d of %s is not among the hits: %s", word, s.Indexes[0], s.Key, out)
	}
	badInput(t, "", "not both", "recall", "--spill", dir, "--query", word, s.Key)
	badInput(t, "", "no word", "recall", "--spill", dir, "--query", ";;")
	badInput(t, "", "page", "recall", "--spill", dir, "--query", word, "--page", strconv.Itoa(a.Pages+1))
	badInput(t, "", "recall needs --spill DIR", "recall", "--query", word)
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const body = "../../testdata/bodies/anthropic-parallel.json"

func TestCheck(t *testing.T) {
	code, out, _ := runCmd(t, "", "check", body)
	if code != 0 || out != "{\"dialect\":\"anthropic\",\"violations\":[]}\n" {
		t.Errorf("check = %d %q", code, out)
	}
	bad := `{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"hi"}]}`
	code, out, _ = runCmd(t, bad, "check", "--dialect", "anthropic", "-")
	var got struct {
		Dialect    string
		Violations []struct {
			Rule    string
			Index   int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || len(got.Violations) == 0 {
		t.Fatalf("check bad = %d %q (%v)", code, out, err)
	}
	if got.Violations[0].Rule != "anthropic/first-not-user" {
		t.Errorf("first violation %+v", got.Violations[0])
	}
}

func TestBadInput(t *testing.T) {
	for _, cmd := range []string{"check", "prune"} {
		args := []string{cmd, "-"}
		if cmd == "prune" {
			args = []string{cmd, "--budget", "10", "-"}
		}
		code, out, errs := runCmd(t, "{\"messages\": [\n  {\"role\": \"user\",, \"content\": \"x\"}]}", args...)
		if code != 2 || out != "" || !strings.Contains(errs, "<stdin>:2:19: invalid JSON") {
			t.Errorf("%s bad JSON = %d %q %q", cmd, code, out, errs)
		}
	}
	code, _, errs := runCmd(t, "", "check", "no-such-file.json")
	if code != 2 || !strings.Contains(errs, "no-such-file.json") {
		t.Errorf("missing file = %d %q", code, errs)
	}
	code, _, errs = runCmd(t, `{"messages": 3}`, "check", "--dialect", "anthropic", "-")
	if code != 2 || !strings.Contains(errs, "messages is a number") {
		t.Errorf("bad body = %d %q", code, errs)
	}
	for _, args := range [][]string{
		{"prune", body},
		{"prune", "--budget", "9", "--policy", "nope", body},
		{"prune", "--budget", "9", "--dialect", "nope", body},
		{"prune", "--budget", "9", "--unannotated", "maybe", body},
		{"nope"},
		{},
	} {
		if code, out, _ := runCmd(t, "", args...); code != 2 || out != "" {
			t.Errorf("%v = %d %q", args, code, out)
		}
	}
}

func report(t *testing.T, stderr string) Report {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines: %q", len(lines), stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"input_tokens", "output_tokens", "evicted", "stubbed", "tombstones", "refused", "prune_ms", "unannotated", "text", "outcome"} {
		if !strings.Contains(lines[0], `"`+k+`"`) {
			t.Errorf("report lacks %s: %s", k, lines[0])
		}
	}
	return r
}

func TestPrune(t *testing.T) {
	// Under budget: the body comes back unchanged.
	code, out, errs := runCmd(t, "", "prune", "--budget", "100000", body)
	src, _ := os.ReadFile(body)
	if r := report(t, errs); code != 0 || r.Outcome != "under_budget" || strings.TrimSpace(out) != strings.TrimSpace(string(src)) {
		t.Errorf("under budget = %d %+v", code, r)
	}
	// Pruned to budget, tools vouched for.
	code, out, errs = runCmd(t, "", "prune", "--budget", "4000", "--unannotated", "regenerable", body)
	r := report(t, errs)
	if code != 0 || r.Outcome != "pruned" || r.OutputTokens > 4000 || len(r.Evicted) == 0 || r.Unannotated != "regenerable" {
		t.Errorf("pruned = %d %+v", code, r)
	}
	if v, err := wire.Validate([]byte(out), wire.Anthropic); err != nil || len(v) > 0 {
		t.Errorf("pruned body: %v %v", v, err)
	}
	// MCP defaults: the results are irreducible, exit 3 with the reasons.
	code, out, errs = runCmd(t, "", "prune", "--budget", "4000", body)
	r = report(t, errs)
	if code != 3 || r.OutputTokens <= 4000 || len(r.Refused) == 0 || out == "" {
		t.Errorf("refused = %d %+v", code, r)
	}
	gates := map[string]bool{}
	for _, x := range r.Refused {
		gates[x.Gate+"/"+x.Code] = true
	}
	if !gates["regen/irreducible"] || !gates["boundary/pinned"] {
		t.Errorf("refusals %v", gates)
	}
	// A manifest that annotates the tools read-only and closed-world.
	dir := t.TempDir()
	man := filepath.Join(dir, "tools.json")
	var tools []map[string]any
	for _, n := range []string{"Read", "Grep", "Glob", "LS", "Bash", "Task", "TodoWrite", "Edit", "Write", "MultiEdit", "WebFetch"} {
		tools = append(tools, map[string]any{"name": n, "annotations": map[string]bool{"readOnlyHint": true, "openWorldHint": false}})
	}
	data, _ := json.Marshal(map[string]any{"tools": tools})
	os.WriteFile(man, data, 0o644)
	code, _, errs = runCmd(t, "", "prune", "--budget", "4000", "--tools-manifest", man, "--policy", "largest", body)
	r = report(t, errs)
	if code != 0 || len(r.Stubbed) == 0 {
		t.Errorf("largest with manifest = %d %+v", code, r)
	}
	code, _, errs = runCmd(t, "", "prune", "--budget", "6000", "--tools-manifest", man, "--policy", "keep-last-tools", "--keep", "2", body)
	r = report(t, errs)
	if len(r.Stubbed) == 0 || r.Policy != "keep-last-tools" || (code != 0 && code != 3) {
		t.Errorf("keep-last-tools = %d %+v", code, r)
	}
}

// A trailing batch whose results have not all arrived stays, and a strict
// boundary defers everything.
func TestPrunePending(t *testing.T) {
	chat := `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"` + strings.Repeat("look ", 200) + `"},` +
		`{"role":"assistant","tool_calls":[{"id":"z","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"z","content":"` + strings.Repeat("ok ", 200) + `"},{"role":"user","content":"go"},` +
		`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":"` + strings.Repeat("data ", 400) + `"}]}`
	code, out, errs := runCmd(t, chat, "prune", "--budget", "100", "--unannotated", "regenerable", "-")
	r := report(t, errs)
	if code != 3 || !strings.Contains(out, `"tool_call_id":"a"`) || len(r.Evicted) == 0 {
		t.Errorf("relaxed = %d %+v", code, r)
	}
	found := false
	for _, x := range r.Refused {
		found = found || x.Code == "pending-call"
	}
	if !found {
		t.Errorf("no pending-call refusal: %+v", r.Refused)
	}
	code, _, errs = runCmd(t, chat, "prune", "--budget", "100", "--boundary", "strict", "--unannotated", "regenerable", "-")
	if r := report(t, errs); code != 3 || r.Outcome != "deferred" || len(r.Evicted) != 0 {
		t.Errorf("strict = %d %+v", code, r)
	}
}

func TestExtract(t *testing.T) {
	code, out, errs := runCmd(t, "", "extract", "../../testdata/transcripts/openai_chat/taubench-airline-gpt4o__idx000_task0_trial0.json")
	if code != 0 || errs != "" {
		t.Fatalf("extract = %d %q", code, errs)
	}
	if d, err := wire.Detect([]byte(out)); err != nil || d != wire.OpenAIChat {
		t.Errorf("extracted body: %v %v", d, err)
	}
	if code, _, _ := runCmd(t, "", "extract"); code != 2 {
		t.Errorf("extract without file = %d", code)
	}
}

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// In Responses a call and its output need not be adjacent: the report
// groups evicted messages by the unit the core put them in, not by runs of
// Decision.Evict.
func TestPruneReportUnitsInterleaved(t *testing.T) {
	body := `{"model":"gpt-5","input":[
		{"role":"user","content":"start"},
		{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"working on it"}]},
		{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"one"},
		{"type":"function_call_output","call_id":"call_2","output":"two"},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"read both"}]},
		{"role":"user","content":"end"}]}`
	_, _, errs := runCmd(t, body, "prune", "--budget", "20", "--unannotated", "regenerable", "-")
	r := report(t, errs)
	got := map[string][]string{}
	for _, u := range r.Evicted {
		got[u.Unit] = u.Messages
		if len(u.Indexes) != len(u.Messages) {
			t.Errorf("unit %s: indexes %v for messages %v", u.Unit, u.Indexes, u.Messages)
		}
	}
	if !slices.Equal(got["m1"], []string{"m1", "m4"}) || !slices.Equal(got["m3"], []string{"m3", "m5"}) {
		t.Errorf("evicted units %+v", r.Evicted)
	}
}

// prune never writes an empty history, which every provider rejects: the
// last unit stays, the run exits 3, and the output checks as the input's
// dialect with no new violation. A body that is one result the model has
// not read yet keeps it as unread; one that is the model's own answer
// meets the wire screen.
func TestPruneNeverEmpties(t *testing.T) {
	for _, tc := range []struct {
		body, keeps, gate, code string
		args                    []string
	}{
		// The result's call is not in the body, so its tool is unknown:
		// even vouched for, it is unread, and stays.
		{`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"some output here that is long enough"}]}]}`,
			`"tool_use_id":"t1"`, "boundary", "unread", []string{"--unannotated", "regenerable"}},
		// The model's answer, text that may go: the wire screen keeps it
		// as the last unit.
		{`{"messages":[{"role":"assistant","content":"an answer long enough to matter"}]}`,
			`"an answer long enough to matter"`, "wire", wire.RuleChatEmptyMessages, []string{"--text", "reconstructible"}},
	} {
		args := append(append([]string{"prune", "--budget", "1"}, tc.args...), "-")
		code, out, errs := runCmd(t, tc.body, args...)
		r := report(t, errs)
		if code != 3 || len(r.Evicted) != 0 || !strings.Contains(out, tc.keeps) {
			t.Fatalf("prune = %d %q %+v", code, out, r)
		}
		if !slices.ContainsFunc(r.Refused, func(x refusal) bool { return x.Gate == tc.gate && x.Code == tc.code }) {
			t.Errorf("no %s/%s refusal in %+v", tc.gate, tc.code, r.Refused)
		}
		_, in, _ := runCmd(t, tc.body, "check", "-")
		for _, args := range [][]string{{"check", "-"}, {"check", "--dialect", string(r.Dialect), "-"}} {
			if _, got, _ := runCmd(t, out, args...); got != in {
				t.Errorf("%v on the output = %q, on the input %q", args, got, in)
			}
		}
	}
}

// With --policy largest a result can be stubbed by one decision and its
// unit evicted by a later one: the report lists it as evicted only.
func TestPruneReportStubThenEvict(t *testing.T) {
	big := strings.Repeat("data ", 300)
	body := `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"a","content":"` + big + `"},
		{"role":"assistant","content":"` + strings.Repeat("ok ", 100) + `"},
		{"role":"assistant","tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"b","content":"` + big + `"},
		{"role":"assistant","content":"read"},
		{"role":"user","content":"next"}]}`
	// The assistant's prose is irreducible and stays: the budget leaves
	// room for it. The model has read both results.
	code, _, errs := runCmd(t, body, "prune", "--budget", "190", "--policy", "largest", "--unannotated", "regenerable", "-")
	r := report(t, errs)
	evicted := map[string]bool{}
	for _, u := range r.Evicted {
		for _, m := range u.Messages {
			evicted[m] = true
		}
	}
	if code != 0 || !evicted["m3"] || len(r.Stubbed) == 0 {
		t.Fatalf("prune = %d %+v", code, r)
	}
	for _, s := range r.Stubbed {
		if evicted[s.Message] {
			t.Errorf("%s is both stubbed and evicted: %+v", s.Message, r)
		}
	}
}

// check and prune agree on a second tool message for one tool_call_id:
// check reports it, prune lists it as unpaired.
func TestDuplicateToolResponse(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"ok"},
		{"role":"tool","tool_call_id":"call_a","content":"again"},
		{"role":"user","content":"next"}]}`
	code, out, _ := runCmd(t, body, "check", "-")
	if code != 1 || !strings.Contains(out, wire.RuleChatDuplicateToolResponse) {
		t.Errorf("check = %d %s", code, out)
	}
	_, _, errs := runCmd(t, body, "prune", "--budget", "100000", "-")
	r := report(t, errs)
	if len(r.Unpaired) != 1 || r.Unpaired[0].Index != 3 || r.Unpaired[0].Kind != "result" {
		t.Errorf("unpaired %+v", r.Unpaired)
	}
}

// --drop-unused-schemas withdraws the schema of a tool whose only call is
// evicted, and of one never called; a tool whose call stays (its unit is
// irreducible) loses its schema only behind a tombstone in the system
// prompt, when the tombstone is the smaller; a tool named in tool_choice
// keeps its schema. The read comes after the write, so that what it read
// can be read again.
func TestPruneDropUnusedSchemas(t *testing.T) {
	big := strings.Repeat("data ", 200)
	body := `{"model":"claude","max_tokens":99,"system":"be brief","tool_choice":{"type":"tool","name":"ask"},"tools":[
		{"name":"unused","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}},
		{"name":"read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"annotations":{"readOnlyHint":true,"openWorldHint":false}},
		{"name":"write","description":"Writes the content given to a file of the workspace, creating it and its directories when missing, replacing it otherwise.","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"the file's path, relative to the workspace root"},"content":{"type":"string","description":"the whole new content of the file"}},"required":["path","content"]}},
		{"name":"ask","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"task"},
		{"role":"assistant","content":[{"type":"tool_use","id":"w1","name":"write","input":{"path":"b"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"w1","content":"` + big + `"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"r1","name":"read","input":{"path":"a"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"r1","content":"` + big + `"}]},
		{"role":"assistant","content":"done"},
		{"role":"user","content":"next"}]}`
	_, out, errs := runCmd(t, body, "prune", "--budget", "200", "--drop-unused-schemas", "-")
	r := report(t, errs)
	withdrawn := strings.Join(r.Withdrawn, ",")
	if !strings.Contains(withdrawn, "read") || !strings.Contains(withdrawn, "unused") || strings.Contains(withdrawn, "ask") {
		t.Errorf("withdrawn %v", r.Withdrawn)
	}
	if len(r.Tombstones) != 1 || !strings.Contains(r.Tombstones[0], `"write"`) {
		t.Errorf("tombstones %q", r.Tombstones)
	}
	b, err := wire.Read([]byte(out), wire.Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range b.Tools() {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"ask"}) || !strings.Contains(out, `\"write\" is still available`) ||
		!strings.Contains(out, `"tool_use_id":"w1"`) || strings.Contains(out, `"tool_use_id":"r1"`) {
		t.Errorf("tools %v, body %s", names, out)
	}
	if v := b.Validate(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
	// A tombstone longer than the schema it stands in for is not written:
	// the output would hold more tokens than the input.
	small := strings.Replace(body, `"description":"Writes the content given to a file of the workspace, creating it and its directories when missing, replacing it otherwise.",`, "", 1)
	small = strings.Replace(small, `"description":"the whole new content of the file"`, `"x":1`, 1)
	small = strings.Replace(small, `"description":"the file's path, relative to the workspace root"`, `"x":1`, 1)
	_, _, errs = runCmd(t, small, "prune", "--budget", "200", "--drop-unused-schemas", "-")
	if r := report(t, errs); len(r.Tombstones) != 0 || slices.Contains(r.Withdrawn, "write") || r.OutputTokens > r.InputTokens ||
		!slices.ContainsFunc(r.Refused, func(x refusal) bool { return x.Code == wire.CodeSchemaNotSmaller }) {
		t.Errorf("small schema: %+v", r)
	}
	// Without the flag no schema leaves.
	_, _, errs = runCmd(t, body, "prune", "--budget", "200", "-")
	if r := report(t, errs); len(r.Withdrawn) != 0 || len(r.Tombstones) != 0 {
		t.Errorf("without the flag: %+v", r)
	}
}

// Tombstone lines that each cost less than their schema can together
// cost more, once the first one creates the system instruction: the
// output must never hold more tokens than the input (found by the
// generated sweep, a Gemini body without systemInstruction).
func TestPruneTombstonesTogether(t *testing.T) {
	code, _, errs := runCmd(t, "", "prune", "--budget", "251", "--drop-unused-schemas",
		"--tools-manifest", "testdata/gemini-tombstones.manifest.json", "testdata/gemini-tombstones.json")
	r := report(t, errs)
	if code != 3 || r.OutputTokens > r.InputTokens {
		t.Errorf("exit %d, tokens %d -> %d", code, r.InputTokens, r.OutputTokens)
	}
}

// longChat is a Chat body of n tool rounds after a task, each round a
// unit of its own: an assistant call and its result.
func longChat(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","messages":[{"role":"user","content":"task"}`)
	for i := range n {
		fmt.Fprintf(&sb, `,{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c%d","content":"%s"}`, i, i, strings.Repeat("output ", 20))
	}
	sb.WriteString(`,{"role":"user","content":"go on"}]}`)
	return sb.String()
}

// A prune of many units reports the first and last 8 of them and counts
// them all; --report full lists every one; within_budget says whether the
// output fits, as the exit code does.
func TestPruneReportSummary(t *testing.T) {
	body := longChat(60)
	code, _, errs := runCmd(t, body, "prune", "--budget", "300", "--unannotated", "regenerable", "-")
	r := report(t, errs)
	if code != 0 || !r.WithinBudget || r.OutputTokens > 300 || r.Detail != "summary" || r.Messages != 122 {
		t.Fatalf("prune = %d %+v", code, r)
	}
	if r.Counts.EvictedUnits <= listMax || len(r.Evicted) != 2*listKeep || r.Counts.EvictedMessages != 2*r.Counts.EvictedUnits {
		t.Fatalf("summary lists %d of %d units (%d messages)", len(r.Evicted), r.Counts.EvictedUnits, r.Counts.EvictedMessages)
	}
	if r.Evicted[0].Unit != "m1" || r.Evicted[listKeep-1].Unit != fmt.Sprintf("m%d", 2*listKeep-1) {
		t.Errorf("first units %+v", r.Evicted[:listKeep])
	}
	_, _, errs = runCmd(t, body, "prune", "--budget", "300", "--unannotated", "regenerable", "--report", "full", "-")
	full := report(t, errs)
	if full.Detail != "full" || len(full.Evicted) != r.Counts.EvictedUnits || full.Counts != r.Counts {
		t.Fatalf("full report lists %d units, counts %+v (summary %+v)", len(full.Evicted), full.Counts, r.Counts)
	}
	if !slices.EqualFunc(full.Evicted[len(full.Evicted)-listKeep:], r.Evicted[listKeep:], func(a, b unitReport) bool { return a.Unit == b.Unit }) {
		t.Errorf("the summary's last units are not the full report's")
	}
	// Irreducible tools: nothing may go, the output is over the budget.
	code, _, errs = runCmd(t, body, "prune", "--budget", "300", "-")
	if r := report(t, errs); code != 3 || r.WithinBudget || r.OutputTokens <= 300 {
		t.Errorf("over budget: exit %d, %+v", code, r)
	}
	if code, _, errs := runCmd(t, body, "prune", "--budget", "300", "--report", "all", "-"); code != 2 || !strings.Contains(errs, "--report") {
		t.Errorf("--report all: exit %d %q", code, errs)
	}
}

// A check that finds no safe way reports the units refused next to each
// other for one reason as one refusal, whose lists a summary report cuts
// as it cuts any list; the counts and the description say how many units
// the refusals name.
func TestPruneReportsRunsOfRefusals(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"m","tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"task"}`)
	for i := range 40 {
		fmt.Fprintf(&b, `,{"role":"assistant","tool_calls":[{"id":"c%d","type":"function","function":{"name":"lookup","arguments":"{}"}}]}`, i)
		fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"c%d","content":"%s"}`, i, strings.Repeat("x ", 40))
	}
	b.WriteString(`,{"role":"assistant","content":"done"},{"role":"user","content":"next"}]}`)
	code, _, errs := runCmd(t, b.String(), "prune", "--budget", "100", "--dialect", "openai-chat", "-")
	r := report(t, errs)
	if code != 3 || r.Outcome != "deferred" {
		t.Fatalf("exit %d, outcome %s", code, r.Outcome)
	}
	var run *refusal
	for i := range r.Refused {
		if r.Refused[i].Code == "irreducible" {
			run = &r.Refused[i]
		}
	}
	if run == nil || len(run.Units) != 2*listKeep || len(run.Messages) != 2*listKeep || len(run.Indexes) != 2*listKeep ||
		run.Units[0] != "m1" || run.Indexes[0] != 1 {
		t.Fatalf("refusals %+v", r.Refused)
	}
	if r.Counts.RefusedUnits < 41 || !strings.Contains(r.Description, fmt.Sprintf("of %d units", r.Counts.RefusedUnits)) {
		t.Errorf("counts %+v, description %q", r.Counts, r.Description)
	}
	_, _, errs = runCmd(t, b.String(), "prune", "--budget", "100", "--dialect", "openai-chat", "--report", "full", "-")
	for _, x := range report(t, errs).Refused {
		if x.Code == "irreducible" && len(x.Units) < 40 {
			t.Errorf("full report cut %+v", x)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/internal/facts"
	"github.com/pruneguard/pruneguard/wire"
)

const transcriptDir = "../../testdata/transcripts"

// chatSession builds a Chat session from role/content pairs; a content
// starting with "call:" is an assistant call whose arguments follow, and
// the next "tool" entry answers it.
func chatSession(t *testing.T, turns [][2]string) *session {
	t.Helper()
	var msgs []map[string]any
	n := 0
	for _, tu := range turns {
		role, text := tu[0], tu[1]
		switch {
		case role == "assistant" && strings.HasPrefix(text, "call:"):
			n++
			msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "c" + string(rune('0'+n)), "type": "function",
				"function": map[string]any{"name": "lookup", "arguments": strings.TrimPrefix(text, "call:")},
			}}})
		case role == "tool":
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": "c" + string(rune('0'+n)), "content": text})
		default:
			msgs = append(msgs, map[string]any{"role": role, "content": text})
		}
	}
	body, err := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSession("test", body, wire.OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUsedFacts checks the rule: a fact of the past counts when its
// first appearance after the cut is an assistant's, and not when a later
// input shows it first or the system prompt holds it.
func TestUsedFacts(t *testing.T) {
	s := chatSession(t, [][2]string{
		{"system", "Escalate to SYS-2024 when stuck."},
		{"user", "Ticket INC-4711 again; see REF-9999 and SYS-2024. Budget $450."},
		{"assistant", `call:{"query": "build 3f9a2c1d"}`},
		{"tool", "build 3f9a2c1d killed with exit 137 on /srv/ci/run.sh"},
		{"assistant", "Looking at INC-4711: exit 137."}, // the cut
		{"user", "Note REF-9999 is closed."},
		{"assistant", "REF-9999 closed; escalating to SYS-2024 about 3f9a2c1d."},
		{"assistant", `call:{"ticket": "INC-4711", "path": "/srv/ci/run.sh"}`},
		{"tool", "ok"},
	})
	cut := cutAt(s.msgs, 0.5)
	if cut != 4 {
		t.Fatalf("cut at %d, want 4", cut)
	}
	var got []string
	for _, f := range usedFacts(s, cut) {
		got = append(got, f.Text)
	}
	slices.Sort(got)
	want := []string{"/srv/ci/run.sh", "137", "3f9a2c1d", "INC-4711"}
	if !slices.Equal(got, want) {
		t.Errorf("used facts %q, want %q", got, want)
	}
}

// measureSmall runs every mode on a small cut: three transcripts and two
// generated sessions, cut at half, pruned to half of the past.
func measureSmall(t *testing.T) []result {
	t.Helper()
	ts, err := loadTranscripts(transcriptDir)
	if err != nil {
		t.Fatal(err)
	}
	var ss []*session
	for _, s := range ts {
		switch s.name {
		case "openai_chat/taubench-airline-gpt4o__idx003_task3_trial0.json",
			"responses/nemo-gym__example_multi_step__line2.json",
			"anthropic/claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl":
			ss = append(ss, s)
		}
	}
	if len(ss) != 3 {
		t.Fatalf("found %d of the 3 transcripts", len(ss))
	}
	ss = append(ss, generated(2)...)
	c := config{cuts: []float64{0.5}, budgets: []float64{0.5}, modes: modes, tmp: t.TempDir()}
	var rs []result
	for _, s := range ss {
		rs = append(rs, measureSession(s, c)...)
	}
	if len(rs) != len(ss)*len(modes) {
		t.Fatalf("%d results, want %d", len(rs), len(ss)*len(modes))
	}
	return rs
}

// TestMeasureSmallCut checks what must hold whatever the figures: every
// used fact is counted once; the guard without a spill store recalls
// nothing; the guard with tools and text irreducible, compacting or not,
// loses nothing and writes valid bodies; the naive trimmer loses planted
// facts, so the measurement can see a loss.
func TestMeasureSmallCut(t *testing.T) {
	rs := measureSmall(t)
	naiveLost, spilled := 0, 0
	for _, r := range rs {
		if r.err != nil {
			t.Fatalf("%s %s: %v", r.session, r.mode, r.err)
		}
		if r.used == 0 || r.kept+r.recallable+r.lost != r.used {
			t.Errorf("%s %s: used %d, kept %d + recallable %d + lost %d", r.session, r.mode, r.used, r.kept, r.recallable, r.lost)
		}
		switch r.mode {
		case "naive":
			if strings.HasPrefix(r.session, "generated/") {
				naiveLost += r.lost
			}
		case "guard", "guard-spill", "guard-summary", "guard-summary-spill":
			if r.lost != 0 || !r.valid {
				t.Errorf("%s %s: lost %d, valid %v", r.session, r.mode, r.lost, r.valid)
			}
		}
		spills := strings.HasSuffix(r.mode, "-spill")
		if !spills && r.recallable != 0 {
			t.Errorf("%s %s: %d recallable without a spill store", r.session, r.mode, r.recallable)
		}
		if spills {
			spilled += r.recallable
		}
	}
	if naiveLost == 0 {
		t.Error("the naive trimmer lost no planted fact")
	}
	if spilled == 0 {
		t.Error("nothing was recallable after spilling")
	}
}

// TestMeasureDeterministic runs the small cut twice.
func TestMeasureDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the small cut twice")
	}
	a, b := measureSmall(t), measureSmall(t)
	for i := range a {
		a[i].err, b[i].err = nil, nil
	}
	if !slices.Equal(a, b) {
		t.Errorf("two runs differ:\n%v\n%v", a, b)
	}
}

func TestGeneratedDeterministic(t *testing.T) {
	if a, b := genSession(3, 30), genSession(3, 30); !bytes.Equal(a, b) {
		t.Error("the generator gave two sessions for one seed")
	}
	if bytes.Equal(genSession(3, 30), genSession(4, 30)) {
		t.Error("two seeds gave one session")
	}
}

// TestRun runs the command on one generated session and checks its
// table.
func TestRun(t *testing.T) {
	var out, errs bytes.Buffer
	code := run([]string{"-transcripts", "", "-generated", "1", "-cuts", "0.5", "-budgets", "0.5"}, &out, &errs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, m := range modes {
		if !strings.Contains(out.String(), "| "+m.name+" | 50% | 1 |") {
			t.Errorf("no row for %s in\n%s", m.name, out.String())
		}
	}
	if code := run([]string{"-budgets", "2"}, &out, &errs); code != 2 {
		t.Errorf("a budget of 2 exits %d, want 2", code)
	}
}

// TestHoldsFacts: the budget holds the used facts when, beside what the
// output kept as the past had it, there is room for each fact the kept
// part does not show; a budget one token short does not.
func TestHoldsFacts(t *testing.T) {
	s := chatSession(t, [][2]string{
		{"system", "You help."},
		{"user", "Ticket INC-4711 and REF-9999, " + strings.Repeat("words ", 40)},
		{"assistant", "Noted INC-4711."},
		{"user", "next"},
	})
	past := s.body
	b, err := wire.Read(past, wire.OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Remove([]int{1, 2}); err != nil { // the output keeps the system prompt and the last turn
		t.Fatal(err)
	}
	out, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	used := []usedFact{{Fact: factOf(t, "INC-4711")}, {Fact: factOf(t, "REF-9999")}}
	need := wire.Tokens(b, nil) + (len("INC-4711; REF-9999; ")+3)/4 // written together, each with a separator
	for budget, want := range map[int]bool{need: true, need - 1: false} {
		got, err := holdsFacts(past, out, wire.OpenAIChat, budget, used)
		if err != nil || got != want {
			t.Errorf("budget %d (need %d): %v, %v; want %v", budget, need, got, err, want)
		}
	}
	// A fact the kept part shows costs nothing.
	if got, _ := holdsFacts(past, past, wire.OpenAIChat, wire.Tokens(mustRead(t, past), nil), used); !got {
		t.Error("the whole past within its own tokens does not hold its facts")
	}
}

func factOf(t *testing.T, text string) facts.Fact {
	t.Helper()
	for _, f := range facts.Extract(text) {
		if f.Text == text {
			return f
		}
	}
	t.Fatalf("no fact %q", text)
	return facts.Fact{}
}

func mustRead(t *testing.T, body []byte) *wire.Body {
	t.Helper()
	b, err := wire.Read(body, wire.OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

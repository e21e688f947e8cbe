package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// A chat of text only: what leaves to fit a budget is text a person or the
// model wrote, which --text decides.
var textChat = `{"model":"m","messages":[` +
	`{"role":"system","content":"be brief"},` +
	`{"role":"user","content":"the task"},` +
	`{"role":"assistant","content":"` + strings.Repeat("first answer ", 40) + `"},` +
	`{"role":"user","content":"` + strings.Repeat("second question ", 40) + `"},` +
	`{"role":"assistant","content":"second answer"},` +
	`{"role":"user","content":"third question"}]}`

func TestPruneText(t *testing.T) {
	// Irreducible by default: the long text in the middle is refused,
	// exit 3. (The wire layer pins the system prompt, the task and the
	// last user message whatever --text says.)
	code, _, errs := runCmd(t, textChat, "prune", "--budget", "100", "-")
	r := report(t, errs)
	if code != 3 || r.Text != "irreducible" || r.WithinBudget {
		t.Errorf("default = %d %+v", code, r)
	}
	irreducible := map[int]bool{}
	for _, f := range r.Refused {
		if f.Gate == "regen" && f.Code == "irreducible" {
			for _, i := range f.Indexes {
				irreducible[i] = true
			}
		}
	}
	if !irreducible[2] || !irreducible[3] {
		t.Errorf("default refusals %+v, want indexes 2 and 3 irreducible", r.Refused)
	}
	for _, u := range r.Evicted {
		for _, i := range u.Indexes {
			if i == 2 || i == 3 {
				t.Errorf("default evicted %+v", u)
			}
		}
	}
	// Reconstructible: the long text goes, the rest stays, exit 0.
	code, out, errs := runCmd(t, textChat, "prune", "--budget", "100", "--text", "reconstructible", "-")
	r = report(t, errs)
	if code != 0 || r.Text != "reconstructible" || !r.WithinBudget || r.OutputTokens > 100 {
		t.Fatalf("reconstructible = %d %+v", code, r)
	}
	var got []int
	for _, u := range r.Evicted {
		got = append(got, u.Indexes...)
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("evicted indexes %v, want [2 3]", got)
	}
	for _, f := range r.Refused {
		if f.Gate == "regen" {
			t.Errorf("reconstructible refusal %+v", f)
		}
	}
	if v, err := wire.Validate([]byte(out), wire.OpenAIChat); err != nil || len(v) > 0 {
		t.Errorf("pruned body: %v %v", v, err)
	}
	var b struct{ Messages []json.RawMessage }
	if err := json.Unmarshal([]byte(out), &b); err != nil || len(b.Messages) != 4 {
		t.Errorf("pruned body has %d messages (%v): %s", len(b.Messages), err, out)
	}
	// An unknown class is bad input.
	if code, out, errs := runCmd(t, textChat, "prune", "--budget", "100", "--text", "regenerable", "-"); code != 2 || out != "" || !strings.Contains(errs, "--text") {
		t.Errorf("--text regenerable = %d %q %q", code, out, errs)
	}
}

package main

import (
	"slices"
	"testing"
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

package wire_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

func TestReportString(t *testing.T) {
	pruned := pruneguard.Result{Outcome: pruneguard.Pruned}
	cases := []struct {
		rep  wire.Report
		want string
	}{
		{wire.Report{Before: 1200, After: 1200}, "1200 tokens, under the trigger: sent as the history stands"},
		{wire.Report{Before: 1200, After: 1200, Reset: true}, "1200 tokens, under the trigger: sent as the history stands, the history started over"},
		{wire.Report{Before: 4210, After: 2980, Guarded: true, Result: pruned, Evicted: []pruneguard.MessageID{"m3", "m4"},
			Stubbed: []pruneguard.MessageID{"m7"}, Refusals: make([]wire.Refusal, 2)},
			"4210 tokens, over the trigger: pruned to 2980, evicted m3 m4, stubbed m7, 2 refused"},
		{wire.Report{Before: 900, After: 700, Guarded: true, Result: pruneguard.Result{Outcome: pruneguard.UnderBudget},
			Stubbed: []pruneguard.MessageID{"m2"}}, "900 tokens, under the trigger: pruned to 700, stubbed m2"},
		{wire.Report{Before: 5000, After: 5000, Guarded: true, Result: pruneguard.Result{Outcome: pruneguard.Deferred},
			Refusals: make([]wire.Refusal, 1)}, "5000 tokens, over the trigger: nothing pruned, 1 refused"},
		{wire.Report{Before: 5000, After: 3000, Guarded: true, Result: pruned, Evicted: []pruneguard.MessageID{"m1", "m2", "m3"},
			Withdrawn: []string{"grep"}, Restored: []string{"read_file"},
			Summarized: []wire.Summarized{{Replaced: []pruneguard.MessageID{"m1", "m2", "m3"}}}},
			"5000 tokens, over the trigger: pruned to 3000, evicted m1 m2 m3, withdrew grep, restored read_file, summarized 3 messages in 1 summary"},
	}
	for _, c := range cases {
		if got := c.rep.String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// A session's report says what it did to a request, in one line.
func ExampleReport_String() {
	s, err := wire.NewSession(wire.SessionConfig{
		Dialect: wire.OpenAIChat,
		Guard:   pruneguard.Guard{Budget: 300},
		Config:  pruneguard.Config{TextClass: pruneguard.Reconstructible},
	})
	if err != nil {
		panic(err)
	}
	_, _ = s.Append(json.RawMessage(`{"role":"user","content":"Start."}`))
	for i := range 6 {
		_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"Step %d: %s"}`, i, strings.Repeat("note ", 40))))
		_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"Next %d."}`, i)))
		_, rep, err := s.Request()
		if err != nil {
			panic(err)
		}
		fmt.Println(rep)
	}
	// Output:
	// 83 tokens, under the trigger: sent as the history stands
	// 153 tokens, under the trigger: sent as the history stands
	// 223 tokens, under the trigger: sent as the history stands
	// 293 tokens, under the trigger: sent as the history stands
	// 363 tokens, over the trigger: pruned to 293, evicted m1 m2
	// 363 tokens, over the trigger: pruned to 293, evicted m3 m4
}

package wiretest_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// TestReports: reports added at once are all kept, the guarded ones and
// the summaries counted, and each error comes back naming its
// conversation and matching what was reported.
func TestReports(t *testing.T) {
	var r wiretest.Reports
	if r.Err() != nil || r.Guarded() != 0 || len(r.List()) != 0 {
		t.Fatalf("a zero Reports holds something")
	}
	boom := errors.New("boom")
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := wire.Report{Before: i, Guarded: i%4 == 0}
			if i%10 == 0 {
				rep.Summarized = make([]wire.Summarized, 2)
			}
			var err error
			if i == 7 {
				err = boom
			}
			r.Add("conv-1", rep, err)
		}()
	}
	wg.Wait()
	if len(r.List()) != 40 || r.Guarded() != 10 || r.Summaries() != 8 {
		t.Errorf("%d reports, %d guarded, %d summaries; want 40, 10, 8", len(r.List()), r.Guarded(), r.Summaries())
	}
	if err := r.Err(); !errors.Is(err, boom) || !strings.Contains(err.Error(), `"conv-1"`) {
		t.Errorf("Err() = %v", err)
	}
	if err := r.Check(39); err == nil || !errors.Is(err, boom) || strings.Count(err.Error(), "over 39") != 0 {
		t.Errorf("Check(39) = %v, want the error alone", err)
	}
}

// TestCheck: Check names each request sent over the limit, and is nil
// when none was and nothing failed.
func TestCheck(t *testing.T) {
	var r wiretest.Reports
	for _, after := range []int{100, 300, 200, 400} {
		r.Add("c", wire.Report{After: after}, nil)
	}
	if err := r.Check(400); err != nil {
		t.Errorf("Check(400) = %v", err)
	}
	err := r.Check(200)
	if err == nil || !strings.Contains(err.Error(), "request 1 sent with 300 tokens, over 200") || !strings.Contains(err.Error(), "request 3 sent with 400") || strings.Contains(err.Error(), "request 2") {
		t.Errorf("Check(200) = %v", err)
	}
}

// TestCheckRun: CheckRun holds a run's reports to the bodies the provider
// received, and names each way they part.
func TestCheckRun(t *testing.T) {
	p := wiretest.Start(t)
	body := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hello there"}}}
	post(t, p, "/v1/chat/completions", body)
	post(t, p, "/v1/chat/completions", body)
	n := wire.Tokens(p.Read(0), nil)
	good := func() *wiretest.Reports {
		var r wiretest.Reports
		r.Add("c", wire.Report{Before: n, After: n, Guarded: true}, nil)
		r.Add("c", wire.Report{Before: n, After: n}, nil)
		return &r
	}
	if err := good().CheckRun(p, 2, n); err != nil {
		t.Errorf("a run as the provider saw it: %v", err)
	}
	for name, c := range map[string]struct {
		r     *wiretest.Reports
		n     int
		limit int
		want  string
	}{
		"count": {good(), 3, n, "want 3"},
		"limit": {good(), 2, n - 1, "over"},
		"guarded": {func() *wiretest.Reports {
			var r wiretest.Reports
			r.Add("c", wire.Report{After: n}, nil)
			r.Add("c", wire.Report{After: n}, nil)
			return &r
		}(), 2, n, "no request was guarded"},
	} {
		if err := c.r.CheckRun(p, c.n, c.limit); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckRun = %v, want an error with %q", name, err, c.want)
		}
	}
	var off wiretest.Reports
	off.Add("c", wire.Report{After: n + 5, Guarded: true}, nil)
	off.Add("c", wire.Report{After: n}, nil)
	if err := off.CheckRun(p, 2, n+5); err == nil || !strings.Contains(err.Error(), "request 0: the report says") {
		t.Errorf("a report whose tokens are not the body's: CheckRun = %v", err)
	}
}

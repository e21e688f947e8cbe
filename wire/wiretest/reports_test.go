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

package anthropic_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/middleware/anthropic"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// TestCompaction: with Guard.Summarizer in the session's configuration,
// the middleware compacts: the provider gets valid bodies (its user
// turns merged as the API merges them) with a summary in the place of
// the oldest turns, every ticket the tool results gave is still in the
// body sent (the tool is not annotated: irreducible, so the summary
// carries them), and the reports list the summaries.
func TestCompaction(t *testing.T) {
	p := wiretest.Start(t)
	cfg := wire.SessionConfig{Guard: pruneguard.Guard{Budget: 3000, Summarizer: pruneguard.Digest{}}, Trigger: 4000}
	var reports wiretest.Reports
	mw, err := anthropic.New(anthropic.Config{Session: cfg, OnReport: reports.Add})
	if err != nil {
		t.Fatal(err)
	}
	c := client(p, mw.Option())
	tickets := 0
	agentLoop(t, context.Background(), 16, func(int) sdk.Client { return c }, func() string {
		tickets++
		return fmt.Sprintf("ticket INC-%d is open.\n", 4700+tickets) + codeLines()
	})
	if err := reports.Check(4000); err != nil { // none over the trigger
		t.Error(err)
	}
	if reports.Summaries() == 0 {
		t.Fatal("no compaction")
	}
	last := string(p.Body(p.Count() - 1))
	if !strings.Contains(last, "[Summary of") {
		t.Errorf("the last body holds no summary")
	}
	for k := 1; k <= tickets; k++ {
		if !strings.Contains(last, fmt.Sprintf("INC-%d", 4700+k)) {
			t.Errorf("ticket INC-%d left the body", 4700+k)
		}
	}
}

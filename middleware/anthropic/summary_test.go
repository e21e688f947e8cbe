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
	params := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: []sdk.ToolUnionParam{readFile},
		System: []sdk.TextBlockParam{{Text: "You read files."}}}
	tickets := 0
	for turn := range 16 {
		params.Messages = append(params.Messages, sdk.NewUserMessage(sdk.NewTextBlock(fmt.Sprintf("turn %d: read the next file", turn))))
		for {
			res, err := c.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			params.Messages = append(params.Messages, res.ToParam())
			var results []sdk.ContentBlockParamUnion
			for _, blk := range res.Content {
				if blk.Type == "tool_use" {
					tickets++
					results = append(results, sdk.NewToolResultBlock(blk.ID, fmt.Sprintf("ticket INC-%d is open.\n", 4700+tickets)+strings.Repeat("code line\n", 300), false))
				}
			}
			if len(results) == 0 {
				break
			}
			params.Messages = append(params.Messages, sdk.NewUserMessage(results...))
		}
	}
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

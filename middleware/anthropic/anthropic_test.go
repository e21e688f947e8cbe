package anthropic_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/middleware/anthropic"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// client sends to the fake provider p through the options given.
func client(p *wiretest.Provider, opts ...option.RequestOption) sdk.Client {
	return sdk.NewClient(append([]option.RequestOption{option.WithBaseURL(p.URL()), option.WithAPIKey("test"), option.WithMaxRetries(2)}, opts...)...)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var regenerable = wire.SessionConfig{Unannotated: wire.UnannotatedRegenerable,
	Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}

var readFile = sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: "read_file",
	InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}, Required: []string{"path"}}}}

// agentLoop runs an agent loop of a turn per file read, in the
// conversation ctx names (if any), request i through clientOf(i), each
// tool result made by result; it returns how many requests it sent.
func agentLoop(t *testing.T, ctx context.Context, turns int, clientOf func(i int) sdk.Client, result func() string) int {
	t.Helper()
	params := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: []sdk.ToolUnionParam{readFile},
		System: []sdk.TextBlockParam{{Text: "You read files."}}}
	n := 0
	for turn := range turns {
		params.Messages = append(params.Messages, sdk.NewUserMessage(sdk.NewTextBlock(fmt.Sprintf("turn %d: read the next file", turn))))
		for {
			c := clientOf(n)
			res, err := c.Messages.New(ctx, params)
			n++
			if err != nil {
				t.Fatal(err)
			}
			params.Messages = append(params.Messages, res.ToParam())
			var results []sdk.ContentBlockParamUnion
			for _, blk := range res.Content {
				if blk.Type == "tool_use" {
					results = append(results, sdk.NewToolResultBlock(blk.ID, result(), false))
				}
			}
			if len(results) == 0 {
				break
			}
			params.Messages = append(params.Messages, sdk.NewUserMessage(results...))
		}
	}
	return n
}

// codeLines is a file's content, large enough that a few fill a budget.
func codeLines() string { return strings.Repeat("code line\n", 300) }

// TestAgentLoop runs a tool-using agent loop through the real client:
// every body the provider gets is valid, none is over the trigger, and
// pruning happened.
func TestAgentLoop(t *testing.T) {
	p := wiretest.Start(t)
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 3000}
	cfg.Trigger, cfg.MinClear = 4000, 1200
	var reports wiretest.Reports
	mw, err := anthropic.New(anthropic.Config{Session: cfg, OnReport: reports.Add})
	if err != nil {
		t.Fatal(err)
	}
	c := client(p, mw.Option())
	agentLoop(t, context.Background(), 20, func(int) sdk.Client { return c }, codeLines)
	if err := reports.CheckRun(p, 40, 4000); err != nil { // none over the trigger
		t.Fatal(err)
	}
	if last := p.Body(p.Count() - 1); !bytes.Contains(last, []byte("turn 0: read")) || !bytes.Contains(last, []byte("You read files.")) {
		t.Errorf("the task or the system prompt left the history")
	}
}

// TestRefusal: a history the provider would reject is not sent; the
// error names the rule and is not retried.
func TestRefusal(t *testing.T) {
	p := wiretest.Start(t)
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 100_000}
	mw, err := anthropic.New(anthropic.Config{Session: cfg})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	counter := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		calls++
		return next(r)
	})
	c := client(p, counter, mw.Option())
	_, err = c.Messages.New(context.Background(), sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Tools: []sdk.ToolUnionParam{readFile},
		Messages: []sdk.MessageParam{
			sdk.NewUserMessage(sdk.NewTextBlock("read it")),
			sdk.NewAssistantMessage(sdk.NewToolUseBlock("toolu_1", map[string]any{"path": "a"}, "read_file")),
			sdk.NewUserMessage(sdk.NewTextBlock("never mind")),
		}})
	var re *wire.RuleError
	if !errors.As(err, &re) || re.Rules()[0] != wire.RuleAnthropicToolUseWithoutResult {
		t.Fatalf("err %v, want a *wire.RuleError for %s", err, wire.RuleAnthropicToolUseWithoutResult)
	}
	if p.Count() != 0 || calls != 1 {
		t.Errorf("%d bodies sent, middleware ran %d times", p.Count(), calls)
	}
}

// TestCacheRule: over a 200-turn conversation with a small budget, the
// sticky middleware changes the pruned prefix on far fewer requests than
// the middleware pruning every turn.
func TestCacheRule(t *testing.T) {
	const turns, budget = 200, 2000
	run := func(trigger, minClear int) (int, *wiretest.Provider) {
		p := wiretest.Start(t)
		cfg := regenerable
		cfg.Guard = pruneguard.Guard{Budget: budget}
		cfg.Trigger, cfg.MinClear = trigger, minClear
		mw, err := anthropic.New(anthropic.Config{Session: cfg})
		if err != nil {
			t.Fatal(err)
		}
		c := client(p, mw.Option())
		params := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256, System: []sdk.TextBlockParam{{Text: "Answer briefly."}}}
		var grew []int
		prev := 0
		for turn := range turns {
			params.Messages = append(params.Messages, sdk.NewUserMessage(sdk.NewTextBlock(fmt.Sprintf("question %d: %s", turn, strings.Repeat("more ", 20)))))
			grew = append(grew, len(params.Messages)-prev)
			prev = len(params.Messages)
			res, err := c.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			params.Messages = append(params.Messages, res.ToParam())
		}
		return p.CacheBreaks(grew), p
	}
	sticky, _ := run(3000, 1000)
	everyTurn, _ := run(0, 0)
	t.Logf("%d turns, budget %d: pruned prefix changed on %d requests with trigger 3000 and MinClear 1000, %d pruning every turn", turns, budget, sticky, everyTurn)
	if sticky == 0 || sticky*5 > everyTurn {
		t.Errorf("sticky %d, every turn %d", sticky, everyTurn)
	}
}

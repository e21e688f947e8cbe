// Command anthropic-middleware runs an agent loop with the official
// Anthropic Go SDK against a fake provider in the same process (no
// network), with pruneguard's middleware guarding every request, and
// prints what the middleware did to each one.
//
// The agent greps a repository each turn; the results are large, so the
// history crosses the trigger every few turns. The policy evicts whole
// tool uses, oldest first: the assistant turn with the tool_use and the
// user turn with its tool_result go together, so the history keeps
// alternating and every tool_use keeps its result. Between prunes the
// requests keep the pruned prefix, so the provider's prompt cache holds.
// At the end the runtime sends a broken history, a tool_use whose result
// it forgot, and the middleware refuses it before it leaves.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pruneguard/pruneguard"
	anthropicguard "github.com/pruneguard/pruneguard/middleware/anthropic"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	provider := wiretest.NewProvider(wiretest.Config{Reply: answer})
	defer provider.Close()

	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	n := 0
	mw, err := anthropicguard.New(anthropicguard.Config{
		Session: wire.SessionConfig{
			Guard:    pruneguard.Guard{Budget: 2500, Policy: pruneguard.OldestFirst{}},
			Trigger:  3500,
			MinClear: 1000,
			Manifest: &wire.Manifest{Tools: []wire.ManifestTool{{Name: "grep", Annotations: &closed}}},
			// The conversation's own words may go too; the task stays pinned.
			Config: pruneguard.Config{TextClass: pruneguard.Reconstructible},
		},
		OnReport: func(conversation string, rep wire.Report, err error) {
			n++
			fmt.Fprintln(w, describe(n, rep, err))
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "budget 2500 tokens, trigger 3500, at least 1000 freed per prune; policy: oldest units first, a tool_use with its tool_result")
	client := anthropic.NewClient(option.WithBaseURL(provider.URL()), option.WithAPIKey("none"), mw.Option())

	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You find where things are defined. Use grep."}},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "grep", Description: anthropic.String("Search the repository."),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"pattern": map[string]any{"type": "string"}}, Required: []string{"pattern"}}}}},
	}
	for turn := 1; turn <= 6; turn++ {
		params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("Where is Handler%d defined?", turn))))
		for {
			res, err := client.Messages.New(ctx, params)
			if err != nil {
				return err
			}
			params.Messages = append(params.Messages, res.ToParam())
			var results []anthropic.ContentBlockParamUnion
			for _, blk := range res.Content {
				if blk.Type == "tool_use" {
					results = append(results, anthropic.NewToolResultBlock(blk.ID, grepOutput(blk.Input), false))
				}
			}
			if len(results) == 0 {
				break
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
		}
	}

	// A runtime bug: the model's last tool_use is sent without its
	// result. The API would answer 400; the middleware refuses it first.
	broken := params
	broken.Messages = append(append([]anthropic.MessageParam{}, params.Messages...),
		anthropic.NewUserMessage(anthropic.NewTextBlock("One more: where is Server defined?")),
		anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_lost", map[string]any{"pattern": "type Server"}, "grep")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("Never mind.")))
	_, err = client.Messages.New(ctx, broken)
	var re *wire.RuleError
	if !errors.As(err, &re) {
		return fmt.Errorf("the broken history was not refused: %v", err)
	}
	return provider.Err() // a body the API would have refused
}

// describe writes one line on what the middleware did to a request.
func describe(n int, rep wire.Report, err error) string {
	var re *wire.RuleError
	if errors.As(err, &re) {
		return fmt.Sprintf("request %2d: refused, not sent: %s", n, re.Violations[0])
	}
	if err != nil {
		return fmt.Sprintf("request %2d: error: %v", n, err)
	}
	return fmt.Sprintf("request %2d: %v", n, rep)
}

// grepOutput is what grep finds for a call's pattern: long enough that a
// few results fill the budget.
func grepOutput(input json.RawMessage) string {
	var a struct{ Pattern string }
	_ = json.Unmarshal(input, &a)
	var b strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "pkg/server/file%d.go:%d: // mentions %s\n", i, i*7, a.Pattern)
	}
	return b.String()
}

// answer is the fake provider's model: a request ending on the user's
// question gets a grep call, one ending on tool results gets a short
// answer. The provider checks every body as the real API would.
func answer(r wiretest.Request) wiretest.Answer {
	msgs := r.Body.Messages
	question := ""
	for _, m := range msgs {
		if m.Role == "user" && len(m.Results) == 0 && len(m.Texts) > 0 {
			question = m.Texts[0]
		}
	}
	var turn int
	fmt.Sscanf(question, "Where is Handler%d defined?", &turn)
	if len(msgs[len(msgs)-1].Results) == 0 {
		return wiretest.Answer{Call: &wiretest.ToolCall{ID: fmt.Sprintf("toolu_%d", turn), Name: "grep",
			Input: map[string]any{"pattern": fmt.Sprintf("func Handler%d", turn)}}}
	}
	return wiretest.Answer{Text: fmt.Sprintf("Handler%d is defined in pkg/server/file%d.go.", turn, turn)}
}

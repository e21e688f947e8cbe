// Command openai-middleware runs an agent loop with the official OpenAI Go
// SDK against a fake provider in the same process (no network), with
// pruneguard's middleware guarding every request, and prints what the
// middleware did to each one.
//
// The agent reads a file per turn; the results are large, so the history
// crosses the trigger every few turns. The policy clears all but the last
// two tool results, leaving the calls and a stub in their place (as
// Anthropic's clear_tool_uses edit does); between prunes the requests
// keep the pruned prefix, so the provider's prompt cache holds. At the
// end the runtime sends a broken history, a tool message whose call it
// dropped, and the middleware refuses it before it leaves.
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

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pruneguard/pruneguard"
	openaiguard "github.com/pruneguard/pruneguard/middleware/openai"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	provider := wiretest.NewProvider(wiretest.Config{Reply: review})
	defer provider.Close()

	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	n := 0
	mw, err := openaiguard.New(openaiguard.Config{
		Session: wire.SessionConfig{
			Guard:    pruneguard.Guard{Budget: 2500, Policy: pruneguard.KeepLastToolUses{Keep: 2, Stub: true}},
			Trigger:  3500,
			MinClear: 800,
			Manifest: &wire.Manifest{Tools: []wire.ManifestTool{{Name: "read_file", Annotations: &closed}}},
		},
		OnReport: func(conversation string, rep wire.Report, err error) {
			n++
			fmt.Fprintln(w, describe(n, rep, err))
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "budget 2500 tokens, trigger 3500, at least 800 freed per prune; policy: keep the last 2 tool results, stub the others")
	client := openai.NewClient(option.WithBaseURL(provider.URL()+"/v1"), option.WithAPIKey("none"), mw.Option())

	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model: openai.ChatModelGPT4o,
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "read_file", Description: openai.String("Read a file of the repository."),
			Parameters: openai.FunctionParameters{"type": "object",
				"properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}},
		})},
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a code reviewer. Read the files you are asked about."),
		},
	}
	for turn := 1; turn <= 6; turn++ {
		params.Messages = append(params.Messages, openai.UserMessage(fmt.Sprintf("Review file %d.", turn)))
		for {
			res, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return err
			}
			msg := res.Choices[0].Message
			params.Messages = append(params.Messages, msg.ToParam())
			if len(msg.ToolCalls) == 0 {
				break
			}
			for _, call := range msg.ToolCalls {
				params.Messages = append(params.Messages, openai.ToolMessage(fileText(call.Function.Arguments), call.ID))
			}
		}
	}

	// A runtime bug: the assistant message with the call is dropped, its
	// result is kept. The provider would answer 400; the middleware
	// refuses it before it is sent.
	broken := params
	broken.Messages = append([]openai.ChatCompletionMessageParamUnion{params.Messages[0], params.Messages[1]}, params.Messages[3:]...)
	_, err = client.Chat.Completions.New(ctx, broken)
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

// fileText is the content of the file a call asks for: long enough that
// a few of them fill the budget.
func fileText(args string) string {
	var a struct{ Path string }
	_ = json.Unmarshal([]byte(args), &a)
	var b strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "%s:%d: func step%d(ctx context.Context) error { return nil }\n", a.Path, i, i)
	}
	return b.String()
}

// review is the fake provider's model: a request ending on a user
// message gets a read_file call, one ending on a tool result gets a short
// review. The provider checks every body as the real API would.
func review(r wiretest.Request) wiretest.Answer {
	msgs := r.Body.Messages
	turn := 0
	for _, m := range msgs {
		if m.Role == "user" {
			turn++
		}
	}
	if msgs[len(msgs)-1].Role == "user" {
		return wiretest.Answer{Call: &wiretest.ToolCall{ID: fmt.Sprintf("call_%d", turn), Name: "read_file",
			Input: map[string]any{"path": fmt.Sprintf("file%d.go", turn)}}}
	}
	return wiretest.Answer{Text: fmt.Sprintf("File %d looks fine.", turn)}
}

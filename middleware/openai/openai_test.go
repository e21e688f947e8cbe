package openai_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/middleware/openai"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// client sends to the fake provider p through the options given.
func client(p *wiretest.Provider, opts ...option.RequestOption) sdk.Client {
	return sdk.NewClient(append([]option.RequestOption{option.WithBaseURL(p.URL() + "/v1"), option.WithAPIKey("test")}, opts...)...)
}

var readFile = sdk.ChatCompletionFunctionTool(sdkFunction("read_file"))

func sdkFunction(name string) sdk.FunctionDefinitionParam {
	return sdk.FunctionDefinitionParam{Name: name, Parameters: sdk.FunctionParameters{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}}
}

// agentLoop runs an agent loop of a turn per file read, in the
// conversation ctx names (if any), request i through clientOf(i), each
// tool result made by result; it returns how many requests it sent.
func agentLoop(t *testing.T, ctx context.Context, turns int, clientOf func(i int) sdk.Client, result func() string) int {
	t.Helper()
	params := sdk.ChatCompletionNewParams{Model: sdk.ChatModelGPT4o, Tools: []sdk.ChatCompletionToolUnionParam{readFile},
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage("You read files.")}}
	n := 0
	for turn := range turns {
		params.Messages = append(params.Messages, sdk.UserMessage(fmt.Sprintf("turn %d: read the next file", turn)))
		for {
			c := clientOf(n)
			res, err := c.Chat.Completions.New(ctx, params)
			n++
			if err != nil {
				t.Fatal(err)
			}
			msg := res.Choices[0].Message
			params.Messages = append(params.Messages, msg.ToParam())
			if len(msg.ToolCalls) == 0 {
				break
			}
			for _, tc := range msg.ToolCalls {
				params.Messages = append(params.Messages, sdk.ToolMessage(result(), tc.ID))
			}
		}
	}
	return n
}

// codeLines is a file's content, large enough that a few fill a budget.
func codeLines() string { return strings.Repeat("code line\n", 300) }

var regenerable = wire.SessionConfig{Unannotated: wire.UnannotatedRegenerable,
	Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}

// TestAgentLoop runs a tool-using agent loop through the real client: every
// body the provider gets is valid, and none is over the trigger.
func TestAgentLoop(t *testing.T) {
	p := wiretest.Start(t)
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 3000}
	cfg.Trigger, cfg.MinClear = 4000, 1200
	var reports wiretest.Reports
	mw, err := openai.New(openai.Config{Session: cfg, OnReport: reports.Add})
	if err != nil {
		t.Fatal(err)
	}
	c := client(p, mw.Option())
	agentLoop(t, context.Background(), 20, func(int) sdk.Client { return c }, codeLines)
	if err := reports.CheckRun(p, 40, 4000); err != nil { // none over the trigger
		t.Error(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRefusal: a history the provider would reject is not sent; the
// error names the rule and is not retried.
func TestRefusal(t *testing.T) {
	p := wiretest.Start(t)
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 100_000}
	mw, err := openai.New(openai.Config{Session: cfg})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	counter := option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		calls++
		return next(r)
	})
	c := client(p, counter, mw.Option())
	_, err = c.Chat.Completions.New(context.Background(), sdk.ChatCompletionNewParams{Model: sdk.ChatModelGPT4o,
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("hi"), sdk.ToolMessage("orphan", "call_x")}})
	var re *wire.RuleError
	if !errors.As(err, &re) || re.Rules()[0] != wire.RuleChatOrphanToolMessage {
		t.Fatalf("err %v, want a *wire.RuleError for %s", err, wire.RuleChatOrphanToolMessage)
	}
	if p.Count() != 0 || calls != 1 {
		t.Errorf("%d bodies sent, middleware ran %d times", p.Count(), calls)
	}
	if _, err := openai.New(openai.Config{}); !errors.Is(err, wire.ErrSessionConfig) {
		t.Errorf("no budget: %v", err)
	}
}

// TestResponses guards a Responses conversation through the real client.
func TestResponses(t *testing.T) {
	p := wiretest.Start(t)
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 1500}
	mw, err := openai.New(openai.Config{Session: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := client(p, mw.Option())
	fn := responses.ToolParamOfFunction("read_file", map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}, false)
	var input responses.ResponseInputParam
	for turn := range 12 {
		input = append(input, responses.ResponseInputItemParamOfMessage(fmt.Sprintf("turn %d", turn), responses.EasyInputMessageRoleUser))
		for {
			res, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4o",
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: []responses.ToolUnionParam{fn}})
			if err != nil {
				t.Fatal(err)
			}
			item := res.Output[0]
			if item.Type == "function_call" {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(item.Arguments.OfString, item.CallID, item.Name),
					callOutput(item.CallID, strings.Repeat("line\n", 200)))
				continue
			}
			input = append(input, responses.ResponseInputItemParamOfOutputMessage(
				[]responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{Text: item.Content[0].Text}}},
				item.ID, responses.ResponseOutputMessageStatusCompleted))
			break
		}
	}
	last := p.Body(p.Count() - 1)
	if n := wire.Tokens(p.Read(p.Count()-1), nil); n > 1500 {
		t.Errorf("last request %d tokens, over budget", n)
	}
	if !bytes.Contains(last, []byte(`"turn 0"`)) {
		t.Errorf("the task left the history")
	}
}

func callOutput(callID, text string) responses.ResponseInputItemUnionParam {
	out := responses.ResponseInputItemParamOfFunctionCallOutput(text)
	out.OfFunctionCallOutput.CallID = sdk.String(callID)
	return out
}

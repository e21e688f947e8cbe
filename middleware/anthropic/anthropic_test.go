package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/middleware/anthropic"
	"github.com/pruneguard/pruneguard/wire"
)

// provider plays the Anthropic Messages API: it checks every body it
// receives with wire.Validate, records it, and answers a user turn with a
// tool_use (when the request declares tools) and tool results with text.
type provider struct {
	t      *testing.T
	mu     sync.Mutex
	bodies [][]byte
	srv    *httptest.Server
}

func newProvider(t *testing.T) *provider {
	p := &provider{t: t}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if d, ok := wire.RequestDialect(r.Method, r.URL.Path); !ok || d != wire.Anthropic {
		http.Error(w, "unknown path "+r.URL.Path, http.StatusNotFound)
		return
	}
	if vs, err := wire.Validate(body, wire.Anthropic); err != nil || len(vs) > 0 {
		p.t.Errorf("the provider got a body it would reject: %v %v", err, vs)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"invalid"}}`, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.bodies = append(p.bodies, body)
	n := len(p.bodies)
	p.mu.Unlock()
	b, _ := wire.Read(body, wire.Anthropic)
	last := b.Messages[len(b.Messages)-1]
	content := []any{map[string]any{"type": "text", "text": fmt.Sprintf("answer %d: %s", n, strings.Repeat("words ", 20))}}
	stop := "end_turn"
	if len(last.Results) == 0 && len(b.Tools()) > 0 {
		content = []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": "read_file",
			"input": map[string]any{"path": fmt.Sprintf("file%d.go", n)}}}
		stop = "tool_use"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
		"model": "claude-sonnet-4-5", "content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
}

func (p *provider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

func (p *provider) body(i int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[i]
}

func client(p *provider, opts ...option.RequestOption) sdk.Client {
	return sdk.NewClient(append([]option.RequestOption{option.WithBaseURL(p.srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(2)}, opts...)...)
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

// TestAgentLoop runs a tool-using agent loop through the real client:
// every body the provider gets is valid, none is over the trigger, and
// pruning happened.
func TestAgentLoop(t *testing.T) {
	p := newProvider(t)
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 3000}
	cfg.Trigger, cfg.MinClear = 4000, 1200
	var reports []wire.Report
	mw, err := anthropic.New(anthropic.Config{Session: cfg, OnReport: func(_ string, rep wire.Report, err error) {
		if err != nil {
			t.Error(err)
		}
		reports = append(reports, rep)
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := client(p, mw.Option())
	params := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: []sdk.ToolUnionParam{readFile},
		System: []sdk.TextBlockParam{{Text: "You read files."}}}
	for turn := range 20 {
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
					results = append(results, sdk.NewToolResultBlock(blk.ID, strings.Repeat("code line\n", 300), false))
				}
			}
			if len(results) == 0 {
				break
			}
			params.Messages = append(params.Messages, sdk.NewUserMessage(results...))
		}
	}
	if p.count() != 40 || len(reports) != 40 {
		t.Fatalf("%d requests reached the provider, %d reports", p.count(), len(reports))
	}
	pruned := 0
	for i, rep := range reports {
		if rep.After > 4000 {
			t.Errorf("request %d sent with %d tokens, over the trigger", i, rep.After)
		}
		if rep.Guarded {
			pruned++
		}
	}
	if pruned == 0 {
		t.Error("nothing was pruned")
	}
	if last := p.body(p.count() - 1); !bytes.Contains(last, []byte("turn 0: read")) || !bytes.Contains(last, []byte("You read files.")) {
		t.Errorf("the task or the system prompt left the history")
	}
}

// TestRefusal: a history the provider would reject is not sent; the
// error names the rule and is not retried.
func TestRefusal(t *testing.T) {
	p := newProvider(t)
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
	if p.count() != 0 || calls != 1 {
		t.Errorf("%d bodies sent, middleware ran %d times", p.count(), calls)
	}
}

// TestCacheRule: over a 200-turn conversation with a small budget, the
// sticky middleware changes the pruned prefix on far fewer requests than
// the middleware pruning every turn.
func TestCacheRule(t *testing.T) {
	const turns, budget = 200, 2000
	run := func(trigger, minClear int) (int, *provider) {
		p := newProvider(t)
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
		breaks := 0
		var last *wire.Body
		for i := range p.count() {
			b := must(wire.Read(p.body(i), wire.Anthropic))
			if last != nil {
				prefix := b.Messages[:len(b.Messages)-grew[i]]
				same := len(prefix) == len(last.Messages)
				for k := 0; same && k < len(prefix); k++ {
					same = bytes.Equal(prefix[k].Raw, last.Messages[k].Raw)
				}
				if !same {
					breaks++
				}
			}
			last = b
		}
		return breaks, p
	}
	sticky, _ := run(3000, 1000)
	everyTurn, _ := run(0, 0)
	t.Logf("%d turns, budget %d: pruned prefix changed on %d requests with trigger 3000 and MinClear 1000, %d pruning every turn", turns, budget, sticky, everyTurn)
	if sticky == 0 || sticky*5 > everyTurn {
		t.Errorf("sticky %d, every turn %d", sticky, everyTurn)
	}
}

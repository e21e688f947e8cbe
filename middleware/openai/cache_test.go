package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/middleware/openai"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// conversation runs a conversation of the given number of turns through a
// client and returns, per request, the number of messages the client's
// history grew by since the request before.
func conversation(t *testing.T, c sdk.Client, turns int) []int {
	t.Helper()
	params := sdk.ChatCompletionNewParams{Model: sdk.ChatModelGPT4o,
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage("You answer briefly.")}}
	var grew []int
	prev := 0
	for turn := range turns {
		params.Messages = append(params.Messages, sdk.UserMessage(fmt.Sprintf("question %d: %s", turn, strings.Repeat("more ", 20))))
		grew = append(grew, len(params.Messages)-prev)
		prev = len(params.Messages)
		res, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		params.Messages = append(params.Messages, res.Choices[0].Message.ToParam())
	}
	return grew
}

// stateless is a guard that knows no conversation: it reads each request
// and prunes it to the budget on its own, every time.
func stateless(budget int) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		b, err := wire.Read(body, wire.OpenAIChat)
		if err != nil {
			return nil, err
		}
		g, err := b.Bind(wire.Options{Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
		if err != nil {
			return nil, err
		}
		if _, _, err := g.Check(pruneguard.Guard{Budget: budget}); err != nil {
			return nil, err
		}
		out, err := g.Body().Marshal()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(out))
		r.ContentLength = int64(len(out))
		r.Header.Set("Content-Length", fmt.Sprint(len(out)))
		return next(r)
	}
}

// TestCacheRule: over a 200-turn conversation with a small budget, the
// sticky middleware (a trigger above the budget, a minimum to clear)
// changes the pruned prefix on far fewer requests than pruning every
// turn, with the middleware at trigger = budget or with a stateless
// guard.
func TestCacheRule(t *testing.T) {
	const turns, budget = 200, 2000
	run := func(opts ...option.RequestOption) (int, *wiretest.Provider) {
		p := wiretest.Start(t)
		grew := conversation(t, client(p, opts...), turns)
		return p.CacheBreaks(grew), p
	}
	sticky := func(trigger, minClear int) option.RequestOption {
		cfg := regenerable
		cfg.Guard = pruneguard.Guard{Budget: budget}
		cfg.Trigger, cfg.MinClear = trigger, minClear
		mw, err := openai.New(openai.Config{Session: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return mw.Option()
	}
	stickyBreaks, p := run(sticky(3000, 1000))
	everyTurn, _ := run(sticky(0, 0))
	perRequest, _ := run(option.WithMiddleware(stateless(budget)))
	t.Logf("%d turns, budget %d: pruned prefix changed on %d requests with trigger 3000 and MinClear 1000, %d with the session pruning every turn (trigger = budget), %d with a stateless per-request guard",
		turns, budget, stickyBreaks, everyTurn, perRequest)
	if stickyBreaks == 0 || stickyBreaks*5 > everyTurn || stickyBreaks*5 > perRequest {
		t.Errorf("sticky %d, every turn %d, per request %d: want the sticky count at most a fifth of the others", stickyBreaks, everyTurn, perRequest)
	}
	for i := range p.Count() {
		if n := wire.Tokens(p.Read(i), nil); n > 3000 {
			t.Errorf("request %d: %d tokens, over the trigger", i, n)
		}
	}
}

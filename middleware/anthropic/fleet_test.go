package anthropic_test

import (
	"context"
	"errors"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/middleware/anthropic"
	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// fleetLoop runs an agent loop of one named conversation, request i
// through clientOf(i), and returns how many requests it made.
func fleetLoop(t *testing.T, clientOf func(i int) sdk.Client) int {
	ctx := anthropic.WithTenant(anthropic.WithConversation(context.Background(), "conv-1"), "acme")
	return agentLoop(t, ctx, 12, clientOf, codeLines)
}

func fleetConfig(store sessions.Store) anthropic.Config {
	cfg := regenerable
	cfg.Guard = pruneguard.Guard{Budget: 3000}
	cfg.Trigger, cfg.MinClear = 4000, 1200
	return anthropic.Config{Session: cfg, Sessions: store}
}

// TestFleet: two middlewares (two replicas) sharing a session store
// serve one conversation in alternation, one of them restarted (a new
// middleware) every few requests, and send the provider exactly the
// bodies one middleware that served the whole conversation sends.
func TestFleet(t *testing.T) {
	var reports wiretest.Reports // the one middleware's
	wiretest.Fleet[sdk.Client]{
		Client: func(p *wiretest.Provider, store sessions.Store) sdk.Client {
			cfg := fleetConfig(store)
			if store == nil { // the one middleware serving alone
				cfg.OnReport = reports.Add
			}
			return client(p, must(anthropic.New(cfg)).Option())
		},
		Loop: func(clientOf func(i int) sdk.Client) int { return fleetLoop(t, clientOf) },
	}.Run(t)
	if reports.Guarded() == 0 {
		t.Error("nothing was pruned")
	}
}

// TestFleetStoreDown: with the session store down, a request is refused
// with a *wire.StoreError and never reaches the provider.
func TestFleetStoreDown(t *testing.T) {
	p := wiretest.Start(t)
	mw := must(anthropic.New(fleetConfig(wiretest.DownStore{})))
	ctx := anthropic.WithConversation(context.Background(), "conv-1")
	c := client(p, mw.Option())
	_, err := c.Messages.New(ctx, sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello"))}})
	if !errors.Is(err, wire.ErrSessionStore) || p.Count() != 0 {
		t.Fatalf("store down: %v, %d requests sent", err, p.Count())
	}
}

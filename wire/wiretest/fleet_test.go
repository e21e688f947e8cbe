package wiretest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// client sends Chat bodies to a provider through a middleware.
type client struct {
	url string
	cs  *wire.Conversations
}

// send posts body as part of the conversation "conv-1" and returns the
// assistant's message.
func (c client) send(body []byte) (map[string]any, error) {
	req, _ := http.NewRequestWithContext(wire.WithConversation(context.Background(), "conv-1"),
		http.MethodPost, c.url+"/v1/chat/completions", bytes.NewReader(body))
	res, err := c.cs.Middleware(req, http.DefaultTransport.RoundTrip)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	var r struct {
		Choices []struct{ Message map[string]any }
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Choices) == 0 {
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, out)
	}
	return r.Choices[0].Message, nil
}

// chatLoop runs twelve turns of a tool-using conversation, request i
// through clientOf(i), and returns how many requests it sent.
func chatLoop(t *testing.T, clientOf func(i int) client) int {
	msgs := []any{map[string]any{"role": "system", "content": "You read files."}}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_file", "parameters": map[string]any{"type": "object"}}}}
	n := 0
	for turn := range 12 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("turn %d: read the next file", turn)})
		for {
			body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs, "tools": tools})
			msg, err := clientOf(n).send(body)
			n++
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, msg)
			calls, _ := msg["tool_calls"].([]any)
			if len(calls) == 0 {
				break
			}
			id := calls[0].(map[string]any)["id"]
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat("code line\n", 300)})
		}
	}
	return n
}

// TestFleet runs Fleet over package wire's own middleware: the replicas
// send what one middleware sends, and the bodies were pruned.
func TestFleet(t *testing.T) {
	guarded := 0
	f := wiretest.Fleet[client]{
		Client: func(p *wiretest.Provider, store sessions.Store) client {
			cs, err := wire.NewConversations(wire.ConversationsConfig{Sessions: store,
				Session: wire.SessionConfig{Guard: pruneguard.Guard{Budget: 3000}, Trigger: 4000, MinClear: 1200,
					Unannotated: wire.UnannotatedRegenerable},
				OnReport: func(_ string, rep wire.Report, _ error) {
					if rep.Guarded && store == nil {
						guarded++
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			return client{p.URL(), cs}
		},
		Loop: func(clientOf func(int) client) int { return chatLoop(t, clientOf) },
	}
	one := f.Run(t)
	if guarded == 0 || one.Count() < 24 || !bytes.Contains(one.Body(one.Count()-1), []byte("turn 11")) {
		t.Errorf("%d requests, %d guarded", one.Count(), guarded)
	}
}

// TestDownStoreRefused: a middleware whose session store is down refuses
// a named conversation's request, and the provider gets nothing.
func TestDownStoreRefused(t *testing.T) {
	p := wiretest.Start(t)
	cs, err := wire.NewConversations(wire.ConversationsConfig{Sessions: wiretest.DownStore{},
		Session: wire.SessionConfig{Guard: pruneguard.Guard{Budget: 3000}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client{p.URL(), cs}.send([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	if !errors.Is(err, wire.ErrSessionStore) || !errors.Is(err, wiretest.ErrStoreDown) || p.Count() != 0 {
		t.Errorf("%v, %d sent", err, p.Count())
	}
}

package wiretest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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

// fleet is a Fleet over package wire's own middleware, its replicas
// keeping their sessions in the store given, or each in its own memory
// with apart set; reports gets the reports of the one middleware.
func fleet(t *testing.T, apart bool, reports *wiretest.Reports) wiretest.Fleet[client] {
	return wiretest.Fleet[client]{
		Client: func(p *wiretest.Provider, store sessions.Store) client {
			if apart {
				store = nil
			}
			cfg := wire.ConversationsConfig{Sessions: store,
				Session: wire.SessionConfig{Guard: pruneguard.Guard{Budget: 3000}, Trigger: 4000, MinClear: 1200,
					Unannotated: wire.UnannotatedRegenerable}}
			if store == nil {
				cfg.OnReport = reports.Add
			}
			cs, err := wire.NewConversations(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return client{p.URL(), cs}
		},
		Loop: func(clientOf func(int) client) int { return chatLoop(t, clientOf) },
	}
}

// TestFleet runs Fleet over package wire's own middleware: the replicas
// send what one middleware sends, and the bodies were pruned.
func TestFleet(t *testing.T) {
	var reports wiretest.Reports // the one middleware's
	one := fleet(t, false, &reports).Run(t)
	if reports.Guarded() == 0 || reports.Err() != nil || one.Count() < 24 || !bytes.Contains(one.Body(one.Count()-1), []byte("turn 11")) {
		t.Errorf("%d requests, %d guarded, %v", one.Count(), reports.Guarded(), reports.Err())
	}
}

// TestFleetCatches: replicas that do not share their sessions send other
// bodies once they prune, and Fleet fails the test. The failing run is a
// test of its own, run in a child process.
func TestFleetCatches(t *testing.T) {
	if os.Getenv("WIRETEST_FLEET_APART") == "1" {
		fleet(t, true, &wiretest.Reports{}).Run(t)
		return
	}
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetCatches$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WIRETEST_FLEET_APART=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the fleet sent another body") {
		t.Errorf("replicas apart passed the fleet check (%v):\n%s", err, out)
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

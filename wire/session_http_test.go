package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

func newConversations(t *testing.T, budget int) *wire.Conversations {
	t.Helper()
	cs, err := wire.NewConversations(wire.ConversationsConfig{Session: wire.SessionConfig{
		Guard: pruneguard.Guard{Budget: budget}, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}})
	must(t, err)
	return cs
}

// TestConversationsFindByHistory: without a name, a request goes to the
// conversation whose history it continues; two conversations with the
// same first message stay apart.
func TestConversationsFindByHistory(t *testing.T) {
	cs := newConversations(t, 1<<20)
	ctx := context.Background()
	a := chatTurns(2, 3)
	b := append(append([]json.RawMessage{}, a[:2]...), json.RawMessage(`{"role":"assistant","content":"another answer"}`))
	_, _, err := cs.Guard(ctx, wire.OpenAIChat, chatBody(a))
	must(t, err)
	_, _, err = cs.Guard(ctx, wire.OpenAIChat, chatBody(b))
	must(t, err)
	if cs.Len() != 2 {
		t.Fatalf("%d conversations, want 2", cs.Len())
	}
	// Each continues: no new conversation, no reset.
	_, rep, err := cs.Guard(ctx, wire.OpenAIChat, chatBody(append(a, json.RawMessage(`{"role":"user","content":"more"}`))))
	must(t, err)
	_, rep2, err := cs.Guard(ctx, wire.OpenAIChat, chatBody(append(b, json.RawMessage(`{"role":"user","content":"more"}`))))
	must(t, err)
	if cs.Len() != 2 || rep.Reset || rep2.Reset {
		t.Errorf("%d conversations, resets %v %v", cs.Len(), rep.Reset, rep2.Reset)
	}
	// A named conversation is its own, whatever its history.
	_, _, err = cs.Guard(wire.WithConversation(ctx, "x"), wire.OpenAIChat, chatBody(a))
	must(t, err)
	if cs.Len() != 3 {
		t.Errorf("%d conversations, want 3", cs.Len())
	}
}

// TestConversationsRefuse: a body that breaks a provider rule is refused
// with a *RuleError naming the rule; calls left waiting are refused too.
func TestConversationsRefuse(t *testing.T) {
	cs := newConversations(t, 1<<20)
	for body, rule := range map[string]string{
		`{"messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c","content":"r"}]}`:                                                          wire.RuleChatOrphanToolMessage,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`: wire.RuleChatPendingCalls,
	} {
		_, _, err := cs.Guard(context.Background(), wire.OpenAIChat, []byte(body))
		var re *wire.RuleError
		if !errors.As(err, &re) || !errors.Is(err, wire.ErrProviderRule) || re.Rules()[0] != rule {
			t.Errorf("err %v, want rule %s", err, rule)
		}
	}
	if cs.Len() != 0 {
		t.Errorf("refused bodies made %d conversations", cs.Len())
	}
}

// TestConversationsStoredResponses: a Responses request continuing a
// stored response is checked and passed on as it is.
func TestConversationsStoredResponses(t *testing.T) {
	cs := newConversations(t, 10)
	body := []byte(`{"model":"m","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c","output":"` + strings.Repeat("z", 400) + `"}]}`)
	out, rep, err := cs.Guard(context.Background(), wire.OpenAIResponses, body)
	must(t, err)
	if !bytes.Equal(out, body) || rep.Guarded || cs.Len() != 0 {
		t.Errorf("stored response guarded: %+v", rep)
	}
}

func TestConversationsMax(t *testing.T) {
	cs, err := wire.NewConversations(wire.ConversationsConfig{Max: 2, Session: wire.SessionConfig{Guard: pruneguard.Guard{Budget: 1 << 20}}})
	must(t, err)
	for _, name := range []string{"a", "b", "c"} {
		_, _, err := cs.Guard(wire.WithConversation(context.Background(), name), wire.Anthropic, []byte(`{"messages":[{"role":"user","content":"hi"}]}`))
		must(t, err)
	}
	if cs.Len() != 2 {
		t.Errorf("%d conversations kept, want 2", cs.Len())
	}
	if _, err := wire.NewConversations(wire.ConversationsConfig{}); !errors.Is(err, wire.ErrSessionConfig) {
		t.Errorf("no budget: %v", err)
	}
}

// TestMiddleware: the middleware replaces the body of the requests it
// guards, passes others on, and refuses with a response that asks for
// no retry.
func TestMiddleware(t *testing.T) {
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, b)
		if int64(len(b)) != r.ContentLength {
			t.Errorf("content length %d for %d bytes", r.ContentLength, len(b))
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cs, err := wire.NewConversations(wire.ConversationsConfig{Dialects: []wire.Dialect{wire.OpenAIChat},
		Session: wire.SessionConfig{Guard: pruneguard.Guard{Budget: 200}, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}})
	must(t, err)
	send := func(path string, body []byte) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		return cs.Middleware(req, http.DefaultClient.Do)
	}
	big := chatBody(chatTurns(10, 40))
	res, err := send("/v1/chat/completions", big)
	must(t, err)
	res.Body.Close()
	if len(got[0]) >= len(big) {
		t.Errorf("body not pruned: %d bytes of %d", len(got[0]), len(big))
	}
	res, err = send("/v1/embeddings", big)
	must(t, err)
	res.Body.Close()
	if !bytes.Equal(got[1], big) {
		t.Error("a request the middleware does not guard was changed")
	}
	res, err = send("/v1/chat/completions", []byte(`{"messages":[{"role":"tool","tool_call_id":"x","content":"y"}]}`))
	var re *wire.RuleError
	if !errors.As(err, &re) || res == nil || res.Header.Get("X-Should-Retry") != "false" || len(got) != 2 {
		t.Errorf("refusal: err %v, response %v, %d sent", err, res, len(got))
	}
}

func TestRequestDialect(t *testing.T) {
	for path, want := range map[string]wire.Dialect{
		"/v1/chat/completions": wire.OpenAIChat, "/v1/responses": wire.OpenAIResponses, "/v1/messages": wire.Anthropic,
		"/v1beta/models/gemini-2.5-pro:generateContent": wire.Gemini, "/model/x/converse": wire.Bedrock,
		"/v1/messages/count_tokens": "", "/v1/responses/resp_1/input_items": "", "/v1/embeddings": "",
	} {
		d, ok := wire.RequestDialect(http.MethodPost, path)
		if d != want || ok != (want != "") {
			t.Errorf("%s: %q %v", path, d, ok)
		}
	}
	if _, ok := wire.RequestDialect(http.MethodGet, "/v1/responses"); ok {
		t.Error("GET guarded")
	}
}

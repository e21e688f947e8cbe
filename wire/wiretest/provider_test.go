package wiretest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// dialectCase is a conversation in one dialect: a first request that
// declares a tool, how to take the assistant's turn and its call out of
// a response, and how to answer the call.
type dialectCase struct {
	d     wire.Dialect
	path  string
	key   string // the history's key
	first string // a request body whose history is one user turn
	// turn returns the history entries a response adds, and the id the
	// call in it carries ("" for none).
	turn func(res map[string]any) (entries []any, callID string)
	// result is the history entry answering call id.
	result func(id string) any
	// text is the answer's text.
	text func(res map[string]any) string
}

func at(v any, path ...any) any {
	for _, k := range path {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }

var dialectCases = []dialectCase{
	{wire.OpenAIChat, "/v1/chat/completions", "messages",
		`{"model":"gpt-4o","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}]}`,
		func(res map[string]any) ([]any, string) {
			msg := at(res, "choices", 0, "message").(map[string]any)
			if _, ok := msg["tool_calls"]; !ok {
				return []any{msg}, ""
			}
			return []any{msg}, str(at(msg, "tool_calls", 0, "id"))
		},
		func(id string) any {
			return map[string]any{"role": "tool", "tool_call_id": id, "content": "package main"}
		},
		func(res map[string]any) string { return str(at(res, "choices", 0, "message", "content")) }},
	{wire.OpenAIResponses, "/v1/responses", "input",
		`{"model":"gpt-4o","input":[{"role":"user","content":"go"}],"tools":[{"type":"function","name":"read_file","parameters":{"type":"object"}}]}`,
		func(res map[string]any) ([]any, string) {
			item := at(res, "output", 0).(map[string]any)
			return []any{item}, str(item["call_id"])
		},
		func(id string) any {
			return map[string]any{"type": "function_call_output", "call_id": id, "output": "package main"}
		},
		func(res map[string]any) string { return str(at(res, "output", 0, "content", 0, "text")) }},
	{wire.Anthropic, "/v1/messages", "messages",
		`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"read_file","input_schema":{"type":"object"}}]}`,
		func(res map[string]any) ([]any, string) {
			turn := map[string]any{"role": "assistant", "content": res["content"]}
			if res["stop_reason"] != "tool_use" {
				return []any{turn}, ""
			}
			return []any{turn}, str(at(res, "content", 0, "id"))
		},
		func(id string) any {
			return map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "package main"}}}
		},
		func(res map[string]any) string { return str(at(res, "content", 0, "text")) }},
	{wire.Gemini, "/v1beta/models/gemini-2.5-flash:generateContent", "contents",
		`{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","parameters":{"type":"object"}}]}]}`,
		func(res map[string]any) ([]any, string) {
			content := at(res, "candidates", 0, "content")
			if _, ok := at(content, "parts", 0).(map[string]any)["functionCall"]; !ok {
				return []any{content}, ""
			}
			return []any{content}, "gemini" // calls go without an id
		},
		func(string) any {
			return map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
				"name": "read_file", "response": map[string]any{"result": "package main"}}}}}
		},
		func(res map[string]any) string { return str(at(res, "candidates", 0, "content", "parts", 0, "text")) }},
	{wire.Bedrock, "/model/anthropic.claude-sonnet-4-5/converse", "messages",
		`{"messages":[{"role":"user","content":[{"text":"go"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","inputSchema":{"json":{"type":"object"}}}}]}}`,
		func(res map[string]any) ([]any, string) {
			msg := at(res, "output", "message")
			if res["stopReason"] != "tool_use" {
				return []any{msg}, ""
			}
			return []any{msg}, str(at(msg, "content", 0, "toolUse", "toolUseId"))
		},
		func(id string) any {
			return map[string]any{"role": "user", "content": []any{map[string]any{"toolResult": map[string]any{
				"toolUseId": id, "content": []any{map[string]any{"text": "package main"}}}}}}
		},
		func(res map[string]any) string { return str(at(res, "output", "message", "content", 0, "text")) }},
}

// post sends body to path and returns the status and the decoded answer.
func post(t *testing.T, p *wiretest.Provider, path string, body any) (int, map[string]any) {
	t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		raw, _ = json.Marshal(body)
	}
	res, err := http.Post(p.URL()+path, "application/json", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%s: an answer that is not JSON: %v", path, err)
	}
	return res.StatusCode, out
}

// TestDialects: in every dialect, a request with a tool declared and a
// user turn last gets a call of it; the call and its result, added to the
// history, make a body the provider accepts; that body, ending on a
// result, gets text; and every body is recorded as sent.
func TestDialects(t *testing.T) {
	for _, tc := range dialectCases {
		t.Run(string(tc.d), func(t *testing.T) {
			p := wiretest.Start(t)
			var req map[string]any
			if err := json.Unmarshal([]byte(tc.first), &req); err != nil {
				t.Fatal(err)
			}
			status, res := post(t, p, tc.path, []byte(tc.first))
			entries, id := tc.turn(res)
			if status != http.StatusOK || id == "" {
				t.Fatalf("status %d, no call: %v", status, res)
			}
			req[tc.key] = append(append(req[tc.key].([]any), entries...), tc.result(id))
			status, res = post(t, p, tc.path, req)
			if _, again := tc.turn(res); status != http.StatusOK || again != "" {
				t.Fatalf("status %d, a call after a result: %v", status, res)
			}
			if got, want := tc.text(res), "answer 2: "+strings.Repeat("words ", 20); got != want {
				t.Errorf("text %q, want %q", got, want)
			}
			if p.Count() != 2 || p.Read(1).Dialect != tc.d || len(p.Read(1).Messages) != 3 {
				t.Errorf("%d requests recorded", p.Count())
			}
			if b := p.Read(0); len(b.Messages) != 1 || string(p.Body(0)) != tc.first {
				t.Errorf("request 0 recorded as %s", p.Body(0))
			}
		})
	}
}

package wiretest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pruneguard/pruneguard/wire"
)

// DefaultReply answers request n, when the request declares tools and
// its last turn carries no tool result, with a call of the first tool
// declared whose input is {"path": "file<n>.go"}; otherwise with the text
// "answer <n>: " followed by "words " twenty times.
func DefaultReply(r Request) Answer {
	msgs := r.Body.Messages
	tools := r.Body.Tools()
	if len(tools) > 0 && (len(msgs) == 0 || len(msgs[len(msgs)-1].Results) == 0) {
		return Answer{Call: &ToolCall{Name: tools[0].Name, Input: map[string]any{"path": fmt.Sprintf("file%d.go", r.N)}}}
	}
	return Answer{Text: fmt.Sprintf("answer %d: %s", r.N, strings.Repeat("words ", 20))}
}

// format is how one dialect answers: a response carrying an answer to
// request n, and an error body carrying a message.
type format struct {
	answer func(n int, a Answer) any
	refuse func(msg string) any
}

// formats holds the response format of each dialect.
var formats = map[wire.Dialect]format{
	wire.OpenAIChat:      {chatAnswer, openAIRefusal},
	wire.OpenAIResponses: {responsesAnswer, openAIRefusal},
	wire.Anthropic:       {anthropicAnswer, anthropicRefusal},
	wire.Gemini:          {geminiAnswer, geminiRefusal},
	wire.Bedrock:         {bedrockAnswer, bedrockRefusal},
}

// respond returns the response body of dialect d to request n.
func respond(d wire.Dialect, n int, a Answer) []byte {
	out, err := json.Marshal(formats[d].answer(n, a))
	if err != nil {
		panic(fmt.Sprintf("wiretest: an answer that is not JSON: %v", err)) // a Call.Input of a Reply
	}
	return out
}

// refuse writes the error response of dialect d, status 400.
func refuse(w http.ResponseWriter, d wire.Dialect, err error) {
	out, _ := json.Marshal(formats[d].refuse(err.Error()))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(out)
}

// callID is the id of a call, made from the request number with prefix
// when the Reply gave none.
func callID(c *ToolCall, prefix string, n int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d", prefix, n)
}

// arguments is a call's input as the JSON string OpenAI's formats carry.
func arguments(c *ToolCall) string {
	out, err := json.Marshal(input(c))
	if err != nil {
		panic(fmt.Sprintf("wiretest: a call input that is not JSON: %v", err))
	}
	return string(out)
}

// input is a call's input, {} when it has none.
func input(c *ToolCall) map[string]any {
	if c.Input == nil {
		return map[string]any{}
	}
	return c.Input
}

func chatAnswer(n int, a Answer) any {
	msg := map[string]any{"role": "assistant", "content": a.Text}
	finish := "stop"
	if c := a.Call; c != nil {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": callID(c, "call_", n), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": arguments(c)}}}}
		finish = "tool_calls"
	}
	return map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion",
		"created": 1700000000, "model": "gpt-4o", "choices": []any{map[string]any{
			"index": 0, "finish_reason": finish, "logprobs": nil, "message": msg}},
		"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
}

func responsesAnswer(n int, a Answer) any {
	item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": a.Text, "annotations": []any{}}}}
	if c := a.Call; c != nil {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": callID(c, "call_", n),
			"name": c.Name, "arguments": arguments(c), "status": "completed"}
	}
	return map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 1700000000,
		"status": "completed", "model": "gpt-4o", "output": []any{item}, "parallel_tool_calls": true,
		"tool_choice": "auto", "tools": []any{}, "temperature": 1, "top_p": 1,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
}

func openAIRefusal(msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}}
}

func anthropicAnswer(n int, a Answer) any {
	content := []any{map[string]any{"type": "text", "text": a.Text}}
	stop := "end_turn"
	if c := a.Call; c != nil {
		content = []any{map[string]any{"type": "tool_use", "id": callID(c, "toolu_", n), "name": c.Name, "input": input(c)}}
		stop = "tool_use"
	}
	return map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
		"model": "claude-sonnet-4-5", "content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}
}

func anthropicRefusal(msg string) any {
	return map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}}
}

func geminiAnswer(n int, a Answer) any {
	part := map[string]any{"text": a.Text}
	if c := a.Call; c != nil {
		call := map[string]any{"name": c.Name, "args": input(c)}
		if c.ID != "" {
			call["id"] = c.ID
		}
		part = map[string]any{"functionCall": call}
	}
	return map[string]any{"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
		"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "gemini-2.5-flash", "responseId": fmt.Sprintf("resp_%d", n)}
}

func geminiRefusal(msg string) any {
	return map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "INVALID_ARGUMENT"}}
}

func bedrockAnswer(n int, a Answer) any {
	block := map[string]any{"text": a.Text}
	stop := "end_turn"
	if c := a.Call; c != nil {
		block = map[string]any{"toolUse": map[string]any{"toolUseId": callID(c, "tooluse_", n), "name": c.Name, "input": input(c)}}
		stop = "tool_use"
	}
	return map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{block}}},
		"stopReason": stop, "usage": map[string]any{"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
		"metrics": map[string]any{"latencyMs": 1}}
}

func bedrockRefusal(msg string) any {
	return map[string]any{"message": msg}
}

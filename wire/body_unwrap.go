package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Unwrap gets the request body out of a recorded transcript file. name is
// the file name (only its suffix and shape matter). It understands:
//
//   - Claude Code session logs (".jsonl"): lines of type user and assistant
//     become Anthropic messages; consecutive assistant lines sharing
//     message.id are merged into one message; sidechain (sub-agent) lines
//     and summary lines are skipped.
//   - a top-level array of chat messages (OpenHands message fixtures);
//   - tau-bench records (".traj" holds the chat messages);
//   - SWE-agent trajectories (".history"; tool messages carry a
//     tool_call_ids list, which Read accepts);
//   - OpenHands LiteLLM logs (".messages" plus the reply in
//     ".response.choices[0].message", and ".tools");
//   - NeMo Gym rollouts (".responses_create_params" with its input
//     followed by ".response.output");
//   - anything else is taken to be a request body already, and its dialect
//     is detected.
//
// A file that is not UTF-8, or starts with a byte order mark, is refused
// as [Read] refuses such a body.
func Unwrap(file []byte, name string) (body []byte, d Dialect, err error) {
	if err := checkText(file); err != nil {
		return nil, "", fmt.Errorf("wire: unwrap %s: %w", name, err)
	}
	if strings.HasSuffix(name, ".jsonl") {
		body, err = unwrapClaudeCode(file)
		if err != nil {
			return nil, "", fmt.Errorf("wire: unwrap %s: %v", name, err)
		}
		return body, Anthropic, nil
	}
	trimmed := bytes.TrimSpace(file)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return nil, "", fmt.Errorf("wire: unwrap %s: not valid JSON", name)
		}
		return wrapObject(map[string]json.RawMessage{"messages": trimmed}), OpenAIChat, nil
	}
	top, err := parseTop(file)
	if err != nil {
		return nil, "", fmt.Errorf("wire: unwrap %s: %v", name, err)
	}
	f := top.fields
	switch {
	case f["traj"] != nil:
		return wrapObject(map[string]json.RawMessage{"messages": f["traj"]}), OpenAIChat, nil
	case f["history"] != nil && f["messages"] == nil:
		return wrapObject(map[string]json.RawMessage{"messages": f["history"]}), OpenAIChat, nil
	case f["responses_create_params"] != nil:
		body, err = unwrapNemoGym(f)
		if err != nil {
			return nil, "", fmt.Errorf("wire: unwrap %s: %v", name, err)
		}
		return body, OpenAIResponses, nil
	case f["messages"] != nil && f["response"] != nil:
		body, err = unwrapLiteLLM(f)
		if err != nil {
			return nil, "", fmt.Errorf("wire: unwrap %s: %v", name, err)
		}
		return body, OpenAIChat, nil
	}
	d, err = Detect(file)
	if err != nil {
		return nil, "", fmt.Errorf("wire: unwrap %s: %v", name, strings.TrimPrefix(err.Error(), "wire: "))
	}
	return append([]byte(nil), file...), d, nil
}

func wrapObject(m map[string]json.RawMessage) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

func unwrapLiteLLM(f map[string]json.RawMessage) ([]byte, error) {
	msgs, ok := asArray(f["messages"])
	if !ok {
		return nil, fmt.Errorf("messages is %s, not an array", kindName(f["messages"]))
	}
	resp, ok := asObject(f["response"])
	if !ok {
		return nil, fmt.Errorf("response is %s, not an object", kindName(f["response"]))
	}
	if choices, ok := asArray(resp["choices"]); ok && len(choices) > 0 {
		ch, ok := asObject(choices[0])
		if !ok || isNull(ch["message"]) {
			return nil, fmt.Errorf("response.choices[0] has no message")
		}
		msgs = append(msgs, ch["message"])
	}
	out := map[string]json.RawMessage{"messages": joinArray(msgs)}
	if t := f["tools"]; !isNull(t) {
		out["tools"] = t
	}
	return json.Marshal(out)
}

func unwrapNemoGym(f map[string]json.RawMessage) ([]byte, error) {
	params, ok := asObject(f["responses_create_params"])
	if !ok {
		return nil, fmt.Errorf("responses_create_params is %s, not an object", kindName(f["responses_create_params"]))
	}
	var items []json.RawMessage
	switch in := params["input"]; kindOf(in) {
	case '[':
		items, _ = asArray(in)
	case '"':
		s, _ := asString(in)
		msg, err := json.Marshal(map[string]string{"role": "user", "content": s})
		if err != nil {
			return nil, err
		}
		items = []json.RawMessage{msg}
	default:
		return nil, fmt.Errorf("responses_create_params.input is %s, not an array or a string", kindName(in))
	}
	if !isNull(f["response"]) {
		resp, ok := asObject(f["response"])
		if !ok {
			return nil, fmt.Errorf("response is %s, not an object", kindName(f["response"]))
		}
		if out := resp["output"]; !isNull(out) {
			more, ok := asArray(out)
			if !ok {
				return nil, fmt.Errorf("response.output is %s, not an array", kindName(out))
			}
			items = append(items, more...)
		}
	}
	params["input"] = joinArray(items)
	return json.Marshal(params)
}

// unwrapClaudeCode turns a Claude Code session log into an Anthropic
// request body {"messages": [...]} holding only role and content.
func unwrapClaudeCode(file []byte) ([]byte, error) {
	type msg struct {
		role    string
		id      string
		content []json.RawMessage
		text    json.RawMessage // string content, kept as is
	}
	var msgs []*msg
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		obj, ok := asObject(raw)
		if !ok {
			return nil, fmt.Errorf("line %d: not a JSON object", line)
		}
		typ, _ := optString(obj, "type")
		if typ != "user" && typ != "assistant" {
			continue
		}
		if strings.TrimSpace(string(obj["isSidechain"])) == "true" {
			continue
		}
		m, ok := asObject(obj["message"])
		if !ok {
			return nil, fmt.Errorf("line %d: %s line without message", line, typ)
		}
		role, err := optString(m, "role")
		if err != nil || role == "" {
			role = typ
		}
		id, _ := optString(m, "id")
		var blocks []json.RawMessage
		var text json.RawMessage
		switch c := m["content"]; kindOf(c) {
		case '[':
			blocks, _ = asArray(c)
		case '"':
			text = c
		default:
			return nil, fmt.Errorf("line %d: message content is %s", line, kindName(c))
		}
		if n := len(msgs); n > 0 && role == "assistant" && id != "" && msgs[n-1].role == "assistant" && msgs[n-1].id == id {
			prev := msgs[n-1]
			if prev.text != nil {
				prev.content = append(prev.content, textBlock(prev.text))
				prev.text = nil
			}
			if text != nil {
				blocks = []json.RawMessage{textBlock(text)}
			}
			prev.content = append(prev.content, blocks...)
			continue
		}
		msgs = append(msgs, &msg{role: role, id: id, content: blocks, text: text})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		content := m.text
		if content == nil {
			content = joinArray(m.content)
		}
		b, err := json.Marshal(map[string]json.RawMessage{"role": mustString(m.role), "content": content})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return json.Marshal(map[string]json.RawMessage{"messages": joinArray(out)})
}

func textBlock(s json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(map[string]json.RawMessage{"type": mustString("text"), "text": s})
	return b
}

package wire

import (
	"encoding/json"
	"errors"
	"fmt"
)

// stubMessage returns raw with the content of every tool result replaced by
// text. It rewrites only the objects it touches; the rest of the message is
// re-encoded from its raw JSON values.
func stubMessage(d Dialect, raw json.RawMessage, text string) (json.RawMessage, error) {
	obj, ok := asObject(raw)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", d.provider().entry)
	}
	textJSON, err := json.Marshal(text)
	if err != nil {
		return nil, err
	}
	switch d {
	case OpenAIChat:
		obj["content"] = textJSON
	case OpenAIResponses:
		out, err2 := stubResponsesOutput(str(obj["type"]), obj["output"], text, textJSON)
		if err2 != nil {
			return nil, err2
		}
		obj["output"] = out
	case Anthropic:
		err = stubBlocks(obj, "content", func(blk map[string]json.RawMessage) (bool, error) {
			if t, _ := optString(blk, "type"); t != "tool_result" {
				return false, nil
			}
			// tool_reference blocks name tools that must stay loaded: they
			// stay, after the placeholder.
			refs := referenceBlocks(blk["content"])
			if len(refs) == 0 {
				blk["content"] = textJSON
				return true, nil
			}
			tb, err := json.Marshal(map[string]string{"type": "text", "text": text})
			if err != nil {
				return false, err
			}
			blk["content"] = joinArray(append([]json.RawMessage{tb}, refs...))
			return true, nil
		})
	case Gemini:
		resp, err2 := json.Marshal(map[string]string{"result": text})
		if err2 != nil {
			return nil, err2
		}
		err = stubBlocks(obj, "parts", func(p map[string]json.RawMessage) (bool, error) {
			fr, ok := asObject(p["functionResponse"])
			if !ok {
				return false, nil
			}
			fr["response"] = resp
			delete(fr, "parts") // multimodal response parts go with the content
			b, err := json.Marshal(fr)
			if err != nil {
				return false, err
			}
			p["functionResponse"] = b
			return true, nil
		})
	case Bedrock:
		content, err2 := json.Marshal([]map[string]string{{"text": text}})
		if err2 != nil {
			return nil, err2
		}
		err = stubBlocks(obj, "content", func(blk map[string]json.RawMessage) (bool, error) {
			tr, ok := asObject(blk["toolResult"])
			if !ok {
				return false, nil
			}
			tr["content"] = content
			b, err := json.Marshal(tr)
			if err != nil {
				return false, err
			}
			blk["toolResult"] = b
			return true, nil
		})
	default:
		return nil, fmt.Errorf("unknown dialect %q", string(d))
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// ErrUnstubbable is matched (with errors.Is) by the error [Body.Stub]
// returns for a result whose content cannot become text: a Responses
// computer call output (a screenshot), client tool search output (a tool
// list) or MCP approval response.
var ErrUnstubbable = errors.New("wire: the result's content cannot be replaced by text")

// stubResponsesOutput returns the output of a Responses output item of
// type typ, whose output was out, replaced by text (textJSON encoded):
// a string where the API takes one; an array of one input_text part
// where the output was an array of content parts; for a shell call
// output, one chunk with the text as stdout and the first chunk's
// outcome. A computer call's screenshot, a client tool search's tool
// list and an approval response cannot be stubbed.
func stubResponsesOutput(typ string, out json.RawMessage, text string, textJSON json.RawMessage) (json.RawMessage, error) {
	switch typ {
	case "function_call_output", "custom_tool_call_output":
		if kindOf(out) == '[' {
			return json.Marshal([]map[string]string{{"type": "input_text", "text": text}})
		}
		return textJSON, nil
	case "local_shell_call_output", "apply_patch_call_output":
		return textJSON, nil
	case "shell_call_output":
		outcome := json.RawMessage(`{"type":"exit","exit_code":0}`)
		if chunks, ok := asArray(out); ok && len(chunks) > 0 {
			if c, ok := asObject(chunks[0]); ok && kindOf(c["outcome"]) == '{' {
				outcome = c["outcome"]
			}
		}
		return json.Marshal([]map[string]json.RawMessage{{"stdout": textJSON, "stderr": json.RawMessage(`""`), "outcome": outcome}})
	}
	return nil, fmt.Errorf("%s: %w", typ, ErrUnstubbable)
}

// referenceBlocks returns the tool_reference blocks of a tool_result's
// content array.
func referenceBlocks(content json.RawMessage) []json.RawMessage {
	items, _ := asArray(content)
	var out []json.RawMessage
	for _, it := range items {
		if blk, ok := asObject(it); ok && str(blk["type"]) == "tool_reference" {
			out = append(out, it)
		}
	}
	return out
}

// stubBlocks applies edit to each object of the array obj[key] and stores
// the array back when something changed.
func stubBlocks(obj map[string]json.RawMessage, key string, edit func(map[string]json.RawMessage) (bool, error)) error {
	items, ok := asArray(obj[key])
	if !ok {
		return fmt.Errorf("%s is not an array", key)
	}
	for i, it := range items {
		blk, ok := asObject(it)
		if !ok {
			continue
		}
		changed, err := edit(blk)
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		b, err := json.Marshal(blk)
		if err != nil {
			return err
		}
		items[i] = b
	}
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	obj[key] = b
	return nil
}

package wire

import (
	"encoding/json"
	"fmt"
)

// stubMessage returns raw with the content of every tool result replaced by
// text. It rewrites only the objects it touches; the rest of the message is
// re-encoded from its raw JSON values.
func stubMessage(d Dialect, raw json.RawMessage, text string) (json.RawMessage, error) {
	obj, ok := asObject(raw)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", d.entryName())
	}
	textJSON, err := json.Marshal(text)
	if err != nil {
		return nil, err
	}
	switch d {
	case OpenAIChat:
		obj["content"] = textJSON
	case OpenAIResponses:
		obj["output"] = textJSON
	case Anthropic:
		err = stubBlocks(obj, "content", func(blk map[string]json.RawMessage) (bool, error) {
			if t, _ := optString(blk, "type"); t != "tool_result" {
				return false, nil
			}
			blk["content"] = textJSON
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

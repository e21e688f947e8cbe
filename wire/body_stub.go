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
	p := d.provider()
	if p == nil {
		return nil, fmt.Errorf("unknown dialect %q", string(d))
	}
	obj, ok := asObject(raw)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", p.entry)
	}
	textJSON, err := json.Marshal(text)
	if err != nil {
		return nil, err
	}
	if err := p.stub(obj, text, textJSON); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// ErrUnstubbable is matched (with errors.Is) by the error [Body.Stub]
// returns for a result whose content cannot become text: a Responses
// computer call output (a screenshot), client tool search output (a tool
// list) or MCP approval response.
var ErrUnstubbable = errors.New("wire: the result's content cannot be replaced by text")

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

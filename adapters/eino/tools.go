package einoguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// ErrToolInfo is matched (errors.Is) by the errors of [ToolOf] and
// [Tools]: a tool without a name, or whose description or parameter
// schema cannot be had. The error's text names the tool.
var ErrToolInfo = errors.New("einoguard: tool info")

// emptyParams is the schema of a tool that takes no parameters.
var emptyParams = json.RawMessage(`{"type":"object","properties":{}}`)

// ToolOf describes an eino tool for the guard: its name, its parameters as
// the JSON Schema eino sends the model, and the MCP annotations a gives it.
// The zero Annotations take MCP's defaults, under which the tool counts as
// mutating and its results as irreducible: the guard never evicts or stubs
// them. Annotate only what you know: a read-only, closed-world tool
// (ReadOnlyHint true, OpenWorldHint false) has results the guard may clear.
func ToolOf(info *schema.ToolInfo, a pruneguard.Annotations) (pruneguard.Tool, error) {
	if info == nil || info.Name == "" {
		return pruneguard.Tool{}, fmt.Errorf("%w: no name", ErrToolInfo)
	}
	t := pruneguard.Tool{Name: info.Name, Annotations: a, Schema: emptyParams}
	if info.ParamsOneOf != nil {
		js, err := info.ToJSONSchema()
		if err != nil {
			return pruneguard.Tool{}, fmt.Errorf("%w: tool %q: %w", ErrToolInfo, info.Name, err)
		}
		if js != nil {
			b, err := json.Marshal(js)
			if err != nil {
				return pruneguard.Tool{}, fmt.Errorf("%w: tool %q: %w", ErrToolInfo, info.Name, err)
			}
			t.Schema = b
		}
	}
	return t, nil
}

// Tools describes eino tools for the guard with [ToolOf], each with the
// annotations ann gives its name; a tool ann does not name takes MCP's
// defaults (mutating, results irreducible).
func Tools(ctx context.Context, tools []tool.BaseTool, ann map[string]pruneguard.Annotations) ([]pruneguard.Tool, error) {
	out := make([]pruneguard.Tool, 0, len(tools))
	for _, bt := range tools {
		info, err := bt.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrToolInfo, err)
		}
		t, err := ToolOf(info, ann[info.Name])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

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

// ToolOf describes an eino tool for the guard with the MCP annotations a
// gives it: [ToolWith] of a spec holding only a. The zero Annotations
// take MCP's defaults, under which the tool counts as mutating and its
// results as irreducible: the guard never evicts or stubs them. Annotate
// only what you know: a read-only, closed-world tool (ReadOnlyHint true,
// OpenWorldHint false) has results the guard may clear.
func ToolOf(info *schema.ToolInfo, a pruneguard.Annotations) (pruneguard.Tool, error) {
	return ToolWith(info, pruneguard.Tool{Annotations: a})
}

// ToolWith describes an eino tool for the guard as spec says: its name
// from info, its parameters as the JSON Schema eino sends the model
// (unless spec gives a Schema), and every other field of spec as it is:
// Annotations, Output, Scope, Family, Version, NoTombstone, and any field
// the core's Tool gains. A Scope keeps a mutating tool from making the
// results of tools of other scopes irreducible: without one, a tool
// counts as touching everything. It fails with an error matching
// [ErrToolInfo] for a tool without a name, a spec naming another tool,
// or parameters that cannot be written as JSON Schema.
func ToolWith(info *schema.ToolInfo, spec pruneguard.Tool) (pruneguard.Tool, error) {
	if info == nil || info.Name == "" {
		return pruneguard.Tool{}, fmt.Errorf("%w: no name", ErrToolInfo)
	}
	if spec.Name != "" && spec.Name != info.Name {
		return pruneguard.Tool{}, fmt.Errorf("%w: tool %q given the spec of %q", ErrToolInfo, info.Name, spec.Name)
	}
	t := spec
	t.Name = info.Name
	if len(t.Schema) > 0 {
		return t, nil
	}
	t.Schema = emptyParams
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
// defaults (mutating, results irreducible), and [RecallTool] takes
// [RecallSpec]. A name in ann that no tool has fails with an error
// matching [ErrToolInfo]: a misspelt name would leave its tool unannotated.
func Tools(ctx context.Context, tools []tool.BaseTool, ann map[string]pruneguard.Annotations) ([]pruneguard.Tool, error) {
	specs := make(map[string]pruneguard.Tool, len(ann))
	for name, a := range ann {
		specs[name] = pruneguard.Tool{Annotations: a}
	}
	return ToolsWith(ctx, tools, specs)
}

// ToolsWith describes eino tools for the guard with [ToolWith], each with
// the spec specs gives its name; a tool specs does not name takes MCP's
// defaults (mutating, with a scope of everything, results irreducible),
// and [RecallTool] takes [RecallSpec]. A name in specs that no tool has
// fails with an error matching [ErrToolInfo].
func ToolsWith(ctx context.Context, tools []tool.BaseTool, specs map[string]pruneguard.Tool) ([]pruneguard.Tool, error) {
	out := make([]pruneguard.Tool, 0, len(tools))
	seen := make(map[string]bool, len(tools))
	for _, bt := range tools {
		info, err := bt.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrToolInfo, err)
		}
		spec, ok := specs[info.Name]
		if _, recall := bt.(recallTool); recall && !ok {
			spec = RecallSpec()
		}
		t, err := ToolWith(info, spec)
		if err != nil {
			return nil, err
		}
		seen[info.Name] = true
		out = append(out, t)
	}
	for name := range specs {
		if !seen[name] {
			return nil, fmt.Errorf("%w: a spec names %q, which is none of the tools", ErrToolInfo, name)
		}
	}
	return out, nil
}

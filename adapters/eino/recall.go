package einoguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// RecallScope is the scope of the recall tool in [RecallSpec]: what it
// reads is the spill store's segments, which no other tool writes.
const RecallScope = "pruneguard.spill"

// RecallSpec is spill.RecallTool as the session registers it: its name,
// schema and annotations (read-only, not destructive, idempotent,
// closed-world), results reconstructible, scope [RecallScope]. A session
// with Guard.Spill set also gives each recall result, and an assistant
// message of recall calls only, the reconstructible class, whatever tools
// were called after it: a recall answers from segments that do not change.
func RecallSpec() pruneguard.Tool {
	t := spill.RecallTool()
	t.Output = pruneguard.Reconstructible
	t.Scope = RecallScope
	return t
}

// RecallToolInfo describes spill.RecallTool as eino does: its name, the
// description the model reads (the JSON Schema's top-level description),
// and its parameters ("key", "query", "page") as the rest of the schema,
// constraints included.
func RecallToolInfo() (*schema.ToolInfo, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(spill.RecallTool().Schema, &top); err != nil {
		return nil, fmt.Errorf("%w: tool %q: %w", ErrToolInfo, spill.RecallToolName, err)
	}
	var desc string
	if err := json.Unmarshal(top["description"], &desc); err != nil {
		return nil, fmt.Errorf("%w: tool %q: %w", ErrToolInfo, spill.RecallToolName, err)
	}
	delete(top, "description")
	b, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q: %w", ErrToolInfo, spill.RecallToolName, err)
	}
	js := &jsonschema.Schema{}
	if err := json.Unmarshal(b, js); err != nil {
		return nil, fmt.Errorf("%w: tool %q: %w", ErrToolInfo, spill.RecallToolName, err)
	}
	return &schema.ToolInfo{Name: spill.RecallToolName, Desc: desc, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(js)}, nil
}

// RecallTool returns the recall tool for an eino agent's tools: described
// by [RecallToolInfo], it answers each call with sp.HandleRecall. An
// answer the Spiller refuses (an unknown key, bad arguments, a damaged
// segment) is the error's text, for the model to read as the tool's
// result; a context done or a Spiller without a store fails the call.
// [Tools] and [ToolsWith] describe it with [RecallSpec].
func RecallTool(sp *spill.Spiller) tool.InvokableTool { return recallTool{sp: sp} }

type recallTool struct{ sp *spill.Spiller }

// Info implements tool.BaseTool.
func (recallTool) Info(context.Context) (*schema.ToolInfo, error) { return RecallToolInfo() }

// InvokableRun implements tool.InvokableTool.
func (t recallTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	out, err := t.sp.HandleRecall(ctx, json.RawMessage(args))
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil, errors.Is(err, spill.ErrNoStore):
		return "", err
	}
	return "recall failed: " + err.Error(), nil
}

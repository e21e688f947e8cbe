package wire

import (
	"encoding/json"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// RecallTool returns the declaration of the recall tool
// ([spill.RecallTool], which a pointer's text tells the model to call)
// in the tools form of dialect d, to be added to the request's tools: an
// entry of the tools array (of toolConfig.tools in Bedrock; in Gemini, a
// tools entry holding the one function declaration), with the tool's
// description beside its name, where each provider reads it, and its
// input schema. It carries no annotations, which providers refuse in a
// tools array: a [Session] or a [Guarded] with a *spill.Spiller gives
// the tool its annotations (read-only, closed-world) by itself. It
// returns nil for a dialect the package does not know.
func RecallTool(d Dialect) json.RawMessage {
	p := d.provider()
	if p == nil {
		return nil
	}
	t := spill.RecallTool()
	schema, _ := asObject(t.Schema)
	desc := schema["description"]
	delete(schema, "description")
	obj, _ := asObject(p.declare(t.Name, jk.marshal(schema)))
	inner, decl, _ := p.toolDecl(obj)
	decl["description"] = desc
	if inner != "" {
		obj[inner] = jk.marshal(decl)
	}
	entry := jk.marshal(obj)
	if l := p.toolLists[0]; len(l.groups) > 0 {
		return jk.marshal(map[string]any{l.groups[0]: []json.RawMessage{entry}})
	}
	return entry
}

// recallTool returns the recall tool whose annotations a session or a
// Guarded with Spiller sp gives the tool of its name when nothing else
// annotates it: the Spiller answers its calls, read-only and
// closed-world, so what it answers is reconstructible and never spilled
// again. ok is false for another Spiller, whose recall tool, if any, the
// package does not know.
func recallTool(sp pruneguard.Spiller) (pruneguard.Tool, bool) {
	if _, ok := sp.(*spill.Spiller); !ok {
		return pruneguard.Tool{}, false
	}
	return spill.RecallTool(), true
}

package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// ToolDecl is one tool declared in a request body's tools array.
//
// The zero ToolDecl declares nothing; [Body.Tools] returns them filled in.
type ToolDecl struct {
	// Name is the tool's name as calls give it.
	Name string
	// Schema is the tool's input JSON Schema (parameters, input_schema,
	// inputSchema.json, parametersJsonSchema), if any.
	Schema json.RawMessage
	// Annotations are MCP-style annotations found on the declaration
	// ("annotations" beside the name), if any.
	Annotations pruneguard.Annotations
	// Annotated reports whether the declaration carried annotations.
	Annotated bool
}

// Tools lists the tools the body declares, in order, in the shape of its
// dialect: Chat "tools" (and legacy "functions"), Responses "tools" of
// type function or custom, Anthropic "tools", Gemini
// "tools[].functionDeclarations", Bedrock "toolConfig.tools[].toolSpec".
// Provider-run tools without a name are skipped. Entries that are not
// objects are ignored, since providers reject them before any pruning
// matters.
func (b *Body) Tools() []ToolDecl {
	var out []ToolDecl
	b.eachTool(func(name string, schema json.RawMessage, ann json.RawMessage, _ func(edit toolEdit)) {
		t := ToolDecl{Name: name, Schema: schema}
		t.Annotations, t.Annotated = parseAnnotations(ann)
		out = append(out, t)
	})
	return out
}

// toolEdit says what to do with one tool declaration.
type toolEdit struct {
	drop   bool
	schema json.RawMessage // replacement schema, when not nil
}

// schemaKey returns the key of the tool declaration obj that holds its
// input schema in dialect d.
func schemaKey(d Dialect, obj map[string]json.RawMessage) string {
	switch d {
	case Anthropic:
		return "input_schema"
	case Gemini:
		if _, ok := obj["parametersJsonSchema"]; ok {
			return "parametersJsonSchema"
		}
		return "parameters"
	case Bedrock:
		return "inputSchema"
	}
	if _, ok := obj["parameters"]; !ok {
		if _, ok := obj["input_schema"]; ok {
			return "input_schema"
		}
	}
	return "parameters"
}

// eachTool calls fn for each declared tool with its name, schema and
// annotations. When fn calls edit, the declaration is dropped or its
// schema replaced in the body's top-level fields.
func (b *Body) eachTool(fn func(name string, schema, ann json.RawMessage, edit func(toolEdit))) {
	if b == nil || b.top == nil {
		return
	}
	// decl visits one declaration object (its inner object when inner is
	// set) and stores in fate what fn asks to do with it.
	decl := func(obj map[string]json.RawMessage, inner string, fate *toolEdit) {
		target := obj
		if inner != "" {
			o, ok := asObject(obj[inner])
			if !ok {
				return
			}
			target = o
		}
		name, _ := optString(target, "name")
		if name == "" {
			return
		}
		ann := target["annotations"]
		if isNull(ann) {
			ann = obj["annotations"]
		}
		key := schemaKey(b.Dialect, target)
		schema := target[key]
		if b.Dialect == Bedrock {
			if s, ok := asObject(schema); ok {
				schema = s["json"]
			}
		}
		if isNull(schema) {
			schema = nil
		}
		fn(name, schema, ann, func(e toolEdit) { *fate = e })
	}
	// editArray runs decl over the objects of an array and rebuilds it
	// when some declaration was edited.
	editArray := func(raw json.RawMessage, inner func(map[string]json.RawMessage) string) (json.RawMessage, bool) {
		items, ok := asArray(raw)
		if !ok {
			return nil, false
		}
		changed := false
		var kept []json.RawMessage
		for _, it := range items {
			obj, ok := asObject(it)
			if !ok {
				kept = append(kept, it)
				continue
			}
			in := inner(obj)
			var fate toolEdit
			decl(obj, in, &fate)
			switch {
			case fate.drop:
				changed = true
				continue
			case fate.schema != nil:
				changed = true
				it = replaceSchema(b.Dialect, obj, in, fate.schema)
			}
			kept = append(kept, it)
		}
		if !changed {
			return nil, false
		}
		return joinArray(kept), true
	}
	switch b.Dialect {
	case OpenAIChat:
		for _, key := range []string{"tools", "functions"} {
			v, ok := editArray(b.field(key), func(obj map[string]json.RawMessage) string {
				if _, ok := obj["function"]; ok {
					return "function"
				}
				if _, ok := obj["custom"]; ok {
					return "custom"
				}
				return ""
			})
			if ok {
				b.setField(key, v)
			}
		}
	case OpenAIResponses, Anthropic:
		if v, ok := editArray(b.field("tools"), func(map[string]json.RawMessage) string { return "" }); ok {
			b.setField("tools", v)
		}
	case Gemini:
		key := "tools"
		groups, ok := asArray(b.field(key))
		if !ok {
			return
		}
		changed := false
		for g, gr := range groups {
			obj, ok := asObject(gr)
			if !ok {
				continue
			}
			for _, fk := range []string{"functionDeclarations", "function_declarations"} {
				if v, ok := editArray(obj[fk], func(map[string]json.RawMessage) string { return "" }); ok {
					obj[fk] = v
					groups[g], _ = json.Marshal(obj)
					changed = true
				}
			}
		}
		if changed {
			b.setField(key, joinArray(groups))
		}
	case Bedrock:
		cfg, ok := asObject(b.field("toolConfig"))
		if !ok {
			return
		}
		if v, ok := editArray(cfg["tools"], func(map[string]json.RawMessage) string { return "toolSpec" }); ok {
			cfg["tools"] = v
			raw, _ := json.Marshal(cfg)
			b.setField("toolConfig", raw)
		}
	}
}

// toolArray is one tools array of a body, by its path, with its length.
type toolArray struct {
	path string
	n    int
}

// toolArraysOf lists the tools arrays of b, in a fixed order: Chat tools
// and functions, Responses and Anthropic tools, each Gemini
// functionDeclarations list, Bedrock toolConfig.tools. Every entry
// counts, named or not (a hosted Responses tool has no name).
func toolArraysOf(b *Body) []toolArray {
	var out []toolArray
	add := func(path string, raw json.RawMessage) {
		if items, ok := asArray(raw); ok {
			out = append(out, toolArray{path, len(items)})
		}
	}
	switch b.Dialect {
	case OpenAIChat:
		add("tools", b.field("tools"))
		add("functions", b.field("functions"))
	case OpenAIResponses, Anthropic:
		add("tools", b.field("tools"))
	case Gemini:
		groups, _ := asArray(b.field("tools"))
		for k, gr := range groups {
			obj, ok := asObject(gr)
			if !ok {
				continue
			}
			for _, fk := range []string{"functionDeclarations", "function_declarations"} {
				add(fmt.Sprintf("tools[%d].%s", k, fk), obj[fk])
			}
		}
	case Bedrock:
		add("toolConfig.tools", path(b.field("toolConfig"), "tools"))
	}
	return out
}

// toolArrays maps the path of each tools array of b to its length.
func toolArrays(b *Body) map[string]int {
	out := map[string]int{}
	for _, a := range toolArraysOf(b) {
		out[a.path] = a.n
	}
	return out
}

// hasSystemPrompt reports whether the body has a system prompt that
// tombstone lines can go into: always in Anthropic ("system") and
// Responses ("instructions"), which every model accepts; in Chat a system
// or developer message, in Gemini a systemInstruction, in Bedrock a
// non-empty system list. Some models and servers reject a system prompt
// (OpenAI o1-mini, chat templates without a system role such as Gemma's,
// Gemma on the Gemini API, Bedrock models without system support), so a
// prune never adds one to a body that has none.
func (b *Body) hasSystemPrompt() bool {
	switch b.Dialect {
	case Anthropic, OpenAIResponses:
		return true
	case OpenAIChat:
		return b.systemMessage() >= 0
	case Gemini:
		return kindOf(b.field("systemInstruction")) == '{' || kindOf(b.field("system_instruction")) == '{'
	case Bedrock:
		items, _ := asArray(b.field("system"))
		return len(items) > 0
	}
	return false
}

// systemMessage returns the index of the first Chat system or developer
// message, or -1.
func (b *Body) systemMessage() int {
	for i := range b.facts {
		if isSystem(&b.facts[i]) {
			return i
		}
	}
	return -1
}

// replaceSchema returns the declaration with its schema swapped.
func replaceSchema(d Dialect, obj map[string]json.RawMessage, inner string, schema json.RawMessage) json.RawMessage {
	target := obj
	if inner != "" {
		target, _ = asObject(obj[inner])
	}
	key := schemaKey(d, target)
	if d == Bedrock {
		wrapped, _ := json.Marshal(map[string]json.RawMessage{"json": schema})
		target[key] = wrapped
	} else {
		target[key] = schema
	}
	if inner != "" {
		obj[inner], _ = json.Marshal(target)
	}
	raw, _ := json.Marshal(obj)
	return raw
}

// editTools drops the declarations of the tools in drop and replaces the
// schemas of those in compress.
func (b *Body) editTools(drop map[string]bool, compress map[string]json.RawMessage) {
	if len(drop) == 0 && len(compress) == 0 {
		return
	}
	b.eachTool(func(name string, _, _ json.RawMessage, edit func(toolEdit)) {
		switch {
		case drop[name]:
			edit(toolEdit{drop: true})
		case compress[name] != nil:
			edit(toolEdit{schema: compress[name]})
		}
	})
}

func parseAnnotations(raw json.RawMessage) (pruneguard.Annotations, bool) {
	var a pruneguard.Annotations
	if isNull(raw) || kindOf(raw) != '{' {
		return a, false
	}
	if json.Unmarshal(raw, &a) != nil {
		return pruneguard.Annotations{}, false
	}
	return a, a != (pruneguard.Annotations{})
}

// Manifest is an MCP tools/list result: the tools a server offers, with
// their annotations.
//
// The zero Manifest lists no tools and supplies nothing.
type Manifest struct {
	// Tools lists the server's tools, in order.
	Tools []ManifestTool `json:"tools"`
}

// ManifestTool is one tool of a [Manifest]: its name, description, input
// JSON Schema and MCP annotations, as tools/list gives them.
//
// The zero ManifestTool has no name; [ReadManifest] refuses a tool
// without one.
type ManifestTool struct {
	Name        string                  `json:"name"`
	Description string                  `json:"description,omitempty"`
	InputSchema json.RawMessage         `json:"inputSchema,omitempty"`
	Annotations *pruneguard.Annotations `json:"annotations,omitempty"`
}

// ReadManifest parses an MCP tools/list result
// ({"tools":[{"name","description","inputSchema","annotations"}]}). The
// JSON-RPC envelope ({"result": {"tools": ...}}) is accepted too.
func ReadManifest(data []byte) (*Manifest, error) {
	if err := checkText(data); err != nil {
		return nil, fmt.Errorf("wire: tools manifest: %w", err)
	}
	var env struct {
		Tools  *[]ManifestTool `json:"tools"`
		Result *Manifest       `json:"result"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("wire: tools manifest: %v", err)
	}
	m := &Manifest{}
	switch {
	case env.Tools != nil:
		m.Tools = *env.Tools
	case env.Result != nil:
		m = env.Result
	default:
		return nil, fmt.Errorf("wire: tools manifest: no \"tools\" array")
	}
	for i, t := range m.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("wire: tools manifest: tools[%d] has no name", i)
		}
	}
	return m, nil
}

// ---- Tombstones -----------------------------------------------------------

// setTombstones writes the tombstone lines into the body's system prompt:
// Anthropic "system" (a string gets the lines appended, a block array a
// text block), Bedrock "system" (a text block), Responses "instructions",
// Gemini "systemInstruction" (a text part), and for Chat the first system
// or developer message (text appended). A Chat, Gemini or Bedrock body
// without a system prompt gets none (see hasSystemPrompt; Body.Bind
// then lets the core make no tombstone). Outside Chat the lines go into
// the prompt as read, so a second call replaces the lines of the first.
// With no lines nothing changes.
func (b *Body) setTombstones(lines []string) {
	if len(lines) == 0 {
		return
	}
	text := strings.Join(lines, "\n")
	str := mustString(text)
	orig := func(key string) json.RawMessage { return b.top.fields[key] }
	switch b.Dialect {
	case Anthropic:
		switch sys := orig("system"); kindOf(sys) {
		case '"':
			s, _ := asString(sys)
			b.setField("system", mustString(s+"\n\n"+text))
		case '[':
			items, _ := asArray(sys)
			b.setField("system", joinArray(append(items, textBlock(str))))
		default:
			b.setField("system", str)
		}
	case Bedrock:
		blk, _ := json.Marshal(map[string]string{"text": text})
		items, _ := asArray(orig("system"))
		b.setField("system", joinArray(append(items, blk)))
	case OpenAIResponses:
		s, _ := asString(orig("instructions"))
		if s != "" {
			s += "\n\n"
		}
		b.setField("instructions", mustString(s+text))
	case Gemini:
		key := "systemInstruction"
		if _, ok := b.top.fields["system_instruction"]; ok {
			key = "system_instruction"
		}
		part, _ := json.Marshal(map[string]string{"text": text})
		si, ok := asObject(orig(key))
		if !ok {
			si = map[string]json.RawMessage{}
		}
		parts, _ := asArray(si["parts"])
		si["parts"] = joinArray(append(parts, part))
		raw, _ := json.Marshal(si)
		b.setField(key, raw)
	case OpenAIChat:
		if i := b.systemMessage(); i >= 0 {
			raw, err := appendChatText(b.facts[i].raw, text)
			if err != nil {
				return
			}
			f, err := parseMessage(OpenAIChat, raw)
			if err != nil {
				return
			}
			b.facts[i] = f
			if b.materialised() {
				b.Messages[i] = f.message()
			}
			b.dirty = true
		}
	}
}

// appendChatText appends a line of text to a chat message's content.
func appendChatText(raw json.RawMessage, text string) (json.RawMessage, error) {
	obj, ok := asObject(raw)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	switch c := obj["content"]; kindOf(c) {
	case '"':
		s, _ := asString(c)
		obj["content"] = mustString(s + "\n\n" + text)
	case '[':
		parts, _ := asArray(c)
		part, _ := json.Marshal(map[string]string{"type": "text", "text": text})
		obj["content"] = joinArray(append(parts, part))
	default:
		obj["content"] = mustString(text)
	}
	return json.Marshal(obj)
}

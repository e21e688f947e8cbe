package wire

import (
	"encoding/json"
	"fmt"

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
	if b == nil || b.top == nil {
		return nil
	}
	var out []ToolDecl
	walkTools(b.provider(), bodyTools(b), func(name string, schema, ann json.RawMessage) toolEdit {
		t := ToolDecl{Name: name, Schema: schema}
		t.Annotations, t.Annotated = parseAnnotations(ann)
		out = append(out, t)
		return toolEdit{}
	})
	return out
}

// toolEdit says what to do with one tool declaration.
type toolEdit struct {
	drop   bool
	schema json.RawMessage // replacement schema, when not nil
}

// toolList is where a provider declares tools: a top-level field holding
// an array of tool entries; or an object holding that array under inner
// (Bedrock's toolConfig.tools); or, with groups, an array of groups each
// holding arrays of declarations under those keys (Gemini's
// tools[].functionDeclarations).
type toolList struct {
	key, inner string
	groups     []string
}

// toolIO is the top-level fields of a request a walk over its tools
// declarations reads and writes. del, when set, removes a field: a list
// that empties is then left out, and so is a Gemini group or a field
// with no list left; without it an emptied list stays, empty.
type toolIO struct {
	get func(key string) json.RawMessage
	set func(key string, v json.RawMessage)
	del func(key string)
}

// bodyTools is the walk of a body's tools, edits included; emptied lists
// stay (a guarded prune never empties one, see [CodeEmptyTools]).
func bodyTools(b *Body) toolIO {
	return toolIO{get: b.field, set: b.setField}
}

// requestTools is the walk of a request's fields; emptied lists go.
func requestTools(top *topFields) toolIO {
	return toolIO{
		get: func(k string) json.RawMessage { v, _ := top.get(k); return v },
		set: top.set, del: top.del,
	}
}

// walkTools calls fn with each named tool declaration of a request, in
// order, with its name, input schema and annotations, and carries out
// the edit fn returns: the declaration dropped, or its schema replaced
// (when it has a schema slot; a Chat custom tool has none).
func walkTools(p *provider, io toolIO, fn func(name string, schema, ann json.RawMessage) toolEdit) {
	for _, l := range p.toolLists {
		v := io.get(l.key)
		if len(l.groups) > 0 {
			walkToolGroups(p, io, l, v, fn)
			continue
		}
		var cfg map[string]json.RawMessage // the object holding the list, if any
		if l.inner != "" {
			var ok bool
			if cfg, ok = asObject(v); !ok {
				continue
			}
			v = cfg[l.inner]
		}
		list, n, changed := editToolList(p, v, fn)
		switch {
		case !changed:
		case n == 0 && io.del != nil:
			io.del(l.key)
		case cfg != nil:
			cfg[l.inner] = list
			raw, _ := json.Marshal(cfg)
			io.set(l.key, raw)
		default:
			io.set(l.key, list)
		}
	}
}

// walkToolGroups is walkTools over an array of groups of declarations.
func walkToolGroups(p *provider, io toolIO, l toolList, v json.RawMessage, fn func(name string, schema, ann json.RawMessage) toolEdit) {
	groups, ok := asArray(v)
	if !ok {
		return
	}
	changedAny := false
	kept := groups[:0:0]
	for _, gr := range groups {
		obj, ok := asObject(gr)
		if !ok {
			kept = append(kept, gr)
			continue
		}
		drop := false
		for _, gk := range l.groups {
			if _, has := obj[gk]; !has || drop {
				continue
			}
			list, n, changed := editToolList(p, obj[gk], fn)
			if !changed {
				continue
			}
			changedAny = true
			if n == 0 && io.del != nil && len(obj) == 1 {
				drop = true
				continue
			}
			obj[gk] = list
			gr, _ = json.Marshal(obj)
		}
		if !drop {
			kept = append(kept, gr)
		}
	}
	switch {
	case !changedAny:
	case len(kept) == 0 && io.del != nil:
		io.del(l.key)
	default:
		io.set(l.key, joinArray(kept))
	}
}

// editToolList runs fn over the declarations of one array of tool
// entries and returns the array as fn's edits leave it, its length, and
// whether an edit changed it.
func editToolList(p *provider, raw json.RawMessage, fn func(name string, schema, ann json.RawMessage) toolEdit) (json.RawMessage, int, bool) {
	items, ok := asArray(raw)
	if !ok {
		return raw, 0, false
	}
	changed := false
	kept := items[:0:0]
	for _, it := range items {
		obj, ok := asObject(it)
		if !ok {
			kept = append(kept, it)
			continue
		}
		inner, decl, key := p.toolDecl(obj)
		name := ""
		if decl != nil {
			name, _ = optString(decl, "name")
		}
		if name == "" {
			kept = append(kept, it)
			continue
		}
		ann := decl["annotations"]
		if isNull(ann) {
			ann = obj["annotations"]
		}
		var schema json.RawMessage
		if key != "" {
			schema = decl[key]
			if p.schemaInJSON {
				schema = path(schema, "json")
			}
			if isNull(schema) {
				schema = nil
			}
		}
		e := fn(name, schema, ann)
		switch {
		case e.drop:
			changed = true
			continue
		case e.schema != nil && key != "":
			changed = true
			it = replaceSchema(p, obj, inner, decl, key, e.schema)
		}
		kept = append(kept, it)
	}
	if !changed {
		return raw, len(kept), false
	}
	return joinArray(kept), len(kept), true
}

// replaceSchema returns the tools entry obj with the schema of its
// declaration decl (the entry, or its member inner) replaced.
func replaceSchema(p *provider, obj map[string]json.RawMessage, inner string, decl map[string]json.RawMessage, key string, schema json.RawMessage) json.RawMessage {
	if p.schemaInJSON {
		schema, _ = json.Marshal(map[string]json.RawMessage{"json": schema})
	}
	decl[key] = schema
	if inner != "" {
		obj[inner], _ = json.Marshal(decl)
	}
	raw, _ := json.Marshal(obj)
	return raw
}

// toolArray is one tools array of a body, by its path, with its length.
type toolArray struct {
	path string
	n    int
}

// toolArraysOf lists the tools arrays of b, in the order of the
// provider's tool lists, each Gemini group's in order. Every entry
// counts, named or not (a hosted Responses tool has no name).
func toolArraysOf(b *Body) []toolArray {
	var out []toolArray
	add := func(path string, raw json.RawMessage) {
		if items, ok := asArray(raw); ok {
			out = append(out, toolArray{path, len(items)})
		}
	}
	for _, l := range b.provider().toolLists {
		v := b.field(l.key)
		switch {
		case l.inner != "":
			add(l.key+"."+l.inner, path(v, l.inner))
		case len(l.groups) > 0:
			groups, _ := asArray(v)
			for k, gr := range groups {
				obj, ok := asObject(gr)
				if !ok {
					continue
				}
				for _, gk := range l.groups {
					add(fmt.Sprintf("%s[%d].%s", l.key, k, gk), obj[gk])
				}
			}
		default:
			add(l.key, v)
		}
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

// editTools drops the declarations of the tools in drop and replaces the
// schemas of those in compress, in the body's top-level fields.
func (b *Body) editTools(drop map[string]bool, compress map[string]json.RawMessage) {
	if len(drop) == 0 && len(compress) == 0 {
		return
	}
	walkTools(b.provider(), bodyTools(b), toolEdits(drop, compress))
}

// editDeclarations is editTools for a request's fields, as a session
// keeps them: a list that empties is left out, never written empty.
func editDeclarations(p *provider, top *topFields, drop map[string]bool, compress map[string]json.RawMessage) {
	if len(drop) == 0 && len(compress) == 0 {
		return
	}
	walkTools(p, requestTools(top), toolEdits(drop, compress))
}

// toolEdits is the walk that drops the tools in drop and compresses
// those in compress.
func toolEdits(drop map[string]bool, compress map[string]json.RawMessage) func(string, json.RawMessage, json.RawMessage) toolEdit {
	return func(name string, _, _ json.RawMessage) toolEdit {
		switch {
		case drop[name]:
			return toolEdit{drop: true}
		case compress[name] != nil:
			return toolEdit{schema: compress[name]}
		}
		return toolEdit{}
	}
}

// declaredCount counts the named tool declarations of a request.
func declaredCount(p *provider, top *topFields) int {
	n := 0
	walkTools(p, requestTools(top), func(string, json.RawMessage, json.RawMessage) toolEdit {
		n++
		return toolEdit{}
	})
	return n
}

// parseAnnotations reads MCP annotations; ok is false when raw is not an
// object or carries none.
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

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
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
	out, _ := toolDecls(b.provider(), bodyTools(b), false)
	return out
}

// toolDecls lists the tools a request declares, as [Body.Tools] does.
// With strict, annotations that are bad input are an error wrapping an
// *AnnotationError (the first found); without, they count as none.
func toolDecls(p *provider, io toolIO, strict bool) ([]ToolDecl, error) {
	var out []ToolDecl
	var bad error
	seen := map[string]ToolDecl{}
	walkTools(p, io, func(d toolEntry) toolEdit {
		t := ToolDecl{Name: d.name, Schema: d.schema}
		var err error
		t.Annotations, t.Annotated, err = readAnnotations(d.name, d.ann)
		if d.dupAnn {
			err = &AnnotationError{Tool: d.name, Key: "annotations", Problem: "is given twice in the declaration"}
		}
		if o, ok := seen[d.name]; ok && err == nil && (o.Annotated != t.Annotated || !sameHints(o.Annotations, t.Annotations)) {
			err = &AnnotationError{Tool: d.name, Key: "name", Problem: "is declared twice with different annotations"}
		}
		seen[d.name] = t
		if err != nil {
			t.Annotations, t.Annotated = pruneguard.Annotations{}, false
			if bad == nil {
				bad = err
			}
		}
		out = append(out, t)
		return toolEdit{}
	})
	if strict && bad != nil {
		return nil, bad
	}
	return out, nil
}

// toolEntry is one named tool declaration a walk over a request's tools
// meets: its name, input schema and annotations, and whether the
// declaration gives "annotations" twice.
type toolEntry struct {
	name        string
	schema, ann json.RawMessage
	dupAnn      bool
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
// order, and carries out
// the edit fn returns: the declaration dropped, or its schema replaced
// (when it has a schema slot; a Chat custom tool has none).
func walkTools(p *provider, io toolIO, fn func(toolEntry) toolEdit) {
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
func walkToolGroups(p *provider, io toolIO, l toolList, v json.RawMessage, fn func(toolEntry) toolEdit) {
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
func editToolList(p *provider, raw json.RawMessage, fn func(toolEntry) toolEdit) (json.RawMessage, int, bool) {
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
		dup := twice(it, "annotations") || (inner != "" && twice(obj[inner], "annotations"))
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
		e := fn(toolEntry{name: name, schema: schema, ann: ann, dupAnn: dup})
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

// twice reports whether the object raw gives key twice at its top level.
func twice(raw json.RawMessage, key string) bool {
	if bytes.Count(raw, []byte(`"`+key+`"`)) < 2 {
		return false // one fast scan for every declaration
	}
	_, err := readTopFields(raw)
	k, dup := duplicateKey(err)
	return dup && k == key
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
func toolEdits(drop map[string]bool, compress map[string]json.RawMessage) func(toolEntry) toolEdit {
	return func(d toolEntry) toolEdit {
		switch {
		case drop[d.name]:
			return toolEdit{drop: true}
		case compress[d.name] != nil:
			return toolEdit{schema: compress[d.name]}
		}
		return toolEdit{}
	}
}

// declaredCount counts the named tool declarations of a request.
func declaredCount(p *provider, top *topFields) int {
	n := 0
	walkTools(p, requestTools(top), func(toolEntry) toolEdit {
		n++
		return toolEdit{}
	})
	return n
}

// AnnotationError reports MCP annotations that are bad input: a key given
// twice (a client would read one of the two, and which one is not said),
// a hint that is neither a boolean nor null, or a tool that a manifest
// lists twice. Keys are read as MCP clients read them, exactly:
// "readonlyhint" is not "readOnlyHint", and a key spelt otherwise is no
// hint at all. [ReadManifest], [Body.Bind], [Bind], a [Session]'s
// request fields and [NewSession] (for the tools of its manifest) refuse
// such annotations with an error wrapping an *AnnotationError.
//
// The zero AnnotationError names no tool.
type AnnotationError struct {
	// Tool is the tool whose annotations are bad, as its declaration
	// names it.
	Tool string
	// Key is the key at fault ("readOnlyHint", or "name" for a tool
	// listed twice).
	Key string
	// Problem says what is wrong with it.
	Problem string
}

// Error returns the tool, the key and the problem on one line.
func (e *AnnotationError) Error() string {
	return fmt.Sprintf("tool %q: annotations: %q %s", e.Tool, e.Key, e.Problem)
}

// hintKeys are the annotation keys that decide a tool's class, as MCP
// spells them.
var hintKeys = [...]string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// readAnnotations reads the MCP annotations of tool from raw. Keys match
// exactly; a key given twice, or a hint that is not a boolean or null, is
// an *AnnotationError. ok is false when raw is absent, null, not an
// object or carries no hint.
func readAnnotations(tool string, raw json.RawMessage) (a pruneguard.Annotations, ok bool, err error) {
	if isNull(raw) || kindOf(raw) != '{' {
		return a, false, nil
	}
	obj, err := readTopFields(raw)
	if err != nil {
		if key, dup := duplicateKey(err); dup {
			return a, false, &AnnotationError{Tool: tool, Key: key, Problem: "is given twice"}
		}
		return a, false, nil
	}
	dst := [...]**bool{&a.ReadOnlyHint, &a.DestructiveHint, &a.IdempotentHint, &a.OpenWorldHint}
	for i, key := range hintKeys {
		v, has := obj.get(key)
		switch {
		case !has || isNull(v):
		case string(trimSpace(v)) == "true":
			*dst[i] = pruneguard.Bool(true)
		case string(trimSpace(v)) == "false":
			*dst[i] = pruneguard.Bool(false)
		default:
			return pruneguard.Annotations{}, false, &AnnotationError{Tool: tool, Key: key, Problem: "is " + kindName(v) + ", not a boolean"}
		}
	}
	return a, a != (pruneguard.Annotations{}), nil
}

// sameHints reports whether a and b give the same hints.
func sameHints(a, b pruneguard.Annotations) bool {
	x := [...]*bool{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint}
	y := [...]*bool{b.ReadOnlyHint, b.DestructiveHint, b.IdempotentHint, b.OpenWorldHint}
	for i := range x {
		if (x[i] == nil) != (y[i] == nil) || (x[i] != nil && *x[i] != *y[i]) {
			return false
		}
	}
	return true
}

// parseAnnotations is readAnnotations for a caller that reports no
// error: annotations that are bad input count as none.
func parseAnnotations(raw json.RawMessage) (pruneguard.Annotations, bool) {
	a, ok, err := readAnnotations("", raw)
	if err != nil {
		return pruneguard.Annotations{}, false
	}
	return a, ok
}

// errDuplicateKey is what readTopFields says of a key given twice.
type errDuplicateKey struct{ key string }

func (e errDuplicateKey) Error() string { return fmt.Sprintf("the key %q is given twice", e.key) }

// duplicateKey returns the key an error of readTopFields found twice.
func duplicateKey(err error) (string, bool) {
	var d errDuplicateKey
	if errors.As(err, &d) {
		return d.key, true
	}
	return "", false
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
// JSON Schema and MCP annotations, as tools/list gives them, and the scope
// of what it reads or writes, which MCP does not carry.
//
// The zero ManifestTool has no name; [ReadManifest] refuses a tool
// without one.
type ManifestTool struct {
	Name        string                  `json:"name"`
	Description string                  `json:"description,omitempty"`
	InputSchema json.RawMessage         `json:"inputSchema,omitempty"`
	Annotations *pruneguard.Annotations `json:"annotations,omitempty"`
	// Scope names what the tool reads or writes, as
	// [pruneguard.Tool].Scope does: a write of one scope leaves the reads
	// of another reconstructible. Empty means everything. It is read from
	// a "scope" string beside the name, and given to the Context with
	// the tool.
	Scope string `json:"scope,omitempty"`
}

// ReadManifest parses an MCP tools/list result
// ({"tools":[{"name","description","inputSchema","annotations"}]}), each
// tool with an optional "scope" string. The JSON-RPC envelope
// ({"result": {"tools": ...}}) is accepted too. Keys are read exactly as
// MCP clients read them; a key given twice at any of these levels, a hint
// that is not a boolean, and a tool listed twice are refused (the last
// two with an error wrapping an [*AnnotationError]).
func ReadManifest(data []byte) (*Manifest, error) {
	if err := checkText(data); err != nil {
		return nil, fmt.Errorf("wire: tools manifest: %w", err)
	}
	env, err := readTopFields(data)
	if err != nil {
		return nil, fmt.Errorf("wire: tools manifest: %v", err)
	}
	list, ok := env.get("tools")
	if res, has := env.get("result"); !ok && has && kindOf(res) == '{' {
		inner, err := readTopFields(res)
		if err != nil {
			return nil, fmt.Errorf("wire: tools manifest: result: %v", err)
		}
		list, ok = inner.get("tools")
	}
	items, isArr := asArray(list)
	if !ok || !isArr {
		return nil, fmt.Errorf("wire: tools manifest: no \"tools\" array")
	}
	m := &Manifest{Tools: make([]ManifestTool, 0, len(items))}
	for i, it := range items {
		t, err := readManifestTool(it)
		if err != nil {
			return nil, fmt.Errorf("wire: tools manifest: tools[%d]: %w", i, err)
		}
		m.Tools = append(m.Tools, t)
	}
	if _, err := m.byName(); err != nil {
		return nil, fmt.Errorf("wire: tools manifest: %w", err)
	}
	return m, nil
}

// readManifestTool reads one tool of a tools/list result.
func readManifestTool(raw json.RawMessage) (ManifestTool, error) {
	var t ManifestTool
	if kindOf(raw) != '{' {
		return t, fmt.Errorf("is %s, not an object", kindName(raw))
	}
	obj, err := readTopFields(raw)
	if err != nil {
		return t, err
	}
	if t.Name, err = optString(obj.vals, "name"); err != nil {
		return t, err
	}
	if t.Name == "" {
		return t, errors.New("has no name")
	}
	if t.Description, err = optString(obj.vals, "description"); err != nil {
		return t, err
	}
	if t.Scope, err = optString(obj.vals, "scope"); err != nil {
		return t, err
	}
	if v, ok := obj.get("inputSchema"); ok && !isNull(v) {
		t.InputSchema = append(json.RawMessage(nil), v...)
	}
	if v, ok := obj.get("annotations"); ok && !isNull(v) {
		if kindOf(v) != '{' {
			return t, fmt.Errorf("annotations is %s, not an object", kindName(v))
		}
		a, _, err := readAnnotations(t.Name, v)
		if err != nil {
			return t, err
		}
		t.Annotations = &a
	}
	return t, nil
}

// byName indexes the manifest's tools by name; a tool listed twice is an
// error wrapping an *AnnotationError, since its two entries may say
// different things. A nil manifest indexes nothing.
func (m *Manifest) byName() (map[string]ManifestTool, error) {
	out := map[string]ManifestTool{}
	if m == nil {
		return out, nil
	}
	for _, t := range m.Tools {
		if _, dup := out[t.Name]; dup {
			return nil, &AnnotationError{Tool: t.Name, Key: "name", Problem: "is listed twice in the manifest"}
		}
		out[t.Name] = t
	}
	return out, nil
}

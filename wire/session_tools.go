package wire

import (
	"encoding/json"
)

// A tools declaration, as the session edits it: each dialect's list of
// tool objects, where the name and the input schema sit in each, and what
// is left when a list empties.

// declSlot is where one dialect keeps its tool lists.
type declSlot struct {
	key   string // top-level key: "tools", "functions", "toolConfig"
	inner string // the key of the list inside that value ("tools" in a Bedrock toolConfig), or ""
}

func declSlots(d Dialect) []declSlot {
	switch d {
	case OpenAIChat:
		return []declSlot{{key: "tools"}, {key: "functions"}}
	case Bedrock:
		return []declSlot{{key: "toolConfig", inner: "tools"}}
	}
	return []declSlot{{key: "tools"}}
}

// declName returns the name of a declaration and the object holding its
// schema, with the schema's key in it; holder is nil when the
// declaration has no schema slot (a provider tool).
func declName(d Dialect, obj map[string]json.RawMessage) (name string, holder map[string]json.RawMessage, holderKey, schemaKey string) {
	switch d {
	case OpenAIChat:
		if fn, ok := jk.obj(obj["function"]); ok {
			name, _ = jk.str(fn["name"])
			return name, fn, "function", "parameters"
		}
		if c, ok := jk.obj(obj["custom"]); ok {
			name, _ = jk.str(c["name"])
			return name, nil, "", ""
		}
		name, _ = jk.str(obj["name"]) // a legacy functions entry
		return name, obj, "", "parameters"
	case OpenAIResponses:
		name, _ = jk.str(obj["name"])
		return name, obj, "", "parameters"
	case Anthropic:
		name, _ = jk.str(obj["name"])
		return name, obj, "", "input_schema"
	case Gemini:
		name, _ = jk.str(obj["name"])
		if _, ok := obj["parametersJsonSchema"]; ok {
			return name, obj, "", "parametersJsonSchema"
		}
		return name, obj, "", "parameters"
	case Bedrock:
		spec, ok := jk.obj(obj["toolSpec"])
		if !ok {
			return "", nil, "", ""
		}
		name, _ = jk.str(spec["name"])
		return name, spec, "toolSpec", "inputSchema"
	}
	return "", nil, "", ""
}

// editDeclarations drops the declarations of the tools in drop and puts
// the schemas in compress in place of those declared. A list that
// empties is left out, never written empty: a Gemini tool entry without
// declarations goes, and so does a top-level field with no list left.
func editDeclarations(d Dialect, top *topFields, drop map[string]bool, compress map[string]json.RawMessage) {
	if len(drop) == 0 && len(compress) == 0 {
		return
	}
	// edit rewrites one list of declarations; ok is false when nothing changed.
	edit := func(list json.RawMessage) (json.RawMessage, int, bool) {
		items, isArr := jk.arr(list)
		if !isArr {
			return list, 0, false
		}
		changed := false
		kept := items[:0:0]
		for _, it := range items {
			obj, isObj := jk.obj(it)
			if !isObj {
				kept = append(kept, it)
				continue
			}
			name, holder, holderKey, schemaKey := declName(d, obj)
			switch {
			case name != "" && drop[name]:
				changed = true
				continue
			case name != "" && compress[name] != nil && holder != nil:
				schema := compress[name]
				if d == Bedrock {
					schema = jk.marshal(map[string]json.RawMessage{"json": schema})
				}
				holder[schemaKey] = schema
				if holderKey != "" {
					obj[holderKey] = jk.marshal(holder)
				}
				it = jk.marshal(obj)
				changed = true
			}
			kept = append(kept, it)
		}
		return jk.join(kept), len(kept), changed
	}
	for _, slot := range declSlots(d) {
		v, ok := top.get(slot.key)
		if !ok {
			continue
		}
		switch {
		case slot.inner != "": // Bedrock toolConfig
			cfg, isObj := jk.obj(v)
			if !isObj {
				continue
			}
			list, n, changed := edit(cfg[slot.inner])
			if !changed {
				continue
			}
			if n == 0 {
				top.del(slot.key)
				continue
			}
			cfg[slot.inner] = list
			top.set(slot.key, jk.marshal(cfg))
		case d == Gemini:
			entries, isArr := jk.arr(v)
			if !isArr {
				continue
			}
			changedAny := false
			kept := entries[:0:0]
			for _, ent := range entries {
				obj, isObj := jk.obj(ent)
				lk := "functionDeclarations"
				if _, snake := obj["function_declarations"]; snake {
					lk = "function_declarations"
				}
				if !isObj || obj[lk] == nil {
					kept = append(kept, ent)
					continue
				}
				list, n, changed := edit(obj[lk])
				if !changed {
					kept = append(kept, ent)
					continue
				}
				changedAny = true
				if n == 0 && len(obj) == 1 {
					continue
				}
				obj[lk] = list
				kept = append(kept, jk.marshal(obj))
			}
			if !changedAny {
				continue
			}
			if len(kept) == 0 {
				top.del(slot.key)
				continue
			}
			top.set(slot.key, jk.join(kept))
		default:
			list, n, changed := edit(v)
			if !changed {
				continue
			}
			if n == 0 {
				top.del(slot.key)
				continue
			}
			top.set(slot.key, list)
		}
	}
}

// declaredCount counts the named tool declarations of a request.
func declaredCount(d Dialect, top *topFields) int {
	n := 0
	count := func(list json.RawMessage) {
		items, _ := jk.arr(list)
		for _, it := range items {
			if obj, ok := jk.obj(it); ok {
				if name, _, _, _ := declName(d, obj); name != "" {
					n++
				}
			}
		}
	}
	for _, slot := range declSlots(d) {
		v, ok := top.get(slot.key)
		if !ok {
			continue
		}
		switch {
		case slot.inner != "":
			cfg, _ := jk.obj(v)
			count(cfg[slot.inner])
		case d == Gemini:
			entries, _ := jk.arr(v)
			for _, ent := range entries {
				obj, _ := jk.obj(ent)
				count(obj["functionDeclarations"])
				count(obj["function_declarations"])
			}
		default:
			count(v)
		}
	}
	return n
}

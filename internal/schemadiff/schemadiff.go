// Package schemadiff finds what a compressed JSON Schema lost against the
// original: required properties, enum members and types. Descriptions,
// titles, examples and other annotations may go freely.
package schemadiff

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Loss is one structural constraint the compressed schema dropped.
type Loss struct {
	Path string // JSON-pointer-like path of the schema node, "" for the root
	Kind string // "required", "enum", "type", "property", "items"
	What string // the member, type or property lost
}

func (l Loss) String() string {
	p := l.Path
	if p == "" {
		p = "/"
	}
	return fmt.Sprintf("%s %s %s", p, l.Kind, l.What)
}

// Compare decodes both schemas and returns the constraints of orig that
// compressed no longer states, in a stable order. Invalid JSON in either
// is an error.
func Compare(orig, compressed []byte) ([]Loss, error) {
	var a, b any
	if err := json.Unmarshal(orig, &a); err != nil {
		return nil, fmt.Errorf("original schema: %w", err)
	}
	if err := json.Unmarshal(compressed, &b); err != nil {
		return nil, fmt.Errorf("compressed schema: %w", err)
	}
	var out []Loss
	walk("", a, b, &out)
	return out, nil
}

func walk(path string, a, b any, out *[]Loss) {
	am, ok := a.(map[string]any)
	if !ok {
		return
	}
	bm, _ := b.(map[string]any)
	if bm == nil {
		bm = map[string]any{}
	}
	// required
	for _, r := range strings(am["required"]) {
		if !slices.Contains(strings(bm["required"]), r) {
			*out = append(*out, Loss{path, "required", r})
		}
	}
	// enum members
	if ae, ok := am["enum"].([]any); ok {
		be, _ := bm["enum"].([]any)
		for _, v := range ae {
			if !containsJSON(be, v) {
				*out = append(*out, Loss{path, "enum", jsonString(v)})
			}
		}
	}
	if ac, ok := am["const"]; ok {
		if bc, ok := bm["const"]; !ok || jsonString(ac) != jsonString(bc) {
			*out = append(*out, Loss{path, "enum", jsonString(ac)})
		}
	}
	// type: a compressed schema that widens or drops the type loses it.
	if at := types(am["type"]); len(at) > 0 {
		bt := types(bm["type"])
		if len(bt) == 0 {
			*out = append(*out, Loss{path, "type", jsonString(am["type"])})
		} else {
			for _, t := range bt {
				if !slices.Contains(at, t) {
					*out = append(*out, Loss{path, "type", jsonString(am["type"])})
					break
				}
			}
		}
	}
	// properties
	if ap, ok := am["properties"].(map[string]any); ok {
		bp, _ := bm["properties"].(map[string]any)
		keys := make([]string, 0, len(ap))
		for k := range ap {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			bv, has := bp[k]
			if !has {
				// Dropping an optional property loses its shape; the
				// model may still send it from an earlier call.
				if hasConstraints(ap[k]) {
					*out = append(*out, Loss{path, "property", k})
				}
				continue
			}
			walk(path+"/properties/"+k, ap[k], bv, out)
		}
	}
	if ai, ok := am["items"]; ok {
		walk(path+"/items", ai, bm["items"], out)
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		as, ok := am[key].([]any)
		if !ok {
			continue
		}
		bs, _ := bm[key].([]any)
		for i, s := range as {
			var t any
			if i < len(bs) {
				t = bs[i]
			}
			walk(fmt.Sprintf("%s/%s/%d", path, key, i), s, t, out)
		}
	}
}

func hasConstraints(s any) bool {
	m, ok := s.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"type", "enum", "const", "required", "properties", "items", "anyOf", "oneOf", "allOf"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func strings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func types(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		return strings(t)
	}
	return nil
}

func containsJSON(l []any, v any) bool {
	s := jsonString(v)
	for _, x := range l {
		if jsonString(x) == s {
			return true
		}
	}
	return false
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

package pruneguard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

// realSchemas gathers the tool input schemas of the recorded transcripts:
// OpenAI's "parameters" and Anthropic's "input_schema".
func realSchemas(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"parameters", "input_schema"} {
				if s, ok := x[k].(map[string]any); ok && (s["properties"] != nil || s["type"] != nil) {
					b, _ := json.Marshal(s)
					if !seen[string(b)] {
						seen[string(b)] = true
						out = append(out, string(b))
					}
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") && !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var v any
		if json.Unmarshal(data, &v) == nil {
			walk(v)
			return nil
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 1<<20), 1<<26)
		for sc.Scan() {
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				walk(v)
			}
		}
		return sc.Err()
	})
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// stripAnnotations removes title, description, examples and default from
// every schema of a document (not from property names or values).
func stripAnnotations(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "title", "description", "examples", "default", "$comment":
		case "properties", "$defs", "definitions", "patternProperties":
			sub := map[string]any{}
			for name, e := range v.(map[string]any) {
				sub[name] = stripAnnotations(e)
			}
			out[k] = sub
		case "anyOf", "oneOf", "allOf", "prefixItems":
			var l []any
			for _, e := range v.([]any) {
				l = append(l, stripAnnotations(e))
			}
			out[k] = l
		case "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames":
			out[k] = stripAnnotations(v)
		default:
			out[k] = v
		}
	}
	return out
}

// inlineRefs replaces each {"$ref": "#/$defs/x"} by a copy of x, to a
// bounded depth (recursive definitions keep their deeper references).
func inlineRefs(root, s any, depth int) any {
	switch x := s.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok && len(x) == 1 && depth < 6 {
			for _, c := range []string{"#/$defs/", "#/definitions/"} {
				if name, ok := strings.CutPrefix(ref, c); ok {
					return inlineRefs(root, root.(map[string]any)[strings.Trim(c[2:], "/")].(map[string]any)[name], depth+1)
				}
			}
		}
		out := map[string]any{}
		for k, v := range x {
			out[k] = inlineRefs(root, v, depth)
		}
		return out
	case []any:
		var l []any
		for _, e := range x {
			l = append(l, inlineRefs(root, e, depth))
		}
		return l
	}
	return s
}

// Real tool schemas: unchanged, stripped of their annotations, or with
// their references inlined, they lose nothing; with a required property
// dropped or a property's type taken away, they do, at that place.
func TestSchemaLossRealSchemas(t *testing.T) {
	schemas := realSchemas(t)
	require.GreaterOrEqual(t, len(schemas), 20, "the transcripts hold tool schemas")
	var withRefs int
	for _, s := range schemas {
		var doc any
		require.NoError(t, json.Unmarshal([]byte(s), &doc))
		same := func(name string, comp any) {
			t.Helper()
			losses, err := schemadiff.Compare([]byte(s), mustJSON(comp))
			require.NoError(t, err)
			assert.Empty(t, losses, "%s\n%s\n%s", name, s, mustJSON(comp))
		}
		same("itself", doc)
		same("annotations dropped", stripAnnotations(doc))
		if strings.Contains(s, `"$ref"`) {
			withRefs++
			same("references inlined", inlineRefs(doc, doc, 0))
			same("references inlined and annotations dropped", stripAnnotations(inlineRefs(doc, doc, 0)))
		}

		m := doc.(map[string]any)
		if req, ok := m["required"].([]any); ok && len(req) > 0 {
			cut := stripAnnotations(doc).(map[string]any)
			cut["required"] = req[1:]
			losses, err := schemadiff.Compare([]byte(s), mustJSON(cut))
			require.NoError(t, err)
			assert.Contains(t, lossStrings(losses), "/ required "+req[0].(string), s)
		}
		if props, ok := m["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for name := range props {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				// A type an enum or const implies anyway is no constraint of its own.
				if ps, ok := props[name].(map[string]any); ok && ps["type"] != nil && ps["enum"] == nil && ps["const"] == nil {
					cut := stripAnnotations(doc).(map[string]any)
					cp := cut["properties"].(map[string]any)[name].(map[string]any)
					delete(cp, "type")
					losses, err := schemadiff.Compare([]byte(s), mustJSON(cut))
					require.NoError(t, err)
					assert.NotEmpty(t, losses, "type of %s dropped: %s", name, s)
					break
				}
			}
		}
	}
	assert.Positive(t, withRefs, "some real schemas use references")
}

func lossStrings(ls []schemadiff.Loss) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

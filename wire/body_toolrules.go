package wire

import "encoding/json"

// field returns a top-level field of the body, edits included.
func (b *Body) field(key string) json.RawMessage {
	if v, ok := b.fields[key]; ok {
		return v
	}
	if b.top == nil {
		return nil
	}
	return b.top.fields[key]
}

// setField replaces (or adds) a top-level field of the body; Marshal
// writes it in place of the one read.
func (b *Body) setField(key string, v json.RawMessage) {
	if b.fields == nil {
		b.fields = map[string]json.RawMessage{}
	}
	b.fields[key] = v
}

// path follows object keys from raw; any missing step gives nil.
func path(raw json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		obj, ok := asObject(raw)
		if !ok {
			return nil
		}
		raw = obj[k]
	}
	return raw
}

// firstPath is path over several spellings of the same field.
func firstPath(raw json.RawMessage, paths ...[]string) json.RawMessage {
	for _, p := range paths {
		if v := path(raw, p...); !isNull(v) {
			return v
		}
	}
	return nil
}

func str(raw json.RawMessage) string {
	s, _ := asString(raw)
	return s
}

// toolState is what the rules of the tools arrays and tool choices make
// of a body's top-level fields: the tools declared, and the violations
// that depend on nothing else.
type toolState struct {
	declared map[string]bool
	// toolsArray and emptyTools say that the tools field is an array, and
	// an empty one, for the providers whose history rules check tool
	// blocks and tool references against it (the table's toolBlocks and
	// toolRefs).
	toolsArray bool
	emptyTools bool
	top        []RuleViolation
}

// toolState reads the body's tools arrays and tool choices, edits
// included.
func (b *Body) toolState() *toolState {
	ts := &toolState{declared: map[string]bool{}}
	for _, t := range b.Tools() {
		ts.declared[t.Name] = true
	}
	ts.top = validateToolFields(b, ts)
	return ts
}

// validateTools lists the violations of the tools array and the tool
// choice of a body with the messages ms.
func validateTools(p *provider, ms []*facts, ts *toolState) []RuleViolation {
	v := violations(append([]RuleViolation(nil), ts.top...))
	if ts.emptyTools && p.toolBlocks != nil {
		for i, m := range ms {
			if m.ncalls > 0 || m.nresults > 0 {
				v = p.toolBlocks(i, v)
				break
			}
		}
	}
	return v
}

// validateToolFields lists the violations of the tools arrays and tool
// choices that depend on the top-level fields alone, as the provider's
// table checks them, and reads into ts what the rules of the history
// need of the tools array.
func validateToolFields(b *Body, ts *toolState) []RuleViolation {
	if check := b.provider().toolFields; check != nil {
		return check(b, ts, nil)
	}
	return nil
}

// unknownTools returns the names that are not empty and not declared.
func unknownTools(declared map[string]bool, names ...string) []string {
	var out []string
	for _, n := range names {
		if n != "" && !declared[n] {
			out = append(out, n)
		}
	}
	return out
}

package wire_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// A tombstone line goes into a system prompt the body already has. Chat,
// Gemini and Bedrock bodies without one get none, since some models and
// servers reject a system prompt (o1-mini, Gemma chat templates, Bedrock
// models without system support): the schema of a tool whose calls stay
// then leaves only when the tool is read-only (the model asks for it
// back), and a mutation tool keeps it.
func TestTombstoneNeedsSystemPrompt(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does. ", 6)
	bodies := map[wire.Dialect]string{
		wire.OpenAIChat: `{"tools":[{"type":"function","function":{"name":"edit","description":"` + desc + `","parameters":{"type":"object"}}},
			{"type":"function","function":{"name":"look","description":"` + desc + `","parameters":{"type":"object"}},"annotations":{"readOnlyHint":true}},
			{"type":"function","function":{"name":"spare","parameters":{"type":"object"}}}],
			"messages":[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"edit","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"look","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"tool","tool_call_id":"c2","content":"ok"},
			{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`,
		wire.Gemini: `{"tools":[{"functionDeclarations":[{"name":"edit","description":"` + desc + `"},{"name":"look","description":"` + desc + `","annotations":{"readOnlyHint":true}},{"name":"spare"}]}],
			"contents":[{"role":"user","parts":[{"text":"go"}]},
			{"role":"model","parts":[{"functionCall":{"name":"edit","args":{}}},{"functionCall":{"name":"look","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"edit","response":{}}},{"functionResponse":{"name":"look","response":{}}}]},
			{"role":"model","parts":[{"text":"done"}]},{"role":"user","parts":[{"text":"more"}]}]}`,
		wire.Bedrock: `{"toolConfig":{"tools":[{"toolSpec":{"name":"edit","description":"` + desc + `","inputSchema":{"json":{}}}},
			{"toolSpec":{"name":"look","description":"` + desc + `","inputSchema":{"json":{}}},"annotations":{"readOnlyHint":true}},
			{"toolSpec":{"name":"spare","inputSchema":{"json":{}}}}]},
			"messages":[{"role":"user","content":[{"text":"go"}]},
			{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"edit","input":{}}},{"toolUse":{"toolUseId":"c2","name":"look","input":{}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"ok"}]}},{"toolResult":{"toolUseId":"c2","content":[{"text":"ok"}]}}]},
			{"role":"assistant","content":[{"text":"done"}]},{"role":"user","content":[{"text":"more"}]}]}`,
	}
	for d, body := range bodies {
		t.Run(string(d), func(t *testing.T) {
			in, g := guarded(t, d, body, wire.Options{})
			dec, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"edit", "look"}})
			if err != nil {
				// The schema gate refuses the mutation tool outright.
				if !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return slices.Contains(r.Tools, "edit") }) {
					t.Fatalf("error %v without a refusal of edit: %+v", err, refs)
				}
				dec, refs, err = g.Prune(pruneguard.Plan{DropSchemas: []string{"look"}})
				if err != nil {
					t.Fatalf("look: %v %+v", err, refs)
				}
			}
			if len(dec.Tombstones) > 0 || slices.Contains(dec.DropSchemas, "edit") {
				t.Fatalf("decision %+v", dec)
			}
			if err := g.Apply(dec); err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)
			out := g.Body()
			raw, _ := out.Marshal()
			if strings.Contains(string(raw), "schema was withdrawn") || len(out.Messages) != len(in.Messages) {
				t.Errorf("a system prompt was written: %s", raw)
			}
			for _, k := range []string{`"system"`, `"systemInstruction"`, `"role":"system"`} {
				if strings.Contains(string(raw), k) {
					t.Errorf("output has %s: %s", k, raw)
				}
			}
		})
	}
}

// In Chat, tombstone lines go into the body's first system or developer
// message wherever it sits, never into a new one.
func TestChatTombstoneInDeveloperMessage(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does. ", 6)
	body := `{"tools":[{"type":"function","function":{"name":"edit","description":"` + desc + `","parameters":{"type":"object"}}},
		{"type":"function","function":{"name":"spare","parameters":{"type":"object"}}}],
		"messages":[{"role":"user","content":"go"},{"role":"developer","content":"be careful"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"edit","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"},
		{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{})
	d, _, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"edit"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tombstones) != 1 {
		t.Fatalf("decision %+v", d)
	}
	if err := g.Apply(d); err != nil {
		t.Fatal(err)
	}
	noWorse(t, in, g)
	out := g.Body()
	if len(out.Messages) != len(in.Messages) || out.Messages[0].Role != "user" ||
		!strings.Contains(string(out.Messages[1].Raw), "schema was withdrawn") {
		raw, _ := out.Marshal()
		t.Errorf("tombstone placed wrong: %s", raw)
	}
}

package wire

import (
	"encoding/json"
	"testing"
)

// TestLinesGoAfterThePrompt: tombstone and pointer lines go one per line
// after the system prompt's own text, a blank line apart when it has
// text, as a block or part where the prompt is a list of them; a guarded
// body (Guarded.setSys, Body.setTombstones) and a body written whole (Render,
// a session: placeLines) get the same prompt.
func TestLinesGoAfterThePrompt(t *testing.T) {
	lines := []string{"line one", "line two"}
	user := `{"role":"user","content":"go"}`
	cases := []struct {
		name, body string
		d          Dialect
		// key is the prompt's top-level key ("" for a system message), want
		// its value once the lines are in.
		key, want string
	}{
		{"chat string", `{"messages":[{"role":"system","content":"sys"},` + user + `]}`, OpenAIChat,
			"", `{"content":"sys\n\n` + `line one\nline two","role":"system"}`},
		{"chat empty", `{"messages":[{"role":"developer","content":""},` + user + `]}`, OpenAIChat,
			"", `{"content":"line one\nline two","role":"developer"}`},
		{"chat parts", `{"messages":[{"role":"system","content":[{"type":"text","text":"sys"}]},` + user + `]}`, OpenAIChat,
			"", `{"content":[{"type":"text","text":"sys"},{"text":"line one\nline two","type":"text"}],"role":"system"}`},
		{"responses", `{"instructions":"be brief","input":[{"role":"user","content":"go"}]}`, OpenAIResponses,
			"instructions", `"be brief\n\nline one\nline two"`},
		{"responses none", `{"input":"go"}`, OpenAIResponses,
			"instructions", `"line one\nline two"`},
		{"anthropic string", `{"system":"sys","messages":[` + user + `]}`, Anthropic,
			"system", `"sys\n\nline one\nline two"`},
		{"anthropic empty", `{"system":"","messages":[` + user + `]}`, Anthropic,
			"system", `"line one\nline two"`},
		{"anthropic blocks", `{"system":[{"type":"text","text":"sys"}],"messages":[` + user + `]}`, Anthropic,
			"system", `[{"type":"text","text":"sys"},{"text":"line one\nline two","type":"text"}]`},
		{"anthropic none", `{"messages":[` + user + `]}`, Anthropic,
			"system", `"line one\nline two"`},
		{"gemini", `{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"go"}]}]}`, Gemini,
			"systemInstruction", `{"parts":[{"text":"sys"},{"text":"line one\nline two"}]}`},
		{"gemini snake", `{"system_instruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"go"}]}]}`, Gemini,
			"system_instruction", `{"parts":[{"text":"sys"},{"text":"line one\nline two"}]}`},
		{"bedrock", `{"system":[{"text":"sys"}],"messages":[{"role":"user","content":[{"text":"go"}]}]}`, Bedrock,
			"system", `[{"text":"sys"},{"text":"line one\nline two"}]`},
	}
	for _, c := range cases {
		b, err := Read([]byte(c.body), c.d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := c.d.provider()
		// The guarded body's way.
		var guarded json.RawMessage
		if c.key == "" {
			g, err := b.Context(Options{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			g.setSys(lines)
			if g.sysFacts == nil {
				t.Fatalf("%s: no system message took the lines", c.name)
			}
			guarded = g.sysFacts.raw
		} else {
			nb := *b
			nb.fields = nil
			nb.setTombstones(lines)
			guarded = nb.fields[c.key]
		}
		// The way of a body written whole.
		top, err := readTopFields([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var ps []rpiece
		for i := range b.facts {
			ps = append(ps, rpiece{role: b.facts[i].role, raw: b.facts[i].raw})
		}
		ps = placeLines(p, &top, ps, lines)
		written, _ := top.get(c.key)
		if c.key == "" {
			written = ps[0].raw
		}
		if string(guarded) != c.want || string(written) != c.want {
			t.Errorf("%s:\nguarded %s\nwritten %s\nwant    %s", c.name, guarded, written, c.want)
		}
		if len(ps) != len(b.facts) {
			t.Errorf("%s: %d messages written, %d read", c.name, len(ps), len(b.facts))
		}
	}
	// A Chat body written whole without a system message gets one, first;
	// a guarded one gets none (see hasSystemPrompt).
	b, err := Read([]byte(`{"messages":[`+user+`]}`), OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	ps := placeLines(b.provider(), nil, []rpiece{{role: "user", raw: b.facts[0].raw}}, lines)
	if len(ps) != 2 || string(ps[0].raw) != `{"content":"`+"line one\\nline two"+`","role":"system"}` {
		t.Errorf("no system message put first: %+v", ps)
	}
	if b.hasSystemPrompt() {
		t.Error("a Chat body without a system message has a prompt to write into")
	}
}

package wire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// Read rejects bytes that are not UTF-8: a provider rejects them, and an
// edit would silently replace them.
func TestReadRejectsInvalidUTF8(t *testing.T) {
	for _, body := range []string{
		"{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"ok\"}],\"x\xff\":1}",
	} {
		for _, d := range append([]wire.Dialect{""}, wire.Dialects...) {
			if _, err := wire.Read([]byte(body), d); err == nil || !strings.Contains(err.Error(), "UTF-8") {
				t.Errorf("%q as %q: %v", body, d, err)
			}
		}
		if _, _, err := wire.Unwrap([]byte(body), "x.json"); err == nil {
			t.Errorf("Unwrap accepted %q", body)
		}
		if _, err := wire.ReadManifest([]byte(`{"tools":[{"name":"f\xff"}]}`)); err == nil {
			t.Errorf("ReadManifest accepted invalid UTF-8")
		}
	}
}

// A byte order mark is not JSON; Read says so.
func TestReadRejectsBOM(t *testing.T) {
	_, err := wire.Read([]byte("\xef\xbb\xbf{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"), wire.OpenAIChat)
	if err == nil || !strings.Contains(err.Error(), "byte order mark") {
		t.Errorf("Read: %v", err)
	}
}

// Numbers the JSON grammar allows read, whatever their size.
func TestReadAcceptsAnyJSONNumber(t *testing.T) {
	body := `{"temperature":-0,"max_tokens":1e400,"seed":123456789012345678901234567890,"top_p":1E-400,"messages":[{"role":"user","content":"x"}]}`
	b, err := wire.Read([]byte(body), wire.OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := b.Marshal()
	if string(out) != body {
		t.Errorf("round trip changed the body")
	}
}

// Error texts are one line whatever the input holds, so that a log or a
// command's stderr keeps one error per line.
func TestReadErrorsAreOneLine(t *testing.T) {
	bodies := map[wire.Dialect]string{
		wire.Anthropic:       `{"messages":[{"role":"user","content":[{"type":"x\ny_tool_result"}]}]}`,
		wire.OpenAIResponses: `{"input":[{"type":"function_call","call_id":"","name":"f\nx"}]}`,
		wire.OpenAIChat:      `{"messages":[{"role":"tool\nx"}],"x":1}`,
	}
	for d, body := range bodies {
		_, err := wire.Read([]byte(body), d)
		if err == nil {
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\r") {
			t.Errorf("%s: multi-line error %q", d, err)
		}
	}
}

// The readers and Validate are total: nil and zero values do not panic.
func TestNilAndZeroValues(t *testing.T) {
	var b *wire.Body
	if v := b.Validate(); v != nil {
		t.Errorf("nil Validate = %v", v)
	}
	if n := wire.Tokens(b, nil); n != 0 {
		t.Errorf("nil Tokens = %d", n)
	}
	if _, err := b.Marshal(); err == nil {
		t.Errorf("nil Marshal succeeded")
	}
	if _, err := b.Bind(wire.Options{}); err == nil {
		t.Errorf("nil Context succeeded")
	}
	if b.Tools() != nil {
		t.Errorf("nil Tools")
	}
	z := &wire.Body{}
	z.Validate()
	if err := z.Remove([]int{0}); err == nil {
		t.Errorf("zero Remove succeeded")
	}
	if err := z.Stub(0, "x"); err == nil {
		t.Errorf("zero Stub succeeded")
	}
	// Messages edited by hand into shapes Read never gives.
	for _, d := range wire.Dialects {
		h := &wire.Body{Dialect: d, Messages: []wire.Message{{Type: "reasoning", Role: "assistant"}, {Role: "user", Results: []string{"x"}}, {Calls: []wire.Call{{}}}}}
		h.Validate()
	}
}

// Deeply nested JSON is an error, not a crash.
func TestDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	body := `{"messages":[{"role":"user","content":"x","extra":` + deep + `}]}`
	if _, err := wire.Read([]byte(body), wire.OpenAIChat); err == nil {
		t.Errorf("Read accepted nesting deeper than the JSON decoder allows")
	}
	if _, _, err := wire.Unwrap([]byte(body), "x.jsonl"); err == nil {
		t.Errorf("Unwrap accepted it")
	}
	ok := `{"messages":[{"role":"user","content":"x","extra":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}]}`
	b, err := wire.Read([]byte(ok), wire.OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Bind(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Check(pruneguard.Guard{Budget: 1})
}

// planFrom turns fuzz bytes into a plan over a body of n messages and the
// given tools.
func planFrom(data []byte, n int, tools []string) pruneguard.Plan {
	var p pruneguard.Plan
	for i, c := range data {
		switch {
		case n > 0 && c%4 == 0:
			p.Evict = append(p.Evict, wire.ID(int(c/4)%n))
		case n > 0 && c%4 == 1:
			p.Stub = append(p.Stub, wire.ID(int(c/4)%n))
		case len(tools) > 0 && c%4 == 2:
			p.DropSchemas = append(p.DropSchemas, tools[int(c/4)%len(tools)])
		case i == 0:
			p.Split = pruneguard.SplitMode(c % 3)
		}
	}
	return p
}

// FuzzPrune drives Guarded.Prune, Guarded.Apply (of its decision and of
// one taken straight from the Context) and Guarded.Check with arbitrary
// plans over arbitrary bodies: nothing panics, and no path that applies
// a decision leaves the body breaking a rule the input kept.
func FuzzPrune(f *testing.F) {
	seeds := []struct {
		d    wire.Dialect
		body string
	}{
		{wire.OpenAIChat, legacyBody()},
		{wire.Anthropic, strings.Replace(toolSearchBody, "DESC", "d", 1)},
		{wire.OpenAIChat, `{"tool_choice":{"type":"function","function":{"name":"b"}},"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}],"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"more"}]}`},
		{wire.OpenAIResponses, `{"input":[{"role":"user","content":"go"},{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r"},{"type":"local_shell_call","call_id":"c2","action":{}},{"type":"local_shell_call_output","id":"c2","output":"o"},{"role":"user","content":"more"}]}`},
		{wire.Gemini, `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"more"}]}]}`},
		{wire.Bedrock, `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}]},"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"text":"r"}]}}]}]}`},
	}
	for _, s := range seeds {
		f.Add(uint8(dialectIndex(s.d)), []byte(s.body), []byte{0, 4, 8, 1, 5, 2, 6})
	}
	f.Fuzz(func(t *testing.T, k uint8, body, plan []byte) {
		d := wire.Dialects[int(k)%len(wire.Dialects)]
		b, err := wire.Read(body, d)
		if err != nil {
			return
		}
		var tools []string
		for _, tl := range b.Tools() {
			tools = append(tools, tl.Name)
		}
		opts := wire.Options{Unannotated: wire.Unannotated(k >> 7)}
		before := b.Validate()
		worse := func(g *wire.Guarded, what string) {
			out := g.Body()
			if nv := wire.NewViolations(before, out.Validate()); len(nv) > 0 {
				t.Fatalf("%s: pruned body worse: %v", what, nv)
			}
			raw, err := out.Marshal()
			if err != nil {
				t.Fatalf("%s: Marshal: %v", what, err)
			}
			if !json.Valid(raw) {
				t.Fatalf("%s: output is not JSON", what)
			}
		}
		p := planFrom(plan, len(b.Messages), tools)

		g, err := b.Bind(opts)
		if err != nil {
			t.Fatalf("Context: %v", err)
		}
		if dec, _, err := g.Prune(p); err == nil {
			if err := g.Apply(dec); err != nil {
				t.Fatalf("Apply of a Prune decision: %v", err)
			}
			worse(g, "Prune")
		}

		g, _ = b.Bind(opts)
		if dec, err := g.Context().Prune(p); err == nil {
			if err := g.Apply(dec); err != nil && !errors.Is(err, wire.ErrScreen) {
				t.Fatalf("Apply: %v", err)
			}
			worse(g, "Apply")
		}

		g, _ = b.Bind(opts)
		pol := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return p })
		g.Check(pruneguard.Guard{Budget: 1, Policy: pol, Rounds: 4})
		worse(g, "Check")
	})
}

func dialectIndex(d wire.Dialect) int {
	for i, x := range wire.Dialects {
		if x == d {
			return i
		}
	}
	return 0
}

// A result whose call is not in the body pairs with nothing; its tool is
// unknown, so by the MCP defaults it is irreducible (unless unannotated
// tools are vouched for), and no prune takes it.
func TestOrphanResultIsIrreducible(t *testing.T) {
	body := `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},
		{"role":"tool","tool_call_id":"lost","content":"` + longText + `"},
		{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{})
	if k, _ := g.Context().ClassOf(wire.ID(2)); k != pruneguard.Irreducible {
		t.Errorf("class %v", k)
	}
	g.Check(pruneguard.Guard{Budget: 1})
	if !containsRaw(g.Body(), in.Messages[2].Raw) {
		t.Errorf("the orphan result was pruned")
	}
	_, g = guarded(t, wire.OpenAIChat, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
	if k, _ := g.Context().ClassOf(wire.ID(2)); k != pruneguard.Reconstructible {
		t.Errorf("vouched for: class %v", k)
	}
}

// A blank stub text would make blank results, which providers reject.
func TestBlankStubText(t *testing.T) {
	b := read(t, wire.Bedrock, `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}]},"messages":[{"role":"user","content":[{"text":"go"}]}]}`)
	if _, err := b.Bind(wire.Options{Config: pruneguard.Config{StubText: " \n\t"}}); err == nil {
		t.Errorf("Context accepted a blank stub text")
	}
}

// A top-level key given twice is ambiguous (providers differ on which
// value counts, and an edit would rewrite only one): Read refuses it.
func TestDuplicateTopLevelKey(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"a"}],"model":"m","messages":[{"role":"user","content":"b"}]}`
	if _, err := wire.Read([]byte(body), wire.OpenAIChat); err == nil || !strings.Contains(err.Error(), `"messages"`) {
		t.Errorf("Read: %v", err)
	}
}

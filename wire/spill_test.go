package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// spillBodies are bodies of each dialect with a system prompt, the task,
// two calls of a tool without annotations (so irreducible) with long
// results, a word of the model's and a last user message. The results
// hold "result-1" and "result-2".
func spillBodies(system bool) map[wire.Dialect]string {
	long := func(k int) string { return fmt.Sprintf("result-%d ", k) + strings.Repeat("lorem ipsum dolor ", 120) }
	sys := func(s string) string {
		if !system {
			return ""
		}
		return s
	}
	return map[wire.Dialect]string{
		wire.OpenAIChat: `{"model":"m","tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"messages":[` +
			sys(`{"role":"system","content":"sys"},`) + `{"role":"user","content":"task"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"` + long(1) + `"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"lookup","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c2","content":"` + long(2) + `"},` +
			`{"role":"assistant","content":"noted"},{"role":"user","content":"next"}]}`,
		wire.OpenAIResponses: `{"model":"m",` + sys(`"instructions":"sys",`) + `"tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}}],"input":[` +
			`{"type":"message","role":"user","content":"task"},` +
			`{"type":"function_call","call_id":"c1","name":"lookup","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"` + long(1) + `"},` +
			`{"type":"function_call","call_id":"c2","name":"lookup","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c2","output":"` + long(2) + `"},` +
			`{"type":"message","role":"assistant","content":"noted"},{"type":"message","role":"user","content":"next"}]}`,
		wire.Anthropic: `{"model":"m","max_tokens":10,` + sys(`"system":"sys",`) + `"tools":[{"name":"lookup","input_schema":{"type":"object"}}],"messages":[` +
			`{"role":"user","content":"task"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"lookup","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"` + long(1) + `"}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"c2","name":"lookup","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c2","content":"` + long(2) + `"}]},` +
			`{"role":"assistant","content":"noted"},{"role":"user","content":"next"}]}`,
		wire.Gemini: `{` + sys(`"systemInstruction":{"parts":[{"text":"sys"}]},`) + `"tools":[{"functionDeclarations":[{"name":"lookup","parameters":{"type":"object"}}]}],"contents":[` +
			`{"role":"user","parts":[{"text":"task"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"r":"` + long(1) + `"}}}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"r":"` + long(2) + `"}}}]},` +
			`{"role":"model","parts":[{"text":"noted"}]},{"role":"user","parts":[{"text":"next"}]}]}`,
		wire.Bedrock: `{` + sys(`"system":[{"text":"sys"}],`) + `"toolConfig":{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}}]},"messages":[` +
			`{"role":"user","content":[{"text":"task"}]},` +
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"lookup","input":{}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"` + long(1) + `"}]}}]},` +
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"c2","name":"lookup","input":{}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"c2","content":[{"text":"` + long(2) + `"}]}}]},` +
			`{"role":"assistant","content":[{"text":"noted"}]},{"role":"user","content":[{"text":"next"}]}]}`,
	}
}

// history returns the messages of a body as it was written.
func history(t *testing.T, d wire.Dialect, body []byte) []json.RawMessage {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	key := map[wire.Dialect]string{wire.OpenAIResponses: "input", wire.Gemini: "contents"}[d]
	if key == "" {
		key = "messages"
	}
	var ms []json.RawMessage
	if err := json.Unmarshal(top[key], &ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func jsonEq(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// shows reports whether the body holds text as a JSON string's content.
func shows(body []byte, text string) bool {
	q, _ := json.Marshal(text)
	return bytes.Contains(body, q[1:len(q)-1])
}

// checkRecall checks that every spill of res reads back, from sp, the
// input's messages it names, each as the body held it.
func checkRecall(t *testing.T, g *wire.Guarded, in []json.RawMessage, res pruneguard.Result, sp *spill.Spiller) {
	t.Helper()
	ctx := t.Context()
	for _, s := range res.Spills {
		ms, err := sp.Recall(ctx, s.Pointer)
		if err != nil {
			t.Fatalf("recall %v: %v", s.Pointer, err)
		}
		if len(ms) != len(s.Messages) {
			t.Fatalf("recall %v: %d messages, spilled %d", s.Pointer, len(ms), len(s.Messages))
		}
		for k, id := range s.Messages {
			i, ok := g.Index(id)
			if !ok || !jsonEq(ms[k].Content, in[i]) {
				t.Errorf("recall %v: message %d is %s, the input's %s is %s", s.Pointer, k, ms[k].Content, id, in[i])
			}
		}
	}
}

// A guarded check with a Spiller evicts irreducible units once they are
// stored as the body held them, and leaves their pointer line in the
// system prompt; the output breaks no rule the input kept.
func TestGuardedSpillEvicts(t *testing.T) {
	for d, body := range spillBodies(true) {
		t.Run(string(d), func(t *testing.T) {
			sp := &spill.Spiller{Store: &spill.Memory{}}
			in, g := guarded(t, d, body, wire.Options{Spiller: sp})
			budget := g.Tokens() - 300
			res, _, err := g.Check(pruneguard.Guard{Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)
			if g.Tokens() > budget || len(res.Spills) == 0 {
				t.Fatalf("tokens %d of %d, spills %+v", g.Tokens(), budget, res.Spills)
			}
			var out bytes.Buffer
			if _, err := g.WriteTo(&out); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out.Bytes(), []byte("result-1 lorem")) {
				t.Errorf("the spilled result is still in the body")
			}
			for _, s := range res.Spills {
				if !shows(out.Bytes(), sp.PointerText(s.Pointer)) {
					t.Errorf("no pointer line for %v in %s", s.Pointer, out.Bytes())
				}
			}
			checkRecall(t, g, history(t, d, []byte(body)), res, sp)
		})
	}
}

// A result stubbed after a spill shows its pointer, never the stub text
// that tells the model to call the tool again.
func TestGuardedSpillStubShowsPointer(t *testing.T) {
	for _, system := range []bool{true, false} {
		for d, body := range spillBodies(system) {
			t.Run(fmt.Sprint(d, system), func(t *testing.T) {
				sp := &spill.Spiller{Store: &spill.Memory{}}
				in, g := guarded(t, d, body, wire.Options{Spiller: sp})
				res, _, err := g.Check(pruneguard.Guard{Budget: g.Tokens() - 300, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}})
				if err != nil {
					t.Fatal(err)
				}
				noWorse(t, in, g)
				var out bytes.Buffer
				if _, err := g.WriteTo(&out); err != nil {
					t.Fatal(err)
				}
				if len(res.Spills) == 0 || bytes.Contains(out.Bytes(), []byte("result-1 lorem")) {
					t.Fatalf("the first result was not spilled and stubbed: %+v\n%s", res.Spills, out.Bytes())
				}
				if shows(out.Bytes(), g.StubText()) {
					t.Errorf("a spilled result carries the stub text: %s", out.Bytes())
				}
				for _, s := range res.Spills {
					if !shows(out.Bytes(), sp.PointerText(s.Pointer)) {
						t.Errorf("the stub does not show %v: %s", s.Pointer, out.Bytes())
					}
				}
				checkRecall(t, g, history(t, d, []byte(body)), res, sp)
			})
		}
	}
}

// A body with no system prompt to carry a pointer line spills no unit to
// evict: the spill fails with ErrNoPointerPlace and the unit stays.
func TestGuardedSpillNeedsAPlace(t *testing.T) {
	for _, d := range []wire.Dialect{wire.OpenAIChat, wire.Gemini, wire.Bedrock} {
		t.Run(string(d), func(t *testing.T) {
			body := spillBodies(false)[d]
			sp := &spill.Spiller{Store: &spill.Memory{}}
			in, g := guarded(t, d, body, wire.Options{Spiller: sp})
			res, refs, err := g.Check(pruneguard.Guard{Budget: g.Tokens() - 300})
			if err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)
			placed := slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Code == wire.CodeNoPointerPlace })
			// No place for a pointer is a refusal, not a failed spill:
			// spill_failed is for a store that cannot be written.
			if len(res.Spills) != 0 || len(res.SpillErrors) != 0 || !placed {
				t.Fatalf("spills %+v, errors %v, refusals %+v", res.Spills, res.SpillErrors, refs)
			}
			var out bytes.Buffer
			g.WriteTo(&out)
			if !bytes.Contains(out.Bytes(), []byte("result-1 lorem")) {
				t.Errorf("an irreducible result left without a pointer the model can see")
			}
		})
	}
}

// A Spiller resolves its own pointers: a Resolver beside it is refused.
func TestGuardedSpillerAndResolver(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	b := read(t, wire.OpenAIChat, spillBodies(true)[wire.OpenAIChat])
	if _, err := b.Bind(wire.Options{Spiller: sp, Config: pruneguard.Config{Resolver: sp}}); err == nil {
		t.Fatal("Spiller and Config.Resolver both set: no error")
	}
}

// The eviction of a spilled unit whose pointer line would cost as much
// as the unit is refused: the body never grows for a spill.
func TestGuardedSpillPointerNotSmaller(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"task"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"assistant","content":"noted"},{"role":"user","content":"next"}]}`
	// A store with a long name makes a long pointer line; counted as one
	// token, the guard spills, and the wire check refuses the eviction.
	sp := &spill.Spiller{Store: &spill.Memory{}, Name: strings.Repeat("store", 40)}
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{Spiller: sp, Config: pruneguard.Config{PointerTokens: 1}})
	before := g.Tokens()
	_, refs, err := g.Check(pruneguard.Guard{Budget: 1})
	if err != nil {
		t.Fatal(err)
	}
	noWorse(t, in, g)
	if g.Tokens() > before {
		t.Errorf("tokens %d -> %d", before, g.Tokens())
	}
	found := false
	for _, r := range refs {
		found = found || r.Code == wire.CodePointerNotSmaller
	}
	var out bytes.Buffer
	g.WriteTo(&out)
	if !found || !bytes.Contains(out.Bytes(), []byte(`"c1"`)) {
		t.Errorf("refusals %+v, body %s", refs, out.Bytes())
	}
}

// taskID returns the id of the message holding the body's task, the
// first real user message of spillBodies.
func taskID(t *testing.T, g *wire.Guarded, in []json.RawMessage) pruneguard.MessageID {
	t.Helper()
	for _, m := range g.Context().Messages() {
		if i, ok := g.Index(m.ID); ok && bytes.Contains(in[i], []byte(`"task"`)) {
			return m.ID
		}
	}
	t.Fatal("no message holds the task")
	return ""
}

// The first real user message is pinned unless a Spiller is set and the
// body has a system prompt for the pointer lines (one it has, or in
// Anthropic and Responses one it may be given): then it is spilled and
// evicted like any text when the budget needs it, where the provider
// lets the history start with another turn, and reads back as the body
// held it.
func TestGuardedSpillerUnpinsTheTask(t *testing.T) {
	for _, system := range []bool{true, false} {
		for d, body := range spillBodies(system) {
			place := system || d == wire.Anthropic || d == wire.OpenAIResponses
			// Anthropic, Gemini and Bedrock histories start with a user
			// turn: the task is the only one that can.
			userFirst := d == wire.Anthropic || d == wire.Gemini || d == wire.Bedrock
			for _, withSpiller := range []bool{true, false} {
				t.Run(fmt.Sprint(d, " system=", system, " spiller=", withSpiller), func(t *testing.T) {
					var opts wire.Options
					sp := &spill.Spiller{Store: &spill.Memory{}}
					if withSpiller {
						opts.Spiller = sp
					}
					in, g := guarded(t, d, body, opts)
					hist := history(t, d, []byte(body))
					task := taskID(t, g, hist)
					m, _ := g.Context().Message(task)
					free := withSpiller && place
					if m.Pinned == free {
						t.Fatalf("task %s pinned %v", task, m.Pinned)
					}
					res, _, err := g.Check(pruneguard.Guard{Budget: 1})
					if err != nil {
						t.Fatal(err)
					}
					noWorse(t, in, g)
					var out bytes.Buffer
					if _, err := g.WriteTo(&out); err != nil {
						t.Fatal(err)
					}
					_, held := g.Context().Message(task)
					if !free || userFirst {
						if !held || !shows(out.Bytes(), "task") {
							t.Fatalf("the task went: %s", out.Bytes())
						}
						return
					}
					if held || shows(out.Bytes(), "task") {
						t.Fatalf("the task stayed: %s", out.Bytes())
					}
					var ptr pruneguard.Pointer
					for _, dec := range res.Decisions {
						for _, n := range dec.Pointers {
							if n.Message == task {
								ptr = n.Pointer
							}
						}
					}
					if ptr.IsZero() || !shows(out.Bytes(), sp.PointerText(ptr)) {
						t.Fatalf("the task left with pointer %v; body %s", ptr, out.Bytes())
					}
					checkRecall(t, g, hist, res, sp)
				})
			}
		}
	}
}

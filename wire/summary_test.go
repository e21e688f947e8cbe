package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// unitFacts are the facts planted in the result of unit k of a
// factBody: a ticket id, an exit code and a path, none of which a later
// call could give back (the tool is not annotated: irreducible).
func unitFacts(k int) []string {
	return []string{fmt.Sprintf("INC-%d", 4700+k), fmt.Sprintf("%d", 130+k), fmt.Sprintf("/var/log/app-%d.log", k)}
}

// unitResult is the result of unit k: its facts, and filler.
func unitResult(k int) string {
	f := unitFacts(k)
	return fmt.Sprintf("ticket %s closed with exit %s; see %s. ", f[0], f[1], f[2]) + strings.Repeat("lorem ipsum dolor sit amet ", 30)
}

// factBody is a body of dialect d with a system prompt, the task, n
// units of a call of "lookup" and its result (each result holding
// unitFacts and filler), the model's answer and a last user message.
func factBody(d wire.Dialect, n int) string {
	result := unitResult
	var msgs []string
	for k := 1; k <= n; k++ {
		id := fmt.Sprintf("c%d", k)
		args := fmt.Sprintf(`{"q":"item %d"}`, k)
		switch d {
		case wire.OpenAIChat:
			msgs = append(msgs, `{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"lookup","arguments":`+quote(args)+`}}]}`,
				`{"role":"tool","tool_call_id":"`+id+`","content":`+quote(result(k))+`}`)
		case wire.OpenAIResponses:
			msgs = append(msgs, `{"type":"function_call","call_id":"`+id+`","name":"lookup","arguments":`+quote(args)+`}`,
				`{"type":"function_call_output","call_id":"`+id+`","output":`+quote(result(k))+`}`)
		case wire.Anthropic:
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"tool_use","id":"`+id+`","name":"lookup","input":`+args+`}]}`,
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":`+quote(result(k))+`}]}`)
		case wire.Gemini:
			msgs = append(msgs, `{"role":"model","parts":[{"functionCall":{"name":"lookup","args":`+args+`}}]}`,
				`{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"result":`+quote(result(k))+`}}}]}`)
		case wire.Bedrock:
			msgs = append(msgs, `{"role":"assistant","content":[{"toolUse":{"toolUseId":"`+id+`","name":"lookup","input":`+args+`}}]}`,
				`{"role":"user","content":[{"toolResult":{"toolUseId":"`+id+`","content":[{"text":`+quote(result(k))+`}]}}]}`)
		}
	}
	text := func(role, s string) string { return textMessage(d, role, s) }
	all := append([]string{text("user", "the task: look the items up")}, msgs...)
	all = append(all, text("assistant", "done"), text("user", "next"))
	switch d {
	case wire.OpenAIChat:
		return `{"model":"m","tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"messages":[{"role":"system","content":"sys"},` + strings.Join(all, ",") + `]}`
	case wire.OpenAIResponses:
		return `{"model":"m","instructions":"sys","tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}}],"input":[` + strings.Join(all, ",") + `]}`
	case wire.Anthropic:
		return `{"model":"m","max_tokens":10,"system":"sys","tools":[{"name":"lookup","input_schema":{"type":"object"}}],"messages":[` + strings.Join(all, ",") + `]}`
	case wire.Gemini:
		return `{"systemInstruction":{"parts":[{"text":"sys"}]},"tools":[{"functionDeclarations":[{"name":"lookup","parameters":{"type":"object"}}]}],"contents":[` + strings.Join(all, ",") + `]}`
	}
	return `{"system":[{"text":"sys"}],"toolConfig":{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}}]},"messages":[` + strings.Join(all, ",") + `]}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// summaryOf returns the decision of res that holds a summary, or nil.
func summaryOf(res pruneguard.Result) *pruneguard.Decision {
	for _, d := range res.Decisions {
		if d.Summary != nil {
			return d
		}
	}
	return nil
}

// compactHalf binds body, of dialect d, and checks it down to half its
// tokens with the built-in summarizer; it fails the test unless a
// summary was written. It returns the bound body, the check's result and
// the budget.
func compactHalf(t *testing.T, d wire.Dialect, body string) (*wire.Guarded, pruneguard.Result, int) {
	t.Helper()
	g, err := wire.Bind([]byte(body), d, wire.Options{})
	must(t, err)
	budget := g.Tokens() / 2
	res, _, err := g.Check(pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}})
	must(t, err)
	if summaryOf(res) == nil {
		t.Fatalf("no summary: %v %v", res.Outcome, res.Reason)
	}
	return g, res, budget
}

// writtenValid writes g and reads it back, failing the test when the
// output breaks a rule the input, in, kept.
func writtenValid(t *testing.T, d wire.Dialect, in *wire.Body, g *wire.Guarded) (*bytes.Buffer, *wire.Body) {
	t.Helper()
	var out bytes.Buffer
	if _, err := g.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	ob := read(t, d, out.String())
	if nv := wire.NewViolations(in.Validate(), ob.Validate()); len(nv) > 0 {
		t.Fatalf("the output breaks %v\n%s", nv, out.String())
	}
	return &out, ob
}

// TestGuardedSummaryPerDialect: a check with a Summarizer replaces a run
// of units with one summary message in the dialect's form, in the place
// of the run's first message; the output breaks no rule the input kept;
// the system prompt and every message before the summary are written
// byte for byte as read; the summary carries every fact of the results
// it replaced; and Tokens counts the body as written.
func TestGuardedSummaryPerDialect(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body := factBody(d, 8)
			in := read(t, d, body)
			g, res, budget := compactHalf(t, d, body)
			sd := summaryOf(res)
			out, ob := writtenValid(t, d, in, g)
			if n := wire.Tokens(ob, nil); n != g.Tokens() || n > budget {
				t.Errorf("tokens: body %d, Guarded.Tokens %d, budget %d", n, g.Tokens(), budget)
			}
			first, _ := g.Index(sd.Evict[0])
			prefixKept(t, d, in, ob, first)
			for _, k := range []string{"system", "instructions", "systemInstruction"} {
				if !bytes.Equal(fieldOf(t, []byte(body), k), fieldOf(t, out.Bytes(), k)) {
					t.Errorf("%s changed", k)
				}
			}
			sm := summaryMessage(t, d, ob, first)
			if !strings.Contains(string(sm.Raw), "[Summary of") {
				t.Errorf("message %d is not the summary: %s", first, sm.Raw)
			}
			for _, id := range sd.Evict {
				i, _ := g.Index(id)
				if i == first {
					continue
				}
				for _, f := range factsAt(in, i) {
					if !strings.Contains(strings.Join(sm.Texts, "\n"), f) {
						t.Errorf("the summary drops %q of message %d", f, i)
					}
				}
			}
		})
	}
}

// prefixKept fails when a message of in before index first is not
// written in ob as it was read; in Bedrock, the user message a summary
// joins must keep its bytes up to the end of its blocks.
func prefixKept(t *testing.T, d wire.Dialect, in, ob *wire.Body, first int) {
	t.Helper()
	for i := 0; i < first; i++ {
		a, b := in.Messages[i].Raw, ob.Messages[i].Raw
		if d == wire.Bedrock && i == first-1 && in.Messages[i].Role == "user" {
			a = a[:bytes.LastIndexByte(a, ']')]
			if !bytes.HasPrefix(b, a) {
				t.Errorf("the message the summary joins changed before it:\n%s\n%s", a, b)
			}
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("message %d before the summary changed:\n%s\n%s", i, a, b)
		}
	}
}

// summaryMessage returns the message of ob that holds the summary put at
// index first: that message, or in Bedrock, when the message before it
// is a user message, that one, which the summary joins.
func summaryMessage(t *testing.T, d wire.Dialect, ob *wire.Body, first int) wire.Message {
	t.Helper()
	if d == wire.Bedrock && first > 0 && ob.Messages[first-1].Role == "user" {
		m := ob.Messages[first-1]
		if len(m.Texts) == 0 || !strings.HasPrefix(m.Texts[len(m.Texts)-1], "[Summary of") {
			t.Fatalf("the summary does not join the user message before it: %s", m.Raw)
		}
		return m
	}
	m := ob.Messages[first]
	if m.Role != "user" {
		t.Fatalf("the summary is not a user message: %s", m.Raw)
	}
	return m
}

// factsAt returns the facts planted in message i of in (those of a
// result of a factBody).
func factsAt(in *wire.Body, i int) []string {
	var out []string
	for k := 1; k < 100; k++ {
		for _, f := range unitFacts(k) {
			if bytes.Contains(in.Messages[i].Raw, []byte(f+";")) || bytes.Contains(in.Messages[i].Raw, []byte(f+" ")) || bytes.Contains(in.Messages[i].Raw, []byte(f+".")) {
				out = append(out, f)
			}
		}
	}
	return out
}

// fieldOf returns a top-level field of a body, or nil.
func fieldOf(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var top map[string]json.RawMessage
	must(t, json.Unmarshal(body, &top))
	return top[key]
}

var _ = context.Background

// factContext is a history a runtime built with events: a system
// prompt, the task, n units of a call of "lookup" (not annotated:
// irreducible) and its result holding unitFacts, an answer and a
// question.
func factContext(t *testing.T, n int, cfg pruneguard.Config) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	must(t, c.RegisterTool(pruneguard.Tool{Name: "lookup", Schema: json.RawMessage(`{"type":"object"}`)}))
	add := func(m pruneguard.Message) {
		m.Tokens = len(m.Content)/4 + len(m.Calls)*8 + 4
		must(t, c.Append(m))
	}
	add(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Content: []byte("sys"), Pinned: true})
	add(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Content: []byte("the task: look the items up"), Pinned: true})
	for k := 1; k <= n; k++ {
		call := pruneguard.CallID(fmt.Sprintf("c%d", k))
		add(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("a%d", k)), Role: pruneguard.RoleAssistant,
			Calls: []pruneguard.Call{{ID: call, Tool: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"q":"item %d"}`, k))}}})
		add(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("r%d", k)), Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{call},
			Content: []byte(unitResult(k))})
	}
	add(pruneguard.Message{ID: "done", Role: pruneguard.RoleAssistant, Content: []byte("done")})
	add(pruneguard.Message{ID: "next", Role: pruneguard.RoleUser, Content: []byte("next")})
	return c
}

// TestRenderSummary: Render writes a Context's summary as its dialect's
// summary message, the body breaks no provider rule, and the pointer of
// the spilled messages it replaced gets no pointer line: the summary
// carries it.
func TestRenderSummary(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			sp := &spill.Spiller{Store: &spill.Memory{}}
			c := factContext(t, 6, pruneguard.Config{Resolver: sp})
			res, err := pruneguard.Guard{Budget: c.Tokens() / 3, Summarizer: pruneguard.Digest{PointerText: sp.PointerText}, Spill: sp}.Check(c)
			must(t, err)
			sd := summaryOf(res)
			if sd == nil || len(sd.Summary.Pointers) == 0 {
				t.Fatalf("no summary with a pointer: %v", res.Reason)
			}
			var spilled []pruneguard.SpillNote
			for _, dd := range res.Decisions {
				spilled = append(spilled, dd.Pointers...)
			}
			body, err := wire.Render(d, c, wire.RenderOptions{Spilled: spilled, PointerText: sp.PointerText,
				Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}})
			must(t, err)
			b := read(t, d, string(body))
			var sum string
			for _, m := range b.Messages {
				for _, tx := range m.Texts {
					if strings.HasPrefix(tx, "[Summary of") && m.Role == "user" {
						sum = tx
						if d == wire.OpenAIResponses && !strings.Contains(string(m.Raw), `"input_text"`) {
							t.Errorf("a Responses summary is not input_text: %s", m.Raw)
						}
					}
				}
			}
			if sum == "" {
				t.Fatalf("no summary message of the user's:\n%s", body)
			}
			// The key shows in the summary only: no pointer line.
			key := sd.Summary.Pointers[0].Key
			if n := strings.Count(string(body), key); n == 0 || n != strings.Count(sum, key) {
				t.Errorf("the pointer %s shows %d times, %d in the summary:\n%s", key, n, strings.Count(sum, key), body)
			}
		})
	}
}

// TestGuardedSummaryRefused: a summary the gates refuse (it drops a
// fact, replaces an unread message or leaves a gap in its run) or the
// screen refuses (written, it would not be smaller than its run) is an
// error of Guarded.Prune, and the body stays as it was read.
func TestGuardedSummaryRefused(t *testing.T) {
	body := factBody(wire.OpenAIChat, 4)
	// messages: 0 system, 1 task, 2k and 2k+1 unit k, 10 done, 11 next
	all := "[Summary] INC-4701 exit 131 /var/log/app-1.log INC-4702 exit 132 /var/log/app-2.log INC-4703 exit 133 /var/log/app-3.log"
	cases := []struct {
		name    string
		replace []pruneguard.MessageID
		text    string
		code    string
	}{
		{"dropped fact", []pruneguard.MessageID{"m2", "m3"}, "[Summary] looked item 1 up", string(pruneguard.CodeMissingFact)},
		{"unread", []pruneguard.MessageID{"m11"}, "[Summary] next", ""},
		{"gap", []pruneguard.MessageID{"m2", "m3", "m6", "m7"}, all, string(pruneguard.CodeGap)},
		{"not smaller", []pruneguard.MessageID{"m2", "m3"}, "", wire.CodeSummaryNotSmaller},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := wire.Bind([]byte(body), wire.OpenAIChat, wire.Options{})
			must(t, err)
			text := c.text
			if text == "" {
				// As many tokens as the run, less a few: the Context's
				// count of the text passes, the summary as written does not.
				b, _ := g.Context().Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: c.replace}})
				fs := ""
				for _, f := range b.Facts {
					fs += f.Text + "; "
				}
				text = fs + strings.Repeat("x", max(0, 4*b.Tokens-len(fs)-12))
			}
			d, refs, err := g.Prune(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: c.replace, ID: "s1", Text: text}})
			if err == nil || d != nil {
				t.Fatalf("a summary that should be refused passed: %v", d)
			}
			if c.code != "" && !hasRefusal(refs, c.code) {
				t.Errorf("refusals %+v, want code %s (err %v)", refs, c.code, err)
			}
			var out bytes.Buffer
			if _, err := g.WriteTo(&out); err != nil {
				t.Fatal(err)
			}
			if out.String() != body {
				t.Errorf("the body changed:\n%s", out.String())
			}
		})
	}
}

func hasRefusal(refs []wire.Refusal, code string) bool {
	for _, r := range refs {
		if r.Code == code {
			return true
		}
	}
	return false
}

// TestGuardedApplySummary: a summary decision taken from the Context's
// own Prune is screened by Guarded.Apply and written; the summary can be
// replaced again, with what follows it, by a later summary that carries
// its facts forward, in the same slot.
func TestGuardedApplySummary(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body := factBody(d, 4)
			in := read(t, d, body)
			g, err := wire.Bind([]byte(body), d, wire.Options{})
			must(t, err)
			first := 1 // the task is pinned; units start after it
			if d == wire.OpenAIChat {
				first = 2
			}
			summarize := func(id pruneguard.MessageID, replace []pruneguard.MessageID) {
				t.Helper()
				b, err := g.Context().Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: replace}})
				must(t, err)
				text, err := pruneguard.Digest{}.Summarize(context.Background(), b)
				must(t, err)
				dec, err := g.Context().Prune(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: b.Replace, ID: id, Text: text}})
				must(t, err)
				must(t, g.Apply(dec))
			}
			summarize("s1", []pruneguard.MessageID{wire.ID(first), wire.ID(first + 1)})
			summarize("s2", []pruneguard.MessageID{"s1", wire.ID(first + 2), wire.ID(first + 3)})
			ob := g.Body()
			if nv := wire.NewViolations(in.Validate(), ob.Validate()); len(nv) > 0 {
				raw, _ := ob.Marshal()
				t.Fatalf("the output breaks %v\n%s", nv, raw)
			}
			if i, ok := g.Index("s2"); !ok || i != first {
				t.Errorf("s2 is at %d, %v; want %d", i, ok, first)
			}
			if _, ok := g.Index("s1"); ok {
				t.Errorf("s1 is still indexed")
			}
			if n := wire.Tokens(ob, nil); n != g.Tokens() {
				t.Errorf("Tokens %d, the body %d", g.Tokens(), n)
			}
			sm := summaryMessage(t, d, ob, first)
			text := strings.Join(sm.Texts, "\n")
			for k := 1; k <= 2; k++ {
				for _, f := range unitFacts(k) {
					if !strings.Contains(text, f) {
						t.Errorf("the second summary drops %q", f)
					}
				}
			}
			if strings.Count(text, "[Summary of") != 1 {
				t.Errorf("want one summary, the second in place of the first:\n%s", text)
			}
		})
	}
}

// TestGuardedFactsFromText: the facts a summary must carry are read from
// what the model reads of a message (its text, the content of its tool
// results), not from its JSON's keys and ids: the call id is no fact,
// the ticket id in the result is.
func TestGuardedFactsFromText(t *testing.T) {
	const callID = "toolu_01A09q90qw90lq917835lq9"
	bodies := map[wire.Dialect]string{
		wire.Anthropic: `{"model":"m","max_tokens":9,"system":"s","tools":[{"name":"lookup","input_schema":{"type":"object"}}],"messages":[` +
			`{"role":"user","content":"task"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"` + callID + `","name":"lookup","input":{"q":"x"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + callID + `","content":[{"type":"text","text":"found ticket INC-4711"}]}]},` +
			`{"role":"assistant","content":"ok"},{"role":"user","content":"next"}]}`,
		wire.Bedrock: `{"system":[{"text":"s"}],"toolConfig":{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}}]},"messages":[` +
			`{"role":"user","content":[{"text":"task"}]},` +
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"` + callID + `","name":"lookup","input":{"q":"x"}}}]},` +
			`{"role":"user","content":[{"toolResult":{"toolUseId":"` + callID + `","content":[{"text":"found ticket INC-4711"}]}}]},` +
			`{"role":"assistant","content":[{"text":"ok"}]},{"role":"user","content":[{"text":"next"}]}]}`,
		wire.OpenAIResponses: `{"model":"m","input":[{"type":"message","role":"user","content":"task"},` +
			`{"type":"function_call","call_id":"` + callID + `","name":"lookup","arguments":"{\"q\":\"x\"}"},` +
			`{"type":"function_call_output","call_id":"` + callID + `","output":"found ticket INC-4711"},` +
			`{"type":"message","role":"assistant","content":"ok"},{"type":"message","role":"user","content":"next"}]}`,
		wire.Gemini: `{"contents":[{"role":"user","parts":[{"text":"task"}]},` +
			`{"role":"model","parts":[{"functionCall":{"id":"` + callID + `","name":"lookup","args":{"q":"x"}}}]},` +
			`{"role":"user","parts":[{"functionResponse":{"id":"` + callID + `","name":"lookup","response":{"result":"found ticket INC-4711"}}}]},` +
			`{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"next"}]}]}`,
	}
	for d, body := range bodies {
		t.Run(string(d), func(t *testing.T) {
			g, err := wire.Bind([]byte(body), d, wire.Options{})
			must(t, err)
			b, err := g.Context().Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: []pruneguard.MessageID{"m1", "m2"}}})
			must(t, err)
			var got []string
			for _, f := range b.Facts {
				got = append(got, f.Text)
			}
			joined := strings.Join(got, "|")
			if !strings.Contains(joined, "INC-4711") || strings.Contains(joined, callID) {
				t.Errorf("facts %q: want INC-4711 and not the call id", got)
			}
		})
	}
}

// TestGuardedSummarySpilled: with a Spiller, a check spills the run
// before it summarizes it, and the summary carries the pointer (no
// pointer line for it); a budget the summary itself does not fit in has
// the summary spilled and evicted too, behind a pointer line. Either way
// the body breaks no rule and Tokens counts it as written.
func TestGuardedSummarySpilled(t *testing.T) {
	for _, d := range wire.Dialects {
		for _, share := range []int{2, 8} {
			t.Run(fmt.Sprintf("%s/1:%d", d, share), func(t *testing.T) {
				body := factBody(d, 10)
				in := read(t, d, body)
				sp := &spill.Spiller{Store: &spill.Memory{}}
				g, err := wire.Bind([]byte(body), d, wire.Options{Spiller: sp})
				must(t, err)
				budget := g.Tokens() / share
				res, _, err := g.Check(pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}})
				must(t, err)
				sd := summaryOf(res)
				if sd == nil || len(sd.Summary.Pointers) == 0 {
					t.Fatalf("no summary with a pointer: %v", res.Reason)
				}
				ob := g.Body()
				if nv := wire.NewViolations(in.Validate(), ob.Validate()); len(nv) > 0 {
					raw, _ := ob.Marshal()
					t.Fatalf("the output breaks %v\n%s", nv, raw)
				}
				if n := wire.Tokens(ob, nil); n != g.Tokens() {
					t.Errorf("Tokens %d, the body %d", g.Tokens(), n)
				}
				raw, _ := ob.Marshal()
				all := reachable(t, sp, raw)
				for k := 1; k <= 10; k++ {
					for _, f := range unitFacts(k) {
						if !strings.Contains(all, f) {
							t.Errorf("fact %q is neither in the body nor reachable", f)
						}
					}
				}
			})
		}
	}
}

// TestBedrockSummaryNeighbour: in Bedrock a summary joins the user
// message before it, as a text block after that message's blocks; with
// no message before it, it is the first message, a user message of its
// own; when the message it joined goes, it joins the user message then
// before it, or stands alone. Every body breaks no rule and Tokens counts
// it as written.
func TestBedrockSummaryNeighbour(t *testing.T) {
	body := factBody(wire.Bedrock, 6)
	in := read(t, wire.Bedrock, body)
	check := func(g *wire.Guarded, what string) *wire.Body {
		t.Helper()
		ob := g.Body()
		if nv := wire.NewViolations(in.Validate(), ob.Validate()); len(nv) > 0 {
			raw, _ := ob.Marshal()
			t.Fatalf("%s: the output breaks %v\n%s", what, nv, raw)
		}
		if n := wire.Tokens(ob, nil); n != g.Tokens() {
			t.Errorf("%s: Tokens %d, the body %d", what, g.Tokens(), n)
		}
		return ob
	}
	summarize := func(g *wire.Guarded, id pruneguard.MessageID, replace ...pruneguard.MessageID) {
		t.Helper()
		b, err := g.Context().Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: replace}})
		must(t, err)
		text, _ := pruneguard.Digest{}.Summarize(context.Background(), b)
		d, err := g.Context().Prune(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: b.Replace, ID: id, Text: text}})
		must(t, err)
		must(t, g.Apply(d))
	}
	// Text and results may go, so that the units before the summary can
	// be evicted; with a Spiller the task is not pinned.
	opts := wire.Options{Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}, Unannotated: wire.UnannotatedRegenerable,
		Spiller: &spill.Spiller{Store: &spill.Memory{}}}

	// After the task: the summary joins it.
	g, err := wire.Bind([]byte(body), wire.Bedrock, opts)
	must(t, err)
	summarize(g, "s1", "m3", "m4")
	ob := check(g, "joined")
	if len(ob.Messages) != len(in.Messages)-2 || !strings.HasPrefix(ob.Messages[2].Texts[len(ob.Messages[2].Texts)-1], "[Summary of") {
		t.Fatalf("the summary does not join the user message before it: %s", ob.Messages[2].Raw)
	}
	// The unit it joined goes: it joins the user message before that.
	d, err := g.Context().Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"m1", "m2"}})
	must(t, err)
	must(t, g.Apply(d))
	ob = check(g, "rejoined")
	if m := ob.Messages[0]; len(m.Texts) < 2 || !strings.HasPrefix(m.Texts[len(m.Texts)-1], "[Summary of") {
		t.Fatalf("the summary does not join the task: %s", m.Raw)
	}
	// The task goes too: the summary is the first message.
	d, err = g.Context().Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"m0"}})
	must(t, err)
	must(t, g.Apply(d))
	ob = check(g, "first")
	if m := ob.Messages[0]; m.Role != "user" || len(m.Texts) != 1 || !strings.HasPrefix(m.Texts[0], "[Summary of") {
		t.Fatalf("the summary does not stand first: %s", m.Raw)
	}
}

// textMessage is a message of text s from role ("user" or "assistant")
// in dialect d, as a runtime would feed it.
func textMessage(d wire.Dialect, role, s string) string {
	switch d {
	case wire.OpenAIResponses:
		return `{"type":"message","role":"` + role + `","content":` + quote(s) + `}`
	case wire.Gemini:
		if role == "assistant" {
			role = "model"
		}
		return `{"role":"` + role + `","parts":[{"text":` + quote(s) + `}]}`
	case wire.Bedrock:
		return `{"role":"` + role + `","content":[{"text":` + quote(s) + `}]}`
	}
	return `{"role":"` + role + `","content":` + quote(s) + `}`
}

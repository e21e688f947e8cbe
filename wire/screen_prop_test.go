package wire

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The rule screen judges an edit over the windows it can affect and the
// kinds and ids it touches; these properties check it against Validate of
// the whole edited body, on random bodies of every dialect (including
// bodies that already break rules) and random removals and stubs, applied
// or not, one after another.

// genBody draws a random body of dialect d: messages from a small
// vocabulary of each dialect's shapes, with call ids from a small pool so
// that ids repeat, results go astray and rules break.
func genBody(t *rapid.T, d Dialect) string {
	n := rapid.IntRange(0, 30).Draw(t, "messages")
	id := func() string { return fmt.Sprintf("c%d", rapid.IntRange(1, 4).Draw(t, "id")) }
	text := func() string {
		return rapid.SampledFrom([]string{`"hello there"`, `" "`, `""`, `"a long tool output\nwith lines\tand \"quotes\" to stub away"`}).Draw(t, "text")
	}
	var ms []string
	var top []string
	switch d {
	case OpenAIChat:
		if rapid.Bool().Draw(t, "tools") {
			top = append(top, `"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`)
		}
		for range n {
			switch rapid.IntRange(0, 6).Draw(t, "kind") {
			case 0:
				ms = append(ms, `{"role":"user","content":`+text()+`}`)
			case 1:
				ms = append(ms, `{"role":"system","content":"be brief"}`)
			case 2:
				calls := []string{}
				for range rapid.IntRange(1, 3).Draw(t, "calls") {
					calls = append(calls, `{"id":"`+id()+`","type":"function","function":{"name":"f","arguments":"{}"}}`)
				}
				ms = append(ms, `{"role":"assistant","content":null,"tool_calls":[`+strings.Join(calls, ",")+`]}`)
			case 3, 4:
				ms = append(ms, `{"role":"tool","tool_call_id":"`+id()+`","content":`+text()+`}`)
			case 5:
				ms = append(ms, `{"role":"assistant","content":`+text()+`}`)
			case 6:
				ms = append(ms, `{"role":"function","content":"x"}`)
			}
		}
	case OpenAIResponses:
		if rapid.Bool().Draw(t, "storeFalse") {
			top = append(top, `"store":false`)
		}
		for k := range n {
			switch rapid.IntRange(0, 7).Draw(t, "kind") {
			case 0:
				ms = append(ms, `{"role":"user","content":`+text()+`}`)
			case 1:
				ms = append(ms, `{"type":"message","role":"assistant","content":"ok"}`)
			case 2, 3:
				ms = append(ms, `{"type":"function_call","call_id":"`+id()+`","name":"f","arguments":"{}"}`)
			case 4, 5:
				ms = append(ms, `{"type":"function_call_output","call_id":"`+id()+`","output":`+text()+`}`)
			case 6:
				enc := ""
				if rapid.Bool().Draw(t, "enc") {
					enc = `,"encrypted_content":"x"`
				}
				ms = append(ms, fmt.Sprintf(`{"type":"reasoning","id":"rs%d","summary":[]%s}`, rapid.IntRange(0, 2).Draw(t, "rid"), enc))
			case 7:
				if rapid.IntRange(0, 3).Draw(t, "ref") == 0 {
					ms = append(ms, `{"type":"item_reference","id":"ref1"}`)
				} else {
					ms = append(ms, fmt.Sprintf(`{"type":"message","role":"assistant","id":"msg%d","content":"x"}`, k%3))
				}
			}
		}
	case Anthropic:
		switch rapid.IntRange(0, 2).Draw(t, "thinking") {
		case 1:
			top = append(top, `"thinking":{"type":"enabled","budget_tokens":1024}`)
		case 2:
			top = append(top, `"thinking":{"type":"disabled"}`)
		}
		switch rapid.IntRange(0, 2).Draw(t, "tools") {
		case 1:
			top = append(top, `"tools":[{"name":"f","input_schema":{}},{"name":"g","input_schema":{}}]`)
		case 2:
			top = append(top, `"tools":[]`)
		}
		for range n {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				ms = append(ms, `{"role":"user","content":`+text()+`}`)
			case 1:
				ms = append(ms, `{"role":"assistant","content":`+text()+`}`)
			case 2, 3:
				blocks := []string{}
				if rapid.Bool().Draw(t, "think") {
					blocks = append(blocks, `{"type":"thinking","thinking":"hm","signature":"s"}`)
				}
				for range rapid.IntRange(1, 2).Draw(t, "uses") {
					blocks = append(blocks, `{"type":"tool_use","id":"`+id()+`","name":"f","input":{}}`)
				}
				ms = append(ms, `{"role":"assistant","content":[`+strings.Join(blocks, ",")+`]}`)
			case 4, 5:
				blocks := []string{}
				for range rapid.IntRange(1, 2).Draw(t, "results") {
					blocks = append(blocks, `{"type":"tool_result","tool_use_id":"`+id()+`","content":`+text()+`}`)
				}
				if rapid.Bool().Draw(t, "trailing") {
					blocks = append(blocks, `{"type":"text","text":"and"}`)
				}
				ms = append(ms, `{"role":"user","content":[`+strings.Join(blocks, ",")+`]}`)
			case 6:
				ms = append(ms, `{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"thinking","thinking":"late","signature":"s"}]}`)
			case 7:
				ms = append(ms, `{"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s`+fmt.Sprint(rapid.IntRange(1, 2).Draw(t, "sid"))+`","content":[]}]}`)
			case 8:
				ms = append(ms, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id()+`","content":[{"type":"tool_reference","tool_name":"`+rapid.SampledFrom([]string{"f", "h"}).Draw(t, "ref")+`"}]}]}`)
			case 9:
				ms = append(ms, `{"role":"user","content":[]}`)
			}
		}
	case Gemini:
		for range n {
			sig := ""
			if rapid.IntRange(0, 3).Draw(t, "sig") == 0 {
				sig = `,"thoughtSignature":"x"`
			}
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				ms = append(ms, `{"role":"user","parts":[{"text":`+text()+`}]}`)
			case 1:
				ms = append(ms, `{"role":"model","parts":[{"text":"ok"}]}`)
			case 2, 3:
				parts := []string{}
				for range rapid.IntRange(1, 2).Draw(t, "calls") {
					idp := ""
					if rapid.Bool().Draw(t, "withID") {
						idp = `,"id":"` + id() + `"`
					}
					parts = append(parts, `{"functionCall":{"name":"f","args":{}`+idp+`}`+sig+`}`)
				}
				ms = append(ms, `{"role":"model","parts":[`+strings.Join(parts, ",")+`]}`)
			case 4, 5:
				parts := []string{}
				for range rapid.IntRange(1, 2).Draw(t, "responses") {
					idp := ""
					if rapid.Bool().Draw(t, "withID") {
						idp = `,"id":"` + id() + `"`
					}
					parts = append(parts, `{"functionResponse":{"name":"f","response":{"r":`+text()+`}`+idp+`}}`)
				}
				ms = append(ms, `{"role":"user","parts":[`+strings.Join(parts, ",")+`]}`)
			}
		}
	case Bedrock:
		if rapid.Bool().Draw(t, "toolConfig") {
			top = append(top, `"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}]}`)
		}
		for range n {
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				ms = append(ms, `{"role":"user","content":[{"text":`+text()+`}]}`)
			case 1:
				ms = append(ms, `{"role":"assistant","content":[{"text":`+text()+`}]}`)
			case 2, 3:
				blocks := []string{}
				for range rapid.IntRange(1, 2).Draw(t, "uses") {
					blocks = append(blocks, `{"toolUse":{"toolUseId":"`+id()+`","name":"f","input":{}}}`)
				}
				ms = append(ms, `{"role":"assistant","content":[`+strings.Join(blocks, ",")+`]}`)
			case 4, 5:
				blocks := []string{}
				for range rapid.IntRange(1, 2).Draw(t, "results") {
					blocks = append(blocks, `{"toolResult":{"toolUseId":"`+id()+`","content":[{"text":`+text()+`}]}}`)
				}
				ms = append(ms, `{"role":"user","content":[`+strings.Join(blocks, ",")+`]}`)
			}
		}
	}
	key, _ := d.messagesKey()
	top = append(top, `"`+key+`":[`+strings.Join(ms, ",")+`]`)
	return "{" + strings.Join(top, ",") + "}"
}

// keyCounts counts violations by key.
func keyCounts(vs []RuleViolation) map[string]int {
	out := map[string]int{}
	for _, v := range vs {
		out[violationKey(v)]++
	}
	return out
}

// noWorse reports whether every count of cur is at most in's.
func noWorse(cur, in map[string]int) bool {
	for k, n := range cur {
		if n > in[k] {
			return false
		}
	}
	return true
}

// keptFacts lists the facts of the messages view v keeps.
func keptFacts(g *Guarded, v view) []*facts {
	var ms []*facts
	for j := v.first(); j >= 0; j = v.next(j) {
		ms = append(ms, g.rules.factsIn(v, j))
	}
	return ms
}

// TestScreenEqualsValidate: for random bodies and random edits, the
// screen's verdict (and the keys it finds new) equals
// NewViolations(Validate(input), Validate(edited)), and the counts it
// keeps for the applied state equal those of Validate of that state.
func TestScreenEqualsValidate(t *testing.T) {
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				body := genBody(t, d)
				b, err := Read([]byte(body), d)
				if err != nil {
					t.Fatalf("%v\n%s", err, body)
				}
				g, err := b.Bind(Options{})
				if err != nil {
					t.Skip("the Context refuses the body:", err)
				}
				rs := g.rules
				for step := range rapid.IntRange(1, 5).Draw(t, "steps") {
					e, ok := drawEdits(t, g, step, 6)
					if !ok {
						return
					}
					if e.empty() {
						continue
					}
					delta, after := rs.delta(view{s: g.seq}, e, g.tools)
					current := validateAll(g.src, keptFacts(g, view{s: g.seq}), g.tools)
					full := validateAll(g.src, keptFacts(g, view{s: g.seq, a: e}), g.tools)
					// The delta is exactly how the whole body's counts change.
					want := keyCounts(current)
					for k, n := range delta {
						if want[k] += n; want[k] == 0 {
							delete(want, k)
						}
					}
					if !maps.Equal(want, keyCounts(full)) {
						t.Fatalf("step %d: edits rm %v st %v\ncounts by delta %v\ncounts by Validate %v\nbody %s", step, e.rm, e.st, want, keyCounts(full), body)
					}
					// While the body is no worse than the input, as the guard
					// keeps it, the verdict is NewViolations'.
					if noWorse(rs.cur, rs.in) {
						fresh := rs.fresh(nil, delta, after)
						nv := NewViolations(g.inputV, full)
						if !maps.Equal(keyCounts(fresh), keyCounts(nv)) {
							t.Fatalf("step %d: edits rm %v st %v\nscreen finds new %v\nValidate finds new %v\nbody %s", step, e.rm, e.st, fresh, nv, body)
						}
						// The rule reported is one Validate finds new. (Where a
						// key also breaks outside the window, which instance
						// counts as the new one may differ, and so may the
						// order.)
						if len(fresh) > 0 && !slices.ContainsFunc(nv, func(v RuleViolation) bool { return v.Rule == fresh[0].Rule }) {
							t.Fatalf("step %d: first new rule %s, not among Validate's %v", step, fresh[0].Rule, nv)
						}
					}
					if rapid.Bool().Draw(t, fmt.Sprintf("apply%d", step)) {
						rs.commit(delta)
						rs.applyEdits(e, rapid.Bool().Draw(t, fmt.Sprintf("undo%d", step)))
						now := validateAll(g.src, keptFacts(g, view{s: g.seq}), g.tools)
						if !maps.Equal(rs.cur, keyCounts(now)) {
							t.Fatalf("step %d: counts kept %v, Validate counts %v\nbody %s", step, rs.cur, keyCounts(now), body)
						}
					}
				}
			})
		})
	}
}

// TestScreenToolStateEqualsValidate: withdrawing declared tools changes
// the counts as Validate of the whole body says.
func TestScreenToolStateEqualsValidate(t *testing.T) {
	for _, d := range []Dialect{Anthropic, OpenAIChat, Bedrock} {
		t.Run(string(d), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				b, err := Read([]byte(genBody(t, d)), d)
				if err != nil {
					t.Fatal(err)
				}
				g, err := b.Bind(Options{})
				if err != nil {
					t.Skip()
				}
				var names []string
				for _, td := range b.Tools() {
					names = append(names, td.Name)
				}
				if len(names) == 0 {
					t.Skip()
				}
				drop := map[string]bool{}
				for _, n := range names {
					if rapid.Bool().Draw(t, "drop "+n) {
						drop[n] = true
					}
				}
				ts := g.topWith(&schemaEdits{dropped: drop, compressed: nil}).toolState()
				delta, _ := g.rules.toolDelta(view{s: g.seq}, g.tools, ts)
				before := keyCounts(validateAll(g.src, keptFacts(g, view{s: g.seq}), g.tools))
				after := keyCounts(validateAll(g.src, keptFacts(g, view{s: g.seq}), ts))
				for k, n := range delta {
					before[k] += n
					if before[k] == 0 {
						delete(before, k)
					}
				}
				if !maps.Equal(before, after) {
					t.Fatalf("tools %v dropped: counts by delta %v, by Validate %v", slices.Sorted(maps.Keys(drop)), before, after)
				}
			})
		})
	}
}

// drawEdits draws one step of random edits of g's kept messages: each is
// removed, stubbed (a result not stubbed yet) or left, one draw in choices
// for each. It reports false when no message is kept.
func drawEdits(t *rapid.T, g *Guarded, step, choices int) (*edits, bool) {
	var kept []int32
	for j := g.seq.head; j >= 0; j = g.seq.next[j] {
		kept = append(kept, j)
	}
	if len(kept) == 0 {
		return nil, false
	}
	e := g.seq.newEdits()
	for _, j := range kept {
		switch rapid.IntRange(0, choices-1).Draw(t, fmt.Sprintf("edit%d", step)) {
		case 0:
			e.remove(j)
		case 1:
			if g.src.facts[j].nresults > 0 && !g.seq.stubbed[j] {
				if _, ok := g.stubFacts(int(j)); ok {
					e.stub(j)
				}
			}
		}
	}
	return e, true
}

package wire

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genChatBody draws an OpenAI Chat body that mostly keeps the rules: a
// system prompt, users, assistants' words, batches of tool calls each
// answered by its tool messages in some order, and named function
// messages; now and then a block breaks a rule (a result missing,
// astray, or twice; a tool message on its own; a function unnamed).
func genChatBody(t *rapid.T) string {
	var ms []string
	if rapid.Bool().Draw(t, "system") {
		ms = append(ms, `{"role":"system","content":"be brief"}`)
	}
	next := 0
	for range rapid.IntRange(0, 25).Draw(t, "blocks") {
		broken := rapid.IntRange(0, 9).Draw(t, "broken") == 0
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 0:
			ms = append(ms, `{"role":"user","content":"do it"}`)
		case 1:
			ms = append(ms, `{"role":"assistant","content":"done"}`)
		case 2, 3:
			n := rapid.IntRange(1, 3).Draw(t, "calls")
			var calls, ids []string
			for range n {
				next++
				id := fmt.Sprintf("c%d", next)
				ids = append(ids, id)
				calls = append(calls, `{"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}`)
			}
			ms = append(ms, `{"role":"assistant","content":null,"tool_calls":[`+strings.Join(calls, ",")+`]}`)
			order := rapid.Permutation(ids).Draw(t, "order")
			if broken {
				switch rapid.IntRange(0, 2).Draw(t, "how") {
				case 0:
					order = order[1:]
				case 1:
					order = append(order, "stray")
				case 2:
					order = append(order, order[0])
				}
			}
			for _, id := range order {
				ms = append(ms, `{"role":"tool","tool_call_id":"`+id+`","content":"output of `+id+`"}`)
			}
		case 4:
			switch {
			case broken && rapid.Bool().Draw(t, "orphan"):
				ms = append(ms, `{"role":"tool","tool_call_id":"lost","content":"x"}`)
			case broken:
				ms = append(ms, `{"role":"function","content":"x"}`)
			default:
				ms = append(ms, `{"role":"function","name":"f","content":"x"}`)
			}
		}
	}
	return `{"model":"m","messages":[` + strings.Join(ms, ",") + `]}`
}

// TestScreenCleanChatBefore: on Chat bodies that mostly keep the rules,
// with random removals and stubs applied one after another, the delta
// the screen finds without checking the windows of a body that breaks no
// rule equals the one it finds checking them, and both are exactly how
// Validate's counts of the whole body change.
func TestScreenCleanChatBefore(t *testing.T) {
	clean := 0
	rapid.Check(t, func(t *rapid.T) {
		body := genChatBody(t)
		b, err := Read([]byte(body), OpenAIChat)
		if err != nil {
			t.Fatalf("%v\n%s", err, body)
		}
		g, err := b.Bind(Options{})
		if err != nil {
			t.Skip("the Context refuses the body:", err)
		}
		rs := g.rules
		for step := range rapid.IntRange(1, 5).Draw(t, "steps") {
			e, ok := drawEdits(t, g, step, 5)
			if !ok {
				return
			}
			if e.empty() {
				continue
			}
			if rs.cleanBefore(view{s: g.seq}) {
				clean++
			}
			delta, after := rs.delta(view{s: g.seq}, e, g.tools)
			rs.checkBefore = true
			refDelta, refAfter := rs.delta(view{s: g.seq}, e, g.tools)
			rs.checkBefore = false
			for k, n := range refDelta {
				if n == 0 {
					delete(refDelta, k)
				}
			}
			got := maps.Clone(delta)
			for k, n := range got {
				if n == 0 {
					delete(got, k)
				}
			}
			if !maps.Equal(got, refDelta) || !slices.Equal(after, refAfter) {
				t.Fatalf("step %d: rm %v st %v\ndelta %v after %v\nchecking before: delta %v after %v\nbody %s", step, e.rm, e.st, got, after, refDelta, refAfter, body)
			}
			want := keyCounts(validateAll(g.src, keptFacts(g, view{s: g.seq}), g.tools))
			for k, n := range delta {
				if want[k] += n; want[k] == 0 {
					delete(want, k)
				}
			}
			if full := keyCounts(validateAll(g.src, keptFacts(g, view{s: g.seq, a: e}), g.tools)); !maps.Equal(want, full) {
				t.Fatalf("step %d: counts by delta %v, by Validate %v\nbody %s", step, want, full, body)
			}
			if rapid.Bool().Draw(t, fmt.Sprintf("apply%d", step)) {
				rs.commit(delta)
				rs.applyEdits(e, false)
			}
		}
	})
	if clean == 0 {
		t.Fatal("no edit of a body breaking no rule was drawn")
	}
}

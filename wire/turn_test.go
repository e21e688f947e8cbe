package wire_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// turnBody is a history whose messages after its one user message are a
// reasoning turn, with the least its tokens can go by stubbing the
// results the model has read: a budget stubbing can reach.
type turnBody struct {
	name  string
	d     wire.Dialect
	body  []byte
	floor int
}

// stubFloor counts body b with every result the model has read (before
// its last message) stubbed with the default stub text.
func stubFloor(t *testing.T, body []byte, d wire.Dialect) int {
	t.Helper()
	b := mustRead(t, body, d)
	last := 0
	for i, m := range b.Messages {
		if len(m.Results) == 0 && (m.Role == "assistant" || m.Role == "model" || m.Role == "" && (len(m.Calls) > 0 || m.Reasoning)) {
			last = i
		}
	}
	for i, m := range b.Messages {
		if i < last && len(m.Results) > 0 {
			must(t, b.Stub(i, pruneguard.DefaultStubText))
		}
	}
	return wire.Tokens(b, nil)
}

func turnBodies(t *testing.T) []turnBody {
	t.Helper()
	var out []turnBody
	for _, name := range []string{"nemo-gym__finance_agent_v2__line1.json", "nemo-gym__finance_agent_v2__line3.json"} {
		file, err := os.ReadFile("../testdata/transcripts/responses/" + name)
		must(t, err)
		body, d, err := wire.Unwrap(file, name)
		must(t, err)
		out = append(out, turnBody{name: name, d: d, body: body})
	}
	// An Anthropic thinking turn: one user message, then a tool loop
	// whose assistant turns start with signed thinking.
	var ms []string
	ms = append(ms, `{"role":"user","content":"find the filing"}`)
	for k := range 4 {
		id := "toolu_" + string(rune('a'+k))
		ms = append(ms,
			`{"role":"assistant","content":[{"type":"thinking","thinking":"I should read part `+id+`.","signature":"sig`+id+`"},{"type":"tool_use","id":"`+id+`","name":"read","input":{"part":`+string(rune('0'+k))+`}}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"`+strings.Repeat("line of the filing. ", 150)+`"}]}`)
	}
	ms = append(ms, `{"role":"assistant","content":[{"type":"thinking","thinking":"Enough.","signature":"sigz"},{"type":"text","text":"Found it."}]}`)
	out = append(out, turnBody{name: "anthropic thinking turn", d: wire.Anthropic,
		body: []byte(`{"model":"m","max_tokens":1000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + strings.Join(ms, ",") + `]}`)})
	for i := range out {
		out[i].floor = stubFloor(t, out[i].body, out[i].d)
	}
	return out
}

// keptInOrder reports whether the pruned body holds every message of the
// original, in order, the reasoning and the calls as they were.
func keptInOrder(t *testing.T, orig, pruned []byte, d wire.Dialect) bool {
	t.Helper()
	a, b := mustRead(t, orig, d), mustRead(t, pruned, d)
	if len(a.Messages) != len(b.Messages) {
		return false
	}
	for i := range a.Messages {
		x, y := a.Messages[i], b.Messages[i]
		if (x.Reasoning || len(x.Calls) > 0 || len(x.Results) == 0) && !bytes.Equal(x.Raw, y.Raw) {
			return false
		}
	}
	return true
}

// TestReasoningTurnStubbed: a history of one user message and a long
// reasoning turn (the bundled finance_agent_v2 runs, a Responses input
// with reasoning items; an Anthropic tool loop with thinking) is brought
// under a budget that stubbing its results can reach, by a Guarded and
// by a session, with every reasoning and call item kept in its place:
// the turn is kept from eviction, not from a stub. Before, every message
// after the user message was pinned, and nothing was pruned at any
// budget.
func TestReasoningTurnStubbed(t *testing.T) {
	policy := pruneguard.LargestResultsFirst{Stub: true}
	for _, tb := range turnBodies(t) {
		t.Run(tb.name, func(t *testing.T) {
			g, err := wire.Bind(tb.body, tb.d, wire.Options{Unannotated: wire.UnannotatedRegenerable})
			must(t, err)
			before := g.Tokens()
			budget := tb.floor + (before-tb.floor)/10
			if budget >= before {
				t.Fatalf("a budget of %d out of %d proves nothing", budget, before)
			}
			t.Logf("budget %d of %d, the stubs' floor %d", budget, before, tb.floor)
			res, _, err := g.Check(pruneguard.Guard{Budget: budget, Policy: policy})
			must(t, err)
			var out bytes.Buffer
			_, err = g.WriteTo(&out)
			must(t, err)
			if res.After > budget || !keptInOrder(t, tb.body, out.Bytes(), tb.d) {
				t.Errorf("bound: %d of %d (budget %d), items kept %v", res.After, before, budget, keptInOrder(t, tb.body, out.Bytes(), tb.d))
			}
			assertNoNewViolations(t, tb.body, out.Bytes(), tb.d)

			s, err := wire.NewSession(wire.SessionConfig{Dialect: tb.d, Unannotated: wire.UnannotatedRegenerable,
				Guard: pruneguard.Guard{Budget: budget, Policy: policy}})
			must(t, err)
			synced, rep, err := s.Sync(tb.body)
			must(t, err)
			if rep.After > budget || len(rep.Evicted) > 0 || !keptInOrder(t, tb.body, synced, tb.d) {
				t.Errorf("session: %d of %d (budget %d), evicted %v", rep.After, rep.Before, budget, rep.Evicted)
			}
			assertNoNewViolations(t, tb.body, synced, tb.d)

			// Eviction stays refused: a policy that evicts prunes nothing of
			// the turn, even where every message may go as far as the other
			// gates are concerned.
			g, err = wire.Bind(tb.body, tb.d, wire.Options{Unannotated: wire.UnannotatedRegenerable,
				Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
			must(t, err)
			_, refs, err := g.Check(pruneguard.Guard{Budget: budget, Policy: pruneguard.OldestFirst{}})
			must(t, err)
			out.Reset()
			_, err = g.WriteTo(&out)
			must(t, err)
			if !bytes.Equal(out.Bytes(), tb.body) && !jsonSame(decode(t, out.Bytes()), decode(t, tb.body)) {
				t.Errorf("an evicting policy changed the turn")
			}
			active := false
			for _, r := range refs {
				active = active || r.Code == wire.CodeActiveTurn
			}
			if !active {
				t.Errorf("no refusal says the turn is kept: %+v", refs)
			}
		})
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	must(t, json.Unmarshal(b, &v))
	return v
}

// assertNoNewViolations fails when pruned breaks a provider rule orig
// kept.
func assertNoNewViolations(t *testing.T, orig, pruned []byte, d wire.Dialect) {
	t.Helper()
	before, err := wire.Validate(orig, d)
	must(t, err)
	after, err := wire.Validate(pruned, d)
	must(t, err)
	if nv := wire.NewViolations(before, after); len(nv) > 0 {
		t.Errorf("new violations: %v", nv)
	}
}

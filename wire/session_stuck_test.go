package wire

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// A refusal that names no unit (arguments of a mutating tool standing
// behind no schema, where no tombstone may be written) refuses every
// plan that leaves those arguments in: the check applies nothing, ends
// within its rounds, and the refusal names the calls and the message
// that made them.
func TestSessionUnitlessRefusal(t *testing.T) {
	s, err := NewSession(SessionConfig{Dialect: Anthropic, Guard: pruneguard.Guard{Budget: 1 << 20},
		Config: pruneguard.Config{NoTombstones: true, Boundary: pruneguard.BoundaryRelaxed, TextClass: pruneguard.Reconstructible}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRequest(json.RawMessage(`{"system":"s","tools":[{"name":"read","input_schema":{"type":"object"}},{"name":"deploy","input_schema":{"type":"object"}}]}`)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{`{"role":"user","content":"hello"}`, `{"role":"assistant","content":"hi"}`, `{"role":"user","content":"deploy it"}`} {
		if _, err := s.Append(json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	// The schema goes under the session (no calls: no tombstone needed),
	// then the model calls the tool.
	d, err := s.ctx.Prune(pruneguard.Plan{DropSchemas: []string{"deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ctx.Apply(d); err != nil {
		t.Fatal(err)
	}
	s.record(d)
	for _, m := range []string{`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"deploy","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}`, `{"role":"assistant","content":"deployed"}`,
		`{"role":"user","content":"thanks"}`} {
		if _, err := s.Append(json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
	if u := s.ctx.Unsound(); !slices.Equal(u, []string{"deploy"}) {
		t.Fatalf("unsound %v", u)
	}
	asked := 0
	inner := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		asked++
		return pruneguard.OldestFirst{}.Propose(v, need)
	})
	sc := &sessionScreen{s: s}
	res, err := pruneguard.Guard{Budget: 1, Policy: &sessionPolicy{s: s, inner: inner, protect: sc}, Screen: sc, Rounds: 8}.Check(s.ctx)
	if err != nil || len(res.Decisions) > 0 || asked == 0 || asked > 9 || res.Outcome != pruneguard.Deferred {
		t.Fatalf("asked %d times, %d decisions, outcome %v, err %v", asked, len(res.Decisions), res.Outcome, err)
	}
	refs := s.refusals(res, sc)
	i := slices.IndexFunc(refs, func(r Refusal) bool { return r.Code == string(pruneguard.CodeGhostTool) })
	if i < 0 || len(refs[i].Units) > 0 || !slices.Equal(refs[i].Calls, []pruneguard.CallID{"t1"}) ||
		!slices.Equal(refs[i].Messages, []pruneguard.MessageID{"m3"}) || !slices.Equal(refs[i].Indexes, []int{3}) {
		t.Fatalf("refusals %+v", refs)
	}
}

// Guarded maps the calls of a refusal to the messages that made them:
// the Context's call ids are "i.k", call k of body message i.
func TestGuardedRefusalNamesCallers(t *testing.T) {
	b, err := Read([]byte(`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`), Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Bind(Options{})
	if err != nil {
		t.Fatal(err)
	}
	refs := g.fromViolations([]*pruneguard.Violation{{Gate: pruneguard.GateSchema, Code: pruneguard.CodeGhostTool, Tools: []string{"x"}, Calls: []pruneguard.CallID{"1.0"}}})
	if len(refs) != 1 || !slices.Equal(refs[0].Messages, []pruneguard.MessageID{ID(1)}) || !slices.Equal(refs[0].Indexes, []int{1}) ||
		!slices.Equal(refs[0].Calls, []pruneguard.CallID{"1.0"}) {
		t.Fatalf("refusals %+v", refs)
	}
}

package wire_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// recallFields is a request of dialect d whose tools are the recall
// tool's entry alone.
func recallFields(t *testing.T, d wire.Dialect) string {
	t.Helper()
	entry := wire.RecallTool(d)
	if entry == nil {
		t.Fatalf("%s: no recall tool", d)
	}
	switch d {
	case wire.Bedrock:
		return `{"modelId":"m","toolConfig":{"tools":[` + string(entry) + `]}}`
	case wire.Anthropic:
		return `{"model":"m","max_tokens":100,"tools":[` + string(entry) + `]}`
	}
	return `{"model":"m","tools":[` + string(entry) + `]}`
}

// TestRecallToolEntry: each dialect's recall entry declares the tool by
// its name with the input schema of spill.RecallTool, its description
// beside the name, where the provider reads it, and no annotations (no
// provider takes them in a tools array). A body holding it breaks no rule.
func TestRecallToolEntry(t *testing.T) {
	want := spill.RecallTool()
	var wantSchema map[string]any
	must(t, json.Unmarshal(want.Schema, &wantSchema))
	desc := wantSchema["description"].(string)
	delete(wantSchema, "description")
	for _, d := range wire.Dialects {
		fields := recallFields(t, d)
		body := strings.Replace(fields, `{`, `{`+historyOf(d)+`,`, 1)
		b := mustRead(t, []byte(body), d)
		tools := b.Tools()
		if len(tools) != 1 || tools[0].Name != spill.RecallToolName || tools[0].Annotated {
			t.Fatalf("%s: tools %+v", d, tools)
		}
		var schema map[string]any
		must(t, json.Unmarshal(tools[0].Schema, &schema))
		if !jsonSame(schema, wantSchema) {
			t.Errorf("%s: schema %s", d, tools[0].Schema)
		}
		if n := strings.Count(body, `"description":`+string(mustJSON(t, desc))); n != 1 {
			t.Errorf("%s: the description is given %d times: %s", d, n, wire.RecallTool(d))
		}
		if strings.Contains(body, "annotations") {
			t.Errorf("%s: the entry carries annotations: %s", d, wire.RecallTool(d))
		}
		if vs := b.Validate(); len(vs) > 0 {
			t.Errorf("%s: %v", d, vs)
		}
	}
	if wire.RecallTool("nope") != nil {
		t.Error("an unknown dialect has a recall tool")
	}
}

// recallAnswerClass feeds a recall call and its answer to a session of
// dialect d whose request declares the recall tool's entry, with or
// without a Spiller, and returns the answer's class in the session and
// bound from the body the session writes (with the same Spiller); then,
// under a budget the answer alone passes, whether a request spilled it.
func recallAnswerClass(t *testing.T, d wire.Dialect, sp pruneguard.Spiller) (session, bound pruneguard.Class, spilled bool) {
	t.Helper()
	s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}, Spiller: sp})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(recallFields(t, d))))
	ids := []pruneguard.MessageID{}
	add := func(m pruneguard.Message) {
		id, err := s.AppendMessage(m)
		must(t, err)
		ids = append(ids, id)
	}
	add(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("what was the ticket?")})
	add(pruneguard.Message{Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c1", Tool: spill.RecallToolName, Args: json.RawMessage(`{"query":"ticket"}`)}}})
	add(pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c1"}, Content: []byte(strings.Repeat("ticket INC-4711 was filed by the night shift. ", 40))})
	add(pruneguard.Message{Role: pruneguard.RoleAssistant, Content: []byte("It is INC-4711.")})
	add(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("thanks")})
	session, _ = s.Context().ClassOf(ids[2])
	var body bytes.Buffer
	_, err = s.WriteTo(&body)
	must(t, err)
	g, err := wire.Bind(body.Bytes(), d, wire.Options{Spiller: sp})
	must(t, err)
	for i := 0; i < g.Len(); i++ {
		if m, ok := g.Context().Message(wire.ID(i)); ok && len(m.Answers) > 0 {
			bound, _ = g.Context().ClassOf(wire.ID(i))
		}
	}
	// A budget that the answer alone passes: the answer goes, and it is
	// never what a spill stores.
	s2, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 150}, Spiller: sp})
	must(t, err)
	_, rep, err := s2.Sync(body.Bytes())
	must(t, err)
	for _, r := range rep.Result.Spills {
		spilled = spilled || slices.Contains(r.Messages, ids[2])
	}
	return session, bound, spilled
}

// TestRecallAnswersReconstructible: with a *spill.Spiller, a session and
// a Guarded give the recall tool declared from its provider JSON the
// annotations of spill.RecallTool, so its answers are reconstructible
// and never spilled again; without one, the tool is any unannotated
// tool. Before, the answers were irreducible and spilled again.
func TestRecallAnswersReconstructible(t *testing.T) {
	for _, d := range wire.Dialects {
		sp := &spill.Spiller{Store: &spill.Memory{}}
		session, bound, spilled := recallAnswerClass(t, d, sp)
		if session != pruneguard.Reconstructible || bound != pruneguard.Reconstructible || spilled {
			t.Errorf("%s: with a Spiller the recall answer is %v in a session, %v bound, spilled %v", d, session, bound, spilled)
		}
		session, bound, _ = recallAnswerClass(t, d, nil)
		if session != pruneguard.Irreducible || bound != pruneguard.Irreducible {
			t.Errorf("%s: without a Spiller the recall answer is %v in a session, %v bound", d, session, bound)
		}
	}
	// A manifest's annotations win over the recall tool's.
	mut := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false)}
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1 << 20},
		Spiller: &spill.Spiller{Store: &spill.Memory{}}, Manifest: &wire.Manifest{Tools: []wire.ManifestTool{{Name: spill.RecallToolName, Annotations: &mut}}}})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(recallFields(t, wire.Anthropic))))
	if ts, _ := s.Context().Tool(spill.RecallToolName); !ts.Tool.Mutating() {
		t.Errorf("the manifest's annotations were overridden: %+v", ts.Tool.Annotations)
	}
}

// TestManifestScope: a manifest's scope reaches the Context with its
// tool, in a session and bound, so a write of one scope leaves a read of
// another reconstructible, and a write of the same scope makes it stale.
func TestManifestScope(t *testing.T) {
	ro := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	rw := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false)}
	m, err := wire.ReadManifest([]byte(`{"tools":[` +
		`{"name":"read_notes","scope":"notes","annotations":{"readOnlyHint":true,"openWorldHint":false}},` +
		`{"name":"read_db","scope":"db","annotations":{"readOnlyHint":true,"openWorldHint":false}},` +
		`{"name":"write_db","scope":"db","annotations":{"readOnlyHint":false}}]}`))
	must(t, err)
	want := []wire.ManifestTool{{Name: "read_notes", Scope: "notes", Annotations: &ro}, {Name: "read_db", Scope: "db", Annotations: &ro}, {Name: "write_db", Scope: "db", Annotations: &rw}}
	for i, tl := range m.Tools {
		if tl.Name != want[i].Name || tl.Scope != want[i].Scope || tl.Annotations.ReadOnly() != want[i].Annotations.ReadOnly() {
			t.Errorf("tool %d: %+v", i, tl)
		}
	}
	for _, d := range wire.Dialects {
		s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}, Manifest: m})
		must(t, err)
		var ids []pruneguard.MessageID
		add := func(msg pruneguard.Message) {
			id, err := s.AppendMessage(msg)
			must(t, err)
			ids = append(ids, id)
		}
		call := func(id, tool string) pruneguard.Message {
			return pruneguard.Message{Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: pruneguard.CallID(id), Tool: tool, Args: json.RawMessage(`{}`)}}}
		}
		result := func(id string) pruneguard.Message {
			return pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{pruneguard.CallID(id)}, Content: []byte("rows")}
		}
		add(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("go")})
		add(call("a", "read_notes"))
		add(result("a"))
		add(call("b", "read_db"))
		add(result("b"))
		add(call("c", "write_db"))
		add(result("c"))
		notes, _ := s.Context().ClassOf(ids[2])
		db, _ := s.Context().ClassOf(ids[4])
		if notes != pruneguard.Reconstructible || db != pruneguard.Irreducible {
			t.Errorf("%s: session: a read of another scope is %v, of the written scope %v", d, notes, db)
		}
		var body bytes.Buffer
		_, err = s.WriteTo(&body)
		must(t, err)
		g, err := wire.Bind(body.Bytes(), d, wire.Options{Manifest: m})
		must(t, err)
		if ts, ok := g.Context().Tool("read_notes"); !ok || ts.Tool.Scope != "notes" {
			t.Errorf("%s: bound: read_notes has scope %q", d, ts.Tool.Scope)
		}
	}
}

func jsonSame(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

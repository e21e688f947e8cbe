package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// toolsWith declares transfer_funds with the annotations ann in the place
// dialect d keeps tools.
func toolsWith(d wire.Dialect, ann string) string {
	switch d {
	case wire.OpenAIChat:
		return `{"model":"m","tools":[{"type":"function","function":{"name":"transfer_funds","parameters":{"type":"object"}},"annotations":` + ann + `}]}`
	case wire.OpenAIResponses:
		return `{"model":"m","tools":[{"type":"function","name":"transfer_funds","parameters":{"type":"object"},"annotations":` + ann + `}]}`
	case wire.Anthropic:
		return `{"model":"m","max_tokens":100,"tools":[{"name":"transfer_funds","input_schema":{"type":"object"},"annotations":` + ann + `}]}`
	case wire.Gemini:
		return `{"tools":[{"functionDeclarations":[{"name":"transfer_funds","parameters":{"type":"object"},"annotations":` + ann + `}]}]}`
	case wire.Bedrock:
		return `{"modelId":"m","toolConfig":{"tools":[{"toolSpec":{"name":"transfer_funds","inputSchema":{"json":{"type":"object"}},"annotations":` + ann + `}}]}}`
	}
	panic(d)
}

// receiptClass feeds a payment and its receipt to a session whose request
// declares transfer_funds with annotations ann, and returns the class the
// session's Context gives the receipt and the class a Guarded bound to
// the body the session writes gives it.
func receiptClass(t *testing.T, d wire.Dialect, ann string) (session, bound pruneguard.Class) {
	t.Helper()
	s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(toolsWith(d, ann))))
	_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("pay the invoice")})
	must(t, err)
	_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c1", Tool: "transfer_funds", Args: json.RawMessage(`{"amount":100}`)}}})
	must(t, err)
	r, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c1"}, Content: []byte("receipt 4711: paid")})
	must(t, err)
	session, _ = s.Context().ClassOf(r)
	var body bytes.Buffer
	_, err = s.WriteTo(&body)
	must(t, err)
	g, err := wire.Bind(body.Bytes(), d, wire.Options{})
	must(t, err)
	for i := g.Len() - 1; i >= 0; i-- {
		if m, ok := g.Context().Message(wire.ID(i)); ok && len(m.Answers) > 0 {
			bound, _ = g.Context().ClassOf(wire.ID(i))
			return session, bound
		}
	}
	t.Fatalf("%s: no result in\n%s", d, body.Bytes())
	return
}

// TestAnnotationKeysExact: a hint spelt in another case is no hint, as
// for an MCP client, in a manifest and in the tools array of every
// dialect, whether a session or Bind reads it. Before, encoding/json
// matched "readonlyhint" for "readOnlyHint" and the last one won, so a
// mutating transfer_funds read as read-only and its receipt as
// reconstructible.
func TestAnnotationKeysExact(t *testing.T) {
	const ann = `{"readOnlyHint":false,"readonlyhint":true,"openWorldHint":false}`
	m, err := wire.ReadManifest([]byte(`{"tools":[{"name":"transfer_funds","annotations":` + ann + `}]}`))
	must(t, err)
	if a := m.Tools[0].Annotations; a == nil || a.ReadOnly() {
		t.Errorf("manifest: transfer_funds read as read-only: %+v", a)
	}
	for _, d := range wire.Dialects {
		session, bound := receiptClass(t, d, ann)
		if session != pruneguard.Irreducible || bound != pruneguard.Irreducible {
			t.Errorf("%s: the receipt of a mutating payment is %v in a session, %v bound; want irreducible", d, session, bound)
		}
	}
	// The exact keys still count.
	for _, d := range wire.Dialects {
		session, bound := receiptClass(t, d, `{"readOnlyHint":true,"openWorldHint":false}`)
		if session != pruneguard.Reconstructible || bound != pruneguard.Reconstructible {
			t.Errorf("%s: a pure tool's result is %v in a session, %v bound; want reconstructible", d, session, bound)
		}
	}
	// Other keys of a manifest are exact too.
	for _, bad := range []string{`{"Tools":[{"name":"a"}]}`, `{"tools":[{"Name":"a"}]}`, `{"result":{"TOOLS":[]}}`} {
		if _, err := wire.ReadManifest([]byte(bad)); err == nil {
			t.Errorf("ReadManifest(%s) accepted a key spelt in another case", bad)
		}
	}
}

// TestAnnotationDuplicates: a key given twice, a hint that is not a
// boolean, a tool listed twice or declared twice with other annotations
// are bad input, refused with an *AnnotationError naming the tool and the
// key, by ReadManifest, Bind, a session's request fields and NewSession.
func TestAnnotationDuplicates(t *testing.T) {
	type want struct{ tool, key string }
	manifests := map[string]want{
		`{"tools":[{"name":"transfer_funds","annotations":{"readOnlyHint":false,"readOnlyHint":true}}]}`:      {"transfer_funds", "readOnlyHint"},
		`{"tools":[{"name":"transfer_funds","annotations":{"readOnlyHint":"false"}}]}`:                        {"transfer_funds", "readOnlyHint"},
		`{"tools":[{"name":"transfer_funds","annotations":{"openWorldHint":1}}]}`:                             {"transfer_funds", "openWorldHint"},
		`{"tools":[{"name":"transfer_funds"},{"name":"transfer_funds","annotations":{"readOnlyHint":true}}]}`: {"transfer_funds", "name"},
		`{"result":{"tools":[{"name":"x","annotations":{"destructiveHint":false,"destructiveHint":false}}]}}`: {"x", "destructiveHint"},
	}
	for raw, w := range manifests {
		_, err := wire.ReadManifest([]byte(raw))
		var ae *wire.AnnotationError
		if !errors.As(err, &ae) || ae.Tool != w.tool || ae.Key != w.key {
			t.Errorf("ReadManifest(%s) = %v; want an AnnotationError for %s, %s", raw, err, w.tool, w.key)
		}
	}
	for _, raw := range []string{`{"tools":[],"tools":[]}`, `{"tools":[{"name":"a","name":"b"}]}`, `{"tools":[{"name":"a","annotations":[]}]}`} {
		if _, err := wire.ReadManifest([]byte(raw)); err == nil {
			t.Errorf("ReadManifest(%s) accepted it", raw)
		}
	}
	// A manifest built in code that lists a tool twice.
	ro := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true)}
	twice := &wire.Manifest{Tools: []wire.ManifestTool{{Name: "transfer_funds"}, {Name: "transfer_funds", Annotations: &ro}}}
	_, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100}, Manifest: twice})
	var ae *wire.AnnotationError
	if !errors.Is(err, wire.ErrSessionConfig) || !errors.As(err, &ae) || ae.Key != "name" {
		t.Errorf("NewSession with a tool listed twice: %v", err)
	}
	if _, err := wire.Bind([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`), wire.Anthropic, wire.Options{Manifest: twice}); !errors.As(err, &ae) {
		t.Errorf("Bind with a tool listed twice: %v", err)
	}
	for _, d := range wire.Dialects {
		for ann, w := range map[string]want{
			`{"readOnlyHint":true,"readOnlyHint":false}`: {"transfer_funds", "readOnlyHint"},
			`{"idempotentHint":"yes"}`:                   {"transfer_funds", "idempotentHint"},
			`{"readOnlyHint":true},"annotations":{}`:     {"transfer_funds", "annotations"},
		} {
			fields := toolsWith(d, ann)
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 100}})
			must(t, err)
			must(t, s.SetRequest(json.RawMessage(`{"model":"before"}`)))
			err = s.SetRequest(json.RawMessage(fields))
			if !errors.As(err, &ae) || ae.Tool != w.tool || ae.Key != w.key {
				t.Errorf("%s: SetRequest(%s) = %v; want an AnnotationError for %s", d, fields, err, w.key)
			}
			var now bytes.Buffer
			_, _ = s.WriteTo(&now)
			if !strings.Contains(now.String(), `"before"`) {
				t.Errorf("%s: refused fields replaced the request's: %s", d, now.String())
			}
			body := strings.Replace(fields, `{`, `{`+historyOf(d)+`,`, 1)
			if _, err := wire.Bind([]byte(body), d, wire.Options{}); !errors.As(err, &ae) || ae.Key != w.key {
				t.Errorf("%s: Bind(%s) = %v; want an AnnotationError for %s", d, body, err, w.key)
			}
		}
	}
	// One tool declared twice with other annotations.
	body := `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[` +
		`{"name":"transfer_funds","input_schema":{"type":"object"},"annotations":{"readOnlyHint":false}},` +
		`{"name":"transfer_funds","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
	if _, err := wire.Bind([]byte(body), wire.Anthropic, wire.Options{}); !errors.As(err, &ae) || ae.Key != "name" {
		t.Errorf("a tool declared twice with other annotations: %v", err)
	}
}

// historyOf is a history of one user message in dialect d, as a member of
// a body.
func historyOf(d wire.Dialect) string {
	switch d {
	case wire.OpenAIResponses:
		return `"input":[{"role":"user","content":"hi"}]`
	case wire.Gemini:
		return `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	case wire.Bedrock:
		return `"messages":[{"role":"user","content":[{"text":"hi"}]}]`
	}
	return `"messages":[{"role":"user","content":"hi"}]`
}

package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// transcripts returns every recorded transcript as a request body.
func transcripts(t *testing.T) map[string]struct {
	body []byte
	d    wire.Dialect
} {
	t.Helper()
	out := map[string]struct {
		body []byte
		d    wire.Dialect
	}{}
	root := "../testdata/transcripts"
	err := filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || de.Name() == "SOURCES.md" {
			return err
		}
		file, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		body, d, err := wire.Unwrap(file, de.Name())
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[rel] = struct {
			body []byte
			d    wire.Dialect
		}{body, d}
		return nil
	})
	must(t, err)
	if len(out) == 0 {
		t.Fatal("no transcripts")
	}
	return out
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	return v
}

func jsonEqual(t *testing.T, b1, b2 []byte) bool {
	t.Helper()
	return reflect.DeepEqual(jsonValue(t, b1), jsonValue(t, b2))
}

// TestSessionRoundTripTranscripts: every recorded transcript, synced into
// a session and rendered back without a prune, is JSON-equal to the
// input, and so is the body once the history is fed message by message.
func TestSessionRoundTripTranscripts(t *testing.T) {
	for name, tr := range transcripts(t) {
		t.Run(name, func(t *testing.T) {
			s, err := wire.NewSession(wire.SessionConfig{Dialect: tr.d, Guard: pruneguard.Guard{Budget: 1 << 30}})
			must(t, err)
			out, rep, err := s.Sync(tr.body)
			must(t, err)
			if rep.Guarded || rep.Before != rep.After {
				t.Errorf("report %+v for a body under budget", rep)
			}
			if !jsonEqual(t, tr.body, out) {
				t.Fatalf("synced body differs from the input")
			}
			// Again, with nothing new: the same body.
			again, _, err := s.Sync(tr.body)
			must(t, err)
			if !bytes.Equal(out, again) {
				t.Errorf("a second sync of the same body wrote another body")
			}
			// Fed message by message, with the other fields set apart.
			b, err := wire.Read(tr.body, tr.d)
			must(t, err)
			var top map[string]json.RawMessage
			must(t, json.Unmarshal(tr.body, &top))
			key := map[wire.Dialect]string{wire.OpenAIResponses: "input", wire.Gemini: "contents"}[tr.d]
			if key == "" {
				key = "messages"
			}
			if _, ok := top[key]; !ok || len(b.Messages) == 0 {
				return
			}
			if tr.d == wire.OpenAIResponses && bytes.HasPrefix(bytes.TrimSpace(top[key]), []byte(`"`)) {
				return // a plain-string input is not a list of items
			}
			delete(top, key)
			fields, _ := json.Marshal(top)
			f, err := wire.NewSession(wire.SessionConfig{Dialect: tr.d, Guard: pruneguard.Guard{Budget: 1 << 30}})
			must(t, err)
			must(t, f.SetRequest(fields))
			for _, m := range b.Messages {
				if _, err := f.Append(m.Raw); err != nil {
					t.Fatal(err)
				}
			}
			fed, _, err := f.Request()
			must(t, err)
			if !jsonEqual(t, tr.body, fed) {
				t.Fatalf("body fed message by message differs from the input")
			}
		})
	}
}

// TestSessionPrunedTranscripts: every transcript synced under a small
// budget is pruned without breaking a provider rule it did not break.
func TestSessionPrunedTranscripts(t *testing.T) {
	for name, tr := range transcripts(t) {
		t.Run(name, func(t *testing.T) {
			before, err := wire.Validate(tr.body, tr.d)
			must(t, err)
			total := wire.Tokens(mustRead(t, tr.body, tr.d), nil)
			s, err := wire.NewSession(wire.SessionConfig{Dialect: tr.d, Guard: pruneguard.Guard{Budget: total / 3},
				Unannotated: wire.UnannotatedRegenerable,
				Config:      pruneguard.Config{TextClass: pruneguard.Reconstructible}})
			must(t, err)
			out, rep, err := s.Sync(tr.body)
			must(t, err)
			after, err := wire.Validate(out, tr.d)
			must(t, err)
			if v := wire.NewViolations(before, after); len(v) > 0 {
				t.Fatalf("the pruned body breaks %v; evicted %v", v, rep.Evicted)
			}
			t.Logf("%s: %d -> %d tokens, evicted %d, refusals %+v", tr.d, rep.Before, rep.After, len(rep.Evicted), rep.Refusals)
			if rep.After > rep.Before {
				t.Errorf("tokens grew: %d -> %d", rep.Before, rep.After)
			}
			if got := wire.Tokens(mustRead(t, out, tr.d), nil); got != rep.After {
				t.Errorf("report says %d tokens after, body has %d", rep.After, got)
			}
		})
	}
}

func mustRead(t *testing.T, body []byte, d wire.Dialect) *wire.Body {
	t.Helper()
	b, err := wire.Read(body, d)
	must(t, err)
	return b
}

func TestNewSessionRefusesConfigs(t *testing.T) {
	for name, cfg := range map[string]wire.SessionConfig{
		"no budget":             {Dialect: wire.OpenAIChat},
		"negative budget":       {Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: -1}},
		"unknown dialect":       {Dialect: "x", Guard: pruneguard.Guard{Budget: 10}},
		"no dialect":            {Guard: pruneguard.Guard{Budget: 10}},
		"trigger below":         {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10}, Trigger: 5},
		"negative min clear":    {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10}, MinClear: -1},
		"ceiling below":         {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Ceiling: 5}},
		"trigger above ceil":    {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Ceiling: 20}, Trigger: 30},
		"blank stub":            {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10}, Config: pruneguard.Config{StubText: "  "}},
		"triggers differ":       {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Trigger: 20}, Trigger: 30},
		"min clears differ":     {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, MinClear: 2}, MinClear: 3},
		"guard trigger below":   {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Trigger: 5}},
		"guard negative rounds": {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Rounds: -1}},
		"guard spill":           {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Spill: &spill.Spiller{Store: &spill.Memory{}}}},
		"hoard without size":    {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Hoard: pruneguard.HoardStub}},
		"bad boundary":          {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10}, Config: pruneguard.Config{Boundary: 9}},
	} {
		if s, err := wire.NewSession(cfg); err == nil || !errors.Is(err, wire.ErrSessionConfig) || s != nil {
			t.Errorf("%s: session %v, err %v", name, s, err)
		}
	}
	// What the core's Validate refuses comes with its *ConfigError.
	_, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10, Rounds: -1}})
	var ce *pruneguard.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Guard.Rounds" || !errors.Is(err, pruneguard.ErrConfig) {
		t.Errorf("err %v, want the core's configuration error of Guard.Rounds", err)
	}
}

// chatTurns is a Chat history of n turns, each a user question and an
// assistant answer of about size bytes.
func chatTurns(n, size int) []json.RawMessage {
	out := []json.RawMessage{json.RawMessage(`{"role":"system","content":"You are terse."}`)}
	pad := strings.Repeat("x", size)
	for i := range n {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"role":"user","content":"question %d %s"}`, i, pad)))
		out = append(out, json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"answer %d %s"}`, i, pad)))
	}
	return out
}

func chatBody(msgs []json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-x","messages":[`)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestSessionSticky: under the trigger the body keeps the pruned prefix
// of the last prune; over it, a prune goes down to the budget and frees
// at least MinClear. The trigger and the minimum may be given on the
// session or on its Guard: both count the whole body.
func TestSessionSticky(t *testing.T) {
	text := pruneguard.Config{TextClass: pruneguard.Reconstructible}
	for name, cfg := range map[string]wire.SessionConfig{
		"session": {Dialect: wire.OpenAIChat, Config: text, Guard: pruneguard.Guard{Budget: 1000}, Trigger: 1500, MinClear: 600},
		"guard":   {Dialect: wire.OpenAIChat, Config: text, Guard: pruneguard.Guard{Budget: 1000, Trigger: 1500, MinClear: 600}},
	} {
		t.Run(name, func(t *testing.T) { sticky(t, cfg) })
	}
}

func sticky(t *testing.T, cfg wire.SessionConfig) {
	s, err := wire.NewSession(cfg)
	must(t, err)
	all := chatTurns(60, 80) // about 25 tokens a message
	prunes := 0
	var last []byte
	for n := 2; n <= len(all); n += 2 {
		out, rep, err := s.Sync(chatBody(all[:n+1]))
		must(t, err)
		if rep.After > 1500 {
			t.Fatalf("request %d: %d tokens, over the trigger", n, rep.After)
		}
		if rep.Before <= 1500 && rep.Guarded {
			t.Fatalf("request %d: guarded at %d tokens, under the trigger", n, rep.Before)
		}
		if rep.Guarded {
			prunes++
			if rep.Before-rep.After < 600 {
				t.Errorf("request %d: a prune freed %d tokens, want at least 600", n, rep.Before-rep.After)
			}
			if rep.After > 1000 {
				t.Errorf("request %d: pruned to %d tokens, over the budget", n, rep.After)
			}
		} else if last != nil {
			// Nothing pruned: the last body is a prefix of this one.
			prev := mustRead(t, last, wire.OpenAIChat).Messages
			cur := mustRead(t, out, wire.OpenAIChat).Messages
			for i := range prev {
				if !bytes.Equal(prev[i].Raw, cur[i].Raw) {
					t.Fatalf("request %d: message %d changed without a prune", n, i)
				}
			}
		}
		last = out
	}
	if prunes == 0 || prunes > 10 {
		t.Errorf("%d prunes over 60 turns", prunes)
	}
	// The system prompt and the task stay.
	b := mustRead(t, last, wire.OpenAIChat)
	if b.Messages[0].Role != "system" || !strings.Contains(string(b.Messages[1].Raw), "question 0 ") {
		t.Errorf("pinned messages lost: %s", last)
	}
}

// TestSessionReset: a history that does not continue the session's starts
// it over.
func TestSessionReset(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	all := chatTurns(3, 5)
	_, rep, err := s.Sync(chatBody(all))
	must(t, err)
	if rep.Reset {
		t.Error("first sync reports a reset")
	}
	edited := append([]json.RawMessage{json.RawMessage(`{"role":"system","content":"other"}`)}, all[1:]...)
	out, rep, err := s.Sync(chatBody(edited))
	must(t, err)
	if !rep.Reset || !jsonEqual(t, out, chatBody(edited)) {
		t.Errorf("reset %v, body %s", rep.Reset, out)
	}
	if s.Len() != len(edited) {
		t.Errorf("session holds %d messages, want %d", s.Len(), len(edited))
	}
}

// TestSessionEvents: a session fed by events and streamed deltas renders
// a valid body in every dialect, with the provider's call ids.
func TestSessionEvents(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}})
			must(t, err)
			fields := `{"model":"m"}`
			if d == wire.Bedrock { // Bedrock wants the tools declared beside tool blocks
				fields = `{"model":"m","toolConfig":{"tools":[{"toolSpec":{"name":"read_file","inputSchema":{"json":{"type":"object"}}}}]}}`
			}
			must(t, s.SetRequest(json.RawMessage(fields)))
			_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleSystem, Content: []byte("Be brief.")})
			must(t, err)
			_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("Read main.go")})
			must(t, err)
			// The model streams a call.
			a, err := s.Open(pruneguard.RoleAssistant)
			must(t, err)
			must(t, s.WriteText(a, "Reading "))
			must(t, s.WriteText(a, "it."))
			must(t, s.WriteCall(a, "call_1", "read_file", `{"path":`))
			must(t, s.WriteCall(a, "call_1", "", `"main.go"}`))
			// Mid-stream the request shows what arrived so far.
			if _, _, err := s.Request(); err != nil {
				t.Fatal(err)
			}
			must(t, s.Close(a))
			// The result streams in.
			r, err := s.Open(pruneguard.RoleTool, "call_1")
			must(t, err)
			must(t, s.WriteText(r, "package main"))
			must(t, s.Close(r))
			_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleAssistant, Content: []byte("It is a main package.")})
			must(t, err)
			_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("Thanks.")})
			must(t, err)
			body, _, err := s.Request()
			must(t, err)
			vs, err := wire.Validate(body, d)
			must(t, err)
			if len(vs) > 0 {
				t.Fatalf("%v\n%s", vs, body)
			}
			b := mustRead(t, body, d)
			var calls, results []string
			for _, m := range b.Messages {
				for _, c := range m.Calls {
					calls = append(calls, c.ID+":"+c.Name+":"+string(c.Args))
				}
				results = append(results, m.Results...)
			}
			if fmt.Sprint(calls) != `[call_1:read_file:{"path":"main.go"}]` || fmt.Sprint(results) != "[call_1]" {
				t.Errorf("calls %v results %v\n%s", calls, results, body)
			}
			if !strings.Contains(string(body), "Be brief.") || !strings.Contains(string(body), "Reading it.") {
				t.Errorf("text lost:\n%s", body)
			}
			// A message answering an unknown call is refused as the Context refuses it.
			if _, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"nope"}}); !errors.Is(err, pruneguard.ErrUnknownCall) {
				t.Errorf("unknown call: %v", err)
			}
		})
	}
}

// TestSessionAppendRawPairs: raw results pair with raw calls by the
// provider's ids, and the Context's call ids are those ids.
func TestSessionAppendRawPairs(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	for _, m := range []string{
		`{"role":"user","content":"go"}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{}},{"type":"tool_use","id":"toolu_2","name":"ls","input":{"d":"/"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"b"},{"type":"tool_result","tool_use_id":"toolu_1","content":"a"}]}`,
	} {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	c := s.Context()
	if p := c.Pending(); len(p) != 0 {
		t.Errorf("pending %v", p)
	}
	m, ok := c.Message("m2")
	if !ok || fmt.Sprint(m.Answers) != "[toolu_2 toolu_1]" {
		t.Errorf("answers %v", m.Answers)
	}
	u, _ := c.UnitOf("m1")
	if fmt.Sprint(u.Messages) != "[m1 m2]" {
		t.Errorf("unit %v", u.Messages)
	}
}

// TestSessionConcurrent feeds a session from several goroutines while
// requests are made.
func TestSessionConcurrent(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 400},
		Config: pruneguard.Config{TextClass: pruneguard.Reconstructible, Boundary: pruneguard.BoundaryRelaxed}})
	must(t, err)
	_, err = s.Append(json.RawMessage(`{"role":"user","content":"start"}`))
	must(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if _, err := s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"g%d m%d %s"}`, g, i, strings.Repeat("y", 40)))); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := s.Request(); err != nil {
					t.Error(err)
					return
				}
				// The model answers the request: it has read what it showed.
				if _, err := s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"g%d r%d %s"}`, g, i, strings.Repeat("z", 40)))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	body, rep, err := s.Request()
	must(t, err)
	if rep.After > 400 {
		t.Errorf("after %d tokens", rep.After)
	}
	if vs, _ := wire.Validate(body, wire.OpenAIChat); len(vs) > 0 {
		t.Error(vs)
	}
}

// TestSessionLogs: one record per decision and per refusal, no content.
func TestSessionLogs(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 300},
		Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}, Logger: logger})
	must(t, err)
	all := chatTurns(20, 40)
	// A secret the log must not show.
	all[3] = json.RawMessage(`{"role":"user","content":"my token is SECRET-123"}`)
	_, rep, err := s.Sync(chatBody(all))
	must(t, err)
	if !rep.Guarded || len(rep.Result.Decisions) == 0 {
		t.Fatalf("no prune: %+v", rep)
	}
	logs := buf.String()
	if strings.Contains(logs, "SECRET") || strings.Contains(logs, "question") {
		t.Errorf("content in the log:\n%s", logs)
	}
	if n := strings.Count(logs, `"msg":"pruneguard: decision"`); n != len(rep.Result.Decisions) {
		t.Errorf("%d decision records for %d decisions:\n%s", n, len(rep.Result.Decisions), logs)
	}
	if !strings.Contains(logs, `"evicted":["m2"`) || !strings.Contains(logs, `"freed":`) {
		t.Errorf("decision record lacks ids or tokens:\n%s", logs)
	}
}

// TestSessionReusedCallIDs: a call id that comes back once its call was
// answered pairs with its own result, as real agents reuse ids.
func TestSessionReusedCallIDs(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	for _, m := range []string{
		`{"role":"user","content":"twice"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"one"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"two"}`,
	} {
		_, err := s.Append(json.RawMessage(m))
		must(t, err)
	}
	if p := s.Context().Pending(); len(p) > 0 {
		t.Fatalf("pending %v", p)
	}
	u1, _ := s.Context().UnitOf("m2")
	u2, _ := s.Context().UnitOf("m4")
	if fmt.Sprint(u1.Messages, u2.Messages) != "[m1 m2] [m3 m4]" {
		t.Errorf("units %v %v", u1.Messages, u2.Messages)
	}
}

// TestSessionRoundTripEveryDialect: a body of each dialect (written by
// Render from events) synced into a session comes back JSON-equal, and
// pruned under a small budget it breaks no provider rule.
func TestSessionRoundTripEveryDialect(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body, err := wire.Render(d, eventContext(t), wire.RenderOptions{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}})
			must(t, err)
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}})
			must(t, err)
			out, _, err := s.Sync(body)
			must(t, err)
			if !jsonEqual(t, body, out) {
				t.Fatalf("round trip differs:\n%s\n%s", body, out)
			}
			small, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 120},
				Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
			must(t, err)
			out, rep, err := small.Sync(body)
			must(t, err)
			if len(rep.Evicted) == 0 {
				t.Errorf("nothing evicted: %+v", rep)
			}
			if vs, _ := wire.Validate(out, d); len(vs) > 0 {
				t.Errorf("%v\n%s", vs, out)
			}
		})
	}
}

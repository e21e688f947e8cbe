package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// recorded is one bundled transcript: its body and the dialect it is in.
type recorded struct {
	name string
	body []byte
	d    wire.Dialect
}

func recordedTranscripts(t *testing.T) []recorded {
	t.Helper()
	var out []recorded
	err := filepath.WalkDir("../testdata/transcripts", func(path string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || de.Name() == "SOURCES.md" {
			return err
		}
		file, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		body, d, err := wire.Unwrap(file, path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, recorded{filepath.Base(path), body, d})
		return nil
	})
	must(t, err)
	if len(out) != 33 {
		t.Fatalf("%d transcripts", len(out))
	}
	return out
}

// feedStep is one message of a transcript as the two sessions are fed
// it: provider JSON for both (raw), or an event that one session streams
// (stream) and the other appends whole.
type feedStep struct {
	raw    json.RawMessage
	event  pruneguard.Message
	stream bool
}

// feedSteps turns a transcript into the steps of a session of dialect d:
// in the transcript's own dialect, the messages are its JSON, but the
// assistant messages of text and client calls alone, which are events to
// stream; in another dialect, every message is an event, the assistant
// messages (their text and calls) to stream.
func feedSteps(b *wire.Body, d wire.Dialect) []feedStep {
	var out []feedStep
	for i, m := range b.Messages {
		assistant := len(m.Results) == 0 && (m.Role == "assistant" || m.Role == "model" || len(m.Calls) > 0)
		plain := !m.Reasoning && !m.ServerToolUse && !slices.ContainsFunc(m.Parts, func(p wire.Part) bool {
			return p.Kind != wire.PartText && p.Kind != wire.PartCall
		})
		text := strings.Join(m.Texts, "")
		ev := pruneguard.Message{}
		if text != "" {
			ev.Content = []byte(text)
		}
		switch {
		case d == b.Dialect && !(assistant && plain && (text != "" || len(m.Calls) > 0)):
			out = append(out, feedStep{raw: m.Raw})
			continue
		case assistant:
			ev.Role = pruneguard.RoleAssistant
			for k, c := range m.Calls {
				id := pruneguard.CallID(c.ID)
				if id == "" {
					id = pruneguard.CallID(fmt.Sprintf("call_%d_%d", i, k))
				}
				ev.Calls = append(ev.Calls, pruneguard.Call{ID: id, Tool: c.Name, Args: c.Args})
			}
			if ev.Content == nil && ev.Calls == nil {
				continue // nothing a stream can say (reasoning alone)
			}
			out = append(out, feedStep{event: ev, stream: true})
			continue
		case len(m.Results) > 0:
			ev.Role = pruneguard.RoleTool
			for _, r := range m.Results {
				ev.Answers = append(ev.Answers, pruneguard.CallID(r))
			}
			if ev.Content == nil {
				ev.Content = []byte("result")
			}
		case m.Role == "system" || m.Role == "developer":
			ev.Role = pruneguard.RoleSystem
		case m.Role == "user":
			ev.Role = pruneguard.RoleUser
		default:
			continue
		}
		if ev.Content == nil && ev.Answers == nil {
			continue
		}
		out = append(out, feedStep{event: ev})
	}
	return out
}

// chunks splits s into pieces of about n bytes, on rune boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// streamIn streams event m into s: its text, then each call, in small
// deltas.
func streamIn(s *wire.Session, m pruneguard.Message) (pruneguard.MessageID, error) {
	id, err := s.Open(m.Role)
	if err != nil {
		return "", err
	}
	for _, c := range chunks(string(m.Content), 7) {
		if err := s.WriteText(id, c); err != nil {
			return id, err
		}
	}
	for _, call := range m.Calls {
		name := call.Tool
		args := chunks(string(call.Args), 5)
		if len(args) == 0 {
			args = []string{""}
		}
		for _, a := range args {
			if err := s.WriteCall(id, call.ID, name, a); err != nil {
				return id, err
			}
			name = ""
		}
	}
	return id, s.Close(id)
}

// fieldsOf is the request's fields for a session of dialect d fed the
// transcript b: b's own fields in its own dialect, a model otherwise.
func fieldsOf(t *testing.T, b *wire.Body, body []byte, d wire.Dialect) json.RawMessage {
	t.Helper()
	if d != b.Dialect {
		if d == wire.Anthropic {
			return json.RawMessage(`{"model":"m","max_tokens":100}`)
		}
		return json.RawMessage(`{"model":"m"}`)
	}
	var top map[string]json.RawMessage
	must(t, json.Unmarshal(body, &top))
	for _, k := range []string{"messages", "input", "contents"} {
		delete(top, k)
	}
	raw, err := json.Marshal(top)
	must(t, err)
	return raw
}

// twoSessions feeds the steps to two sessions made with cfg, one
// streaming the assistant messages and one appending them whole, and
// returns them with the ids of the streamed messages and their text.
func twoSessions(t *testing.T, cfg wire.SessionConfig, fields json.RawMessage, steps []feedStep) (streamed, whole *wire.Session, ids []pruneguard.MessageID, texts []string) {
	t.Helper()
	var err error
	streamed, err = wire.NewSession(cfg)
	must(t, err)
	whole, err = wire.NewSession(cfg)
	must(t, err)
	must(t, streamed.SetRequest(fields))
	must(t, whole.SetRequest(fields))
	for _, st := range steps {
		if st.raw != nil {
			_, errW := whole.Append(st.raw)
			_, errS := streamed.Append(st.raw)
			if (errW == nil) != (errS == nil) {
				t.Fatalf("raw %s: whole %v, streamed %v", st.raw, errW, errS)
			}
			continue
		}
		idW, err := whole.AppendMessage(st.event)
		if err != nil {
			continue // an event the Context refuses (an orphan result): left out of both
		}
		var idS pruneguard.MessageID
		if st.stream {
			idS, err = streamIn(streamed, st.event)
			ids, texts = append(ids, idS), append(texts, string(st.event.Content))
		} else {
			idS, err = streamed.AppendMessage(st.event)
		}
		if err != nil || idS != idW {
			t.Fatalf("%+v: streamed as %q: %v; appended whole as %q", st.event, idS, err, idW)
		}
	}
	return streamed, whole, ids, texts
}

// contextOf is everything a caller reads of a session's Context and body.
func contextOf(t *testing.T, s *wire.Session) string {
	t.Helper()
	c := s.Context()
	var b strings.Builder
	for _, m := range c.Messages() {
		raw, err := json.Marshal(m)
		must(t, err)
		cl, _ := c.ClassOf(m.ID)
		u, _ := c.UnitOf(m.ID)
		fmt.Fprintf(&b, "%s class=%v unit=%s\n", raw, cl, u.ID)
	}
	units, err := json.Marshal(c.Units())
	must(t, err)
	fmt.Fprintf(&b, "units %s\ntokens %d pending %v unread %v\n", units, c.Tokens(), c.Pending(), c.Unread())
	var body bytes.Buffer
	_, err = s.WriteTo(&body)
	must(t, err)
	b.Write(body.Bytes())
	return b.String()
}

// TestStreamedIsAppendedWhole: in every dialect, every bundled
// transcript's assistant messages streamed through Open, WriteText,
// WriteCall and Close give the same Context, byte for byte (each
// Message, its class, its unit, the tokens), the same body, and under a
// budget the same pruned body and report, as the same messages appended
// whole; a streamed message's Content is its text alone. Before, the
// calls' arguments were appended to the Content (a message of calls
// alone was classed as prose) and the tokens were the deltas' sum.
func TestStreamedIsAppendedWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("every transcript in every dialect")
	}
	streamedMsgs, pruned := 0, 0
	for _, tr := range recordedTranscripts(t) {
		b := mustRead(t, tr.body, tr.d)
		for _, d := range wire.Dialects {
			steps := feedSteps(b, d)
			fields := fieldsOf(t, b, tr.body, d)
			cfg := wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 30},
				Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}, Unannotated: wire.UnannotatedRegenerable}
			streamed, whole, ids, texts := twoSessions(t, cfg, fields, steps)
			streamedMsgs += len(ids)
			for i, id := range ids {
				m, _ := streamed.Context().Message(id)
				if string(m.Content) != texts[i] {
					t.Fatalf("%s in %s: %s holds %q, its text is %q", tr.name, d, id, m.Content, texts[i])
				}
			}
			got, want := contextOf(t, streamed), contextOf(t, whole)
			if got != want {
				t.Fatalf("%s in %s: streamed\n%s\nappended whole\n%s", tr.name, d, firstDiff(got, want), firstDiff(want, got))
			}
			// Under a budget of half the body, the same prune.
			_, rep, err := whole.Request()
			must(t, err)
			cfg.Guard.Budget = max(rep.Before/2, 1)
			streamed, whole, _, _ = twoSessions(t, cfg, fields, steps)
			bodyS, repS, errS := streamed.Request()
			bodyW, repW, errW := whole.Request()
			if fmt.Sprint(errS) != fmt.Sprint(errW) || !bytes.Equal(bodyS, bodyW) ||
				fmt.Sprint(repS.Evicted, repS.Stubbed, repS.After) != fmt.Sprint(repW.Evicted, repW.Stubbed, repW.After) {
				t.Fatalf("%s in %s under %d: streamed %v %v %v, whole %v %v %v", tr.name, d, cfg.Guard.Budget,
					errS, repS.Evicted, repS.After, errW, repW.Evicted, repW.After)
			}
			pruned += len(repW.Evicted) + len(repW.Stubbed)
			if got, want := contextOf(t, streamed), contextOf(t, whole); got != want {
				t.Fatalf("%s in %s pruned: streamed\n%s\nappended whole\n%s", tr.name, d, firstDiff(got, want), firstDiff(want, got))
			}
		}
	}
	if streamedMsgs < 1000 || pruned < 1000 {
		t.Errorf("only %d messages streamed, %d pruned", streamedMsgs, pruned)
	}
	t.Logf("%d messages streamed, %d pruned", streamedMsgs, pruned)
}

// firstDiff returns the line of a where it first differs from b.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range al {
		if i >= len(bl) || al[i] != bl[i] {
			return al[i]
		}
	}
	return "(same)"
}

// TestStreamedCallsClassedAsJSON: an assistant message of calls alone,
// streamed, takes the class of its calls, as the same message fed as
// provider JSON does (reconstructible for a pure tool); with text, it is
// prose in both. Before, the streamed arguments were its Content, and it
// was prose whatever it held.
func TestStreamedCallsClassedAsJSON(t *testing.T) {
	pure := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	for _, d := range wire.Dialects {
		for _, text := range []string{"", "Reading it."} {
			cfg := wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20},
				Manifest: &wire.Manifest{Tools: []wire.ManifestTool{{Name: "read", Annotations: &pure}}}}
			s, err := wire.NewSession(cfg)
			must(t, err)
			_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("read a")})
			must(t, err)
			m := pruneguard.Message{Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c1", Tool: "read", Args: json.RawMessage(`{"path":"a"}`)}}}
			if text != "" {
				m.Content = []byte(text)
			}
			id, err := streamIn(s, m)
			must(t, err)
			streamed, _ := s.Context().ClassOf(id)
			var body bytes.Buffer
			_, err = s.WriteTo(&body)
			must(t, err)
			j, err := wire.NewSession(cfg)
			must(t, err)
			_, _, err = j.Sync(body.Bytes())
			must(t, err)
			fed, _ := j.Context().ClassOf(id)
			want := pruneguard.Reconstructible
			if text != "" {
				want = pruneguard.Irreducible
			}
			if streamed != want || fed != want {
				t.Errorf("%s, text %q: streamed %v, fed as JSON %v; want %v", d, text, streamed, fed, want)
			}
		}
	}
}

package wire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// heavyCounter counts a token per two bytes: a tokenizer that counts
// pointer lines (keys, hex digits) far above the approximate counter.
type heavyCounter struct{}

func (heavyCounter) Count(b []byte) int { return (len(b) + 1) / 2 }

// pointerSession is an Anthropic session with a system prompt, a
// Spiller on st, n spillable turns and a last user message of size last
// words, which no prune may touch.
func pointerSession(t *testing.T, cfg wire.SessionConfig, st spill.Store, n, last int) *wire.Session {
	t.Helper()
	cfg.Dialect = wire.Anthropic
	if cfg.Spiller == nil {
		cfg.Spiller = &spill.Spiller{Store: st}
	}
	s, err := wire.NewSession(cfg)
	require.NoError(t, err)
	require.NoError(t, s.SetRequest(json.RawMessage(`{"model":"m","max_tokens":10,"system":"sys"}`)))
	feed(t, s, n)
	_, err = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"last %s"}`, strings.Repeat("word ", last))))
	require.NoError(t, err)
	return s
}

// linesTokens is what the pointer lines add to the system prompt of an
// Anthropic body, as c counts it.
func linesTokens(t *testing.T, c pruneguard.Counter, body []byte) (int, int) {
	t.Helper()
	var b struct {
		System string `json:"system"`
	}
	require.NoError(t, json.Unmarshal(body, &b))
	with, _ := json.Marshal(b.System)
	without, _ := json.Marshal("sys")
	return c.Count(with) - c.Count(without), strings.Count(b.System, "\n")
}

// A check that ends over its budget says what fills the prompt, the
// pointer lines counted with the session's counter as the body holds
// them; so does the ceiling error; and a check that pruned but ends
// over budget has a Reason.
func TestSessionHeldCountsPointerLines(t *testing.T) {
	for name, c := range map[string]pruneguard.Counter{"approx": pruneguard.ApproxCounter{}, "heavy": heavyCounter{}} {
		t.Run(name, func(t *testing.T) {
			cfg := wire.SessionConfig{Guard: pruneguard.Guard{Budget: 500}, Config: pruneguard.Config{Counter: c}}
			s := pointerSession(t, cfg, &spill.Memory{}, 12, 300)
			body, rep, err := s.Request()
			require.NoError(t, err)
			require.Greater(t, rep.After, 500, "the scenario ends over budget")
			want, n := linesTokens(t, c, body)
			require.Positive(t, n, "pointer lines in the prompt")
			assert.Equal(t, pruneguard.Pruned, rep.Result.Outcome)
			require.Error(t, rep.Result.Reason, "pruned but over budget: a reason")
			assert.Contains(t, rep.Result.Held.String(), "pointer lines")
			assert.InDelta(t, want, rep.Result.Held.Lines, float64(n), "Held.Lines %d, the lines cost %d", rep.Result.Held.Lines, want)

			cfg.Guard.Ceiling = 500
			s = pointerSession(t, cfg, &spill.Memory{}, 12, 300)
			_, _, err = s.Request()
			var ce *pruneguard.CeilingError
			require.ErrorAs(t, err, &ce)
			assert.InDelta(t, want, ce.Held.Lines, float64(n), "CeilingError.Held.Lines %d, the lines cost %d", ce.Held.Lines, want)
			assert.Contains(t, err.Error(), "pointer lines")
		})
	}
}

// putCountingStore counts the writes that stored content, by key.
type putCountingStore struct {
	spill.Store
	mu   sync.Mutex
	puts map[string]int
}

func (c *putCountingStore) Put(ctx context.Context, key string, b []byte) error {
	err := c.Store.Put(ctx, key, b)
	if err == nil {
		c.mu.Lock()
		if c.puts == nil {
			c.puts = map[string]int{}
		}
		c.puts[key]++
		c.mu.Unlock()
	}
	return err
}

func (c *putCountingStore) Get(ctx context.Context, key string) ([]byte, error) {
	return c.Store.Get(ctx, key)
}

func (c *putCountingStore) Remove(ctx context.Context, key string) error {
	return c.Store.(spill.Remover).Remove(ctx, key)
}

func (c *putCountingStore) List(ctx context.Context, prefix string) ([]string, error) {
	return c.Store.(spill.Lister).List(ctx, prefix)
}

// refuseTask is a Screen that refuses every decision evicting message id.
type refuseTask struct{ id pruneguard.MessageID }

func (r refuseTask) Screen(d *pruneguard.Decision) []*pruneguard.Violation {
	for _, id := range d.Evict {
		if id == r.id {
			return []*pruneguard.Violation{{Gate: pruneguard.GateRegen, Code: "test-keep", Units: d.Units, Messages: []pruneguard.MessageID{id}}}
		}
	}
	return nil
}

// A segment written for a decision the screen then refused leaves the
// store and the report: no report lists a key the body does not name
// (in a pointer line, or in a segment of pointer lines a line names),
// and the store holds no segment the body does not name.
func TestSessionSpillRefusedLeavesNoSegment(t *testing.T) {
	for name, store := range map[string]spill.Store{"memory": &spill.Memory{}, "dir": spill.Dir(t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			st := &putCountingStore{Store: store}
			cfg := wire.SessionConfig{Guard: pruneguard.Guard{Budget: 700, Screen: refuseTask{id: "m0"}}}
			s := pointerSession(t, cfg, st, 3, 5)
			var named map[string]bool
			for i := range 8 {
				body, rep, err := s.Request()
				require.NoError(t, err)
				named = namedKeys(t, st, body)
				for _, sp := range rep.Result.Spills {
					assert.True(t, named[sp.Pointer.Key], "check %d: the report lists %s, which the body does not name", i, sp.Pointer.Key)
				}
				feed(t, s, 1)
			}
			keys, err := st.List(t.Context(), "")
			require.NoError(t, err)
			require.NotEmpty(t, keys)
			for _, k := range keys {
				assert.True(t, named[k], "the store holds %s, which no pointer names", k)
			}
		})
	}
}

var segKey = regexp.MustCompile(`seg-[0-9a-z_]+`)

// namedKeys returns the keys body names, and those the segments it
// names name in turn.
func namedKeys(t *testing.T, st spill.Store, body []byte) map[string]bool {
	named := map[string]bool{}
	todo := segKey.FindAllString(string(body), -1)
	for len(todo) > 0 {
		k := todo[0]
		todo = todo[1:]
		if named[k] {
			continue
		}
		named[k] = true
		if b, err := st.Get(t.Context(), k); err == nil {
			todo = append(todo, segKey.FindAllString(string(b), -1)...)
		}
	}
	return named
}

// Content already in the store is not written again, by a later process
// too: a session started over on the same directory, fed the same
// history, writes nothing.
func TestSessionSpillNotWrittenAgainAfterRestart(t *testing.T) {
	dir := spill.Dir(t.TempDir())
	run := func() (*putCountingStore, []byte) {
		st := &putCountingStore{Store: dir}
		s := pointerSession(t, wire.SessionConfig{Guard: pruneguard.Guard{Budget: 700}}, st, 0, 5)
		feedFrom(t, s, 0, 8)
		body, rep, err := s.Request()
		require.NoError(t, err)
		require.NotEmpty(t, rep.Result.Spills)
		return st, body
	}
	first, body1 := run()
	require.NotEmpty(t, first.puts)
	second, body2 := run()
	assert.Empty(t, second.puts, "segments written again after a restart")
	assert.Equal(t, string(body1), string(body2))
}

// feedFrom feeds n turns of distinct text, numbered from k.
func feedFrom(t *testing.T, s *wire.Session, k, n int) {
	t.Helper()
	for i := k; i < k+n; i++ {
		_, err := s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"answer %d %s"}`, i, strings.Repeat("text ", 30))))
		require.NoError(t, err)
		_, err = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"question %d %s"}`, i, strings.Repeat("word ", 30))))
		require.NoError(t, err)
	}
}

// noPromptBody is a body of dialect d with no system prompt and n turns
// of text, then a short last user message.
func noPromptBody(d wire.Dialect, n int) []byte {
	var msgs []string
	add := func(role, text string) {
		switch d {
		case wire.OpenAIChat:
			msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":%q}`, role, text))
		case wire.Gemini:
			if role == "assistant" {
				role = "model"
			}
			msgs = append(msgs, fmt.Sprintf(`{"role":%q,"parts":[{"text":%q}]}`, role, text))
		case wire.Bedrock:
			msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":[{"text":%q}]}`, role, text))
		}
	}
	for i := range n {
		add("user", fmt.Sprintf("question %d %s", i, strings.Repeat("word ", 40)))
		add("assistant", fmt.Sprintf("answer %d %s", i, strings.Repeat("text ", 40)))
	}
	add("user", "last")
	key := "messages"
	if d == wire.Gemini {
		key = "contents"
	}
	return []byte(fmt.Sprintf(`{"model":"m",%q:[%s]}`, key, strings.Join(msgs, ",")))
}

// hasPrompt reports whether a body of dialect d carries a system prompt.
func hasPrompt(t *testing.T, d wire.Dialect, body []byte) bool {
	t.Helper()
	var b map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &b))
	switch d {
	case wire.Gemini:
		return b["systemInstruction"] != nil || b["system_instruction"] != nil
	case wire.Bedrock:
		return b["system"] != nil
	}
	return strings.Contains(string(b["messages"]), `"role":"system"`) || strings.Contains(string(b["messages"]), `"role":"developer"`)
}

// A session adds no system prompt to a body that has none (Chat, Gemini,
// Bedrock), as a Guarded does not: what is spilled stays in the prompt
// when its pointer line would need one, refused with
// CodeNoPointerPlace, never reported as a failed spill.
func TestSessionNoSystemPromptAdded(t *testing.T) {
	for _, d := range []wire.Dialect{wire.OpenAIChat, wire.Gemini, wire.Bedrock} {
		t.Run(string(d), func(t *testing.T) {
			body := noPromptBody(d, 8)
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 300},
				Spiller: &spill.Spiller{Store: &spill.Memory{}}})
			require.NoError(t, err)
			out, rep, err := s.Sync(body)
			require.NoError(t, err)
			assert.False(t, hasPrompt(t, d, out), "the session added a system prompt: %s", out)
			assert.Empty(t, rep.Result.SpillErrors, "no place for a pointer is no failed spill")
			codes := map[string]bool{}
			for _, r := range rep.Refusals {
				codes[r.Code] = true
			}
			assert.True(t, codes[wire.CodeNoPointerPlace], "refusals %+v", rep.Refusals)
			assert.NotContains(t, string(out), "recall", "no pointer without a place")
			_, err = wire.Read(out, d)
			require.NoError(t, err)

			// Guarded keeps the same rule.
			_, g := guarded(t, d, string(body), wire.Options{Spiller: &spill.Spiller{Store: &spill.Memory{}}})
			res, _, err := g.Check(pruneguard.Guard{Budget: 300})
			require.NoError(t, err)
			gout, err := g.Body().Marshal()
			require.NoError(t, err)
			assert.False(t, hasPrompt(t, d, gout), "Guarded added a system prompt")
			assert.Empty(t, res.SpillErrors)
		})
	}
}

// records parses the JSON lines of a slog JSON handler.
func records(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		out = append(out, r)
	}
	return out
}

// The records of a session's check are the updates of one compaction,
// as the README promises of a guard's: each carries "compaction" and
// "status", and one "pruneguard: check" record ends the check with the
// session's own numbers (its budget and trigger as configured, the whole
// body's tokens), whether the logger is SessionConfig.Logger or
// Guard.Logger.
func TestSessionLogsCompaction(t *testing.T) {
	for _, where := range []string{"session", "guard"} {
		t.Run(where, func(t *testing.T) {
			var buf strings.Builder
			l := slog.New(slog.NewJSONHandler(&buf, nil))
			cfg := wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 300}, Trigger: 400,
				Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}
			if where == "session" {
				cfg.Logger = l
			} else {
				cfg.Guard.Logger = l
			}
			s, err := wire.NewSession(cfg)
			require.NoError(t, err)
			_, rep, err := s.Sync(chatBody(chatTurns(20, 40)))
			require.NoError(t, err)
			require.Equal(t, pruneguard.Pruned, rep.Result.Outcome)
			var checks []map[string]any
			for _, r := range records(t, buf.String()) {
				msg := r["msg"].(string)
				switch msg {
				case pruneguard.LogRefetch, pruneguard.LogReexpansion, "pruneguard: schema restored":
					continue
				}
				assert.Equal(t, rep.Result.Compaction, r["compaction"], "%s record without the compaction: %v", msg, r)
				assert.NotEmpty(t, r["status"], "%s record without a status", msg)
				if msg == pruneguard.LogCheck {
					checks = append(checks, r)
				}
			}
			require.Len(t, checks, 1, "one check record per check:\n%s", buf.String())
			c := checks[0]
			assert.Equal(t, "completed", c["status"])
			assert.Equal(t, "pruned", c["outcome"])
			assert.EqualValues(t, 300, c["budget"])
			assert.EqualValues(t, 400, c["trigger"])
			assert.EqualValues(t, rep.Before, c["before"])
			assert.EqualValues(t, rep.After, c["after"])
			assert.EqualValues(t, len(rep.Result.Decisions), c["decisions"])
		})
	}
}

// Fed counts every message fed, evicted ones included; the Context's Len
// counts those the request still shows; the deprecated Len is Fed.
func TestSessionFedAndContextLen(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 300},
		Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	require.NoError(t, err)
	turns := chatTurns(20, 40)
	_, rep, err := s.Sync(chatBody(turns))
	require.NoError(t, err)
	require.NotEmpty(t, rep.Evicted)
	assert.Equal(t, len(turns), s.Fed())
	assert.Equal(t, s.Fed(), s.Len())
	assert.Equal(t, len(turns)-len(rep.Evicted), s.Context().Len())
}

// Pointer lines do not grow with the conversation: past an eighth of the
// budget they fold into a segment of their own, whose line stands for
// them, and recalling it gives them back, so that every segment stays
// within reach.
func TestSessionPointerLinesFold(t *testing.T) {
	st := &spill.Memory{}
	sp := &spill.Spiller{Store: st}
	s := pointerSession(t, wire.SessionConfig{Guard: pruneguard.Guard{Budget: 1500}, Spiller: sp}, st, 0, 5)
	var body []byte
	spills := 0
	for i := range 120 {
		feedFrom(t, s, i, 1)
		var rep wire.Report
		var err error
		body, rep, err = s.Request()
		require.NoError(t, err)
		require.LessOrEqual(t, rep.After, 1500, "request %d", i)
		spills += len(rep.Result.Spills)
		lines, _ := linesTokens(t, pruneguard.ApproxCounter{}, body)
		assert.LessOrEqual(t, lines, 1500/8+60, "request %d: the pointer lines cost %d", i, lines)
	}
	named := namedKeys(t, st, body)
	keys, err := st.List(t.Context(), "")
	require.NoError(t, err)
	require.Greater(t, spills, 10)
	for _, k := range keys {
		assert.True(t, named[k], "segment %s out of reach", k)
	}
	out, err := sp.HandleRecall(t.Context(), json.RawMessage(`{"query":"question 2"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "question 2 word")
}

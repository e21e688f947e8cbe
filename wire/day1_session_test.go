package wire_test

import (
	"encoding/json"
	"fmt"
	"strings"
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

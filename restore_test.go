package pruneguard_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// An id used again by a later call names the later call only: once that
// call is pruned, a result for the id is for a pruned call and a
// validation error names no call the Context holds, though the earlier
// call with the id is still in the prompt. A restored Context says the
// same.
func TestRestoreReusedIDOfPrunedCall(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "grep"}))
	appendAll(t, c,
		pg.Message{ID: "a1", Calls: []pg.Call{call("k1", "grep", `{}`)}},
		pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}},
		pg.Message{ID: "a2", Class: pg.Reconstructible, Calls: []pg.Call{call("k1", "grep", `{"q":"x"}`)}},
		pg.Message{ID: "r2", Answers: []pg.CallID{"k1"}, Class: pg.Reconstructible},
	)
	modelRead(t, c, "seen")
	prune(t, c, pg.Plan{Evict: []pg.MessageID{"a2"}})
	require.Equal(t, 3, c.Len(), "a1, r1 and the model's answer stay")

	check := func(c *pg.Context, what string) {
		t.Helper()
		err := c.Append(pg.Message{ID: "r3", Answers: []pg.CallID{"k1"}})
		require.ErrorIs(t, err, pg.ErrPrunedCall, what)
		err = c.Abandon("k1")
		require.ErrorIs(t, err, pg.ErrPrunedCall, what)
		err = c.ReportValidationError("k1", "q")
		require.ErrorIs(t, err, pg.ErrUnknownCall, what)
		require.ErrorIs(t, err, pg.ErrInvalidInput, what)
	}
	check(c, "live")

	var b bytes.Buffer
	require.NoError(t, c.Save(&b))
	state := b.Bytes()
	r, err := pg.Restore(bytes.NewReader(state), pg.Config{})
	require.NoError(t, err)
	check(r, "restored")
	var again bytes.Buffer
	require.NoError(t, r.Save(&again))
	require.Equal(t, string(state), again.String())

	// A new call takes the id again, live and restored alike.
	for _, c := range []*pg.Context{c, r} {
		appendAll(t, c,
			pg.Message{ID: "a4", Calls: []pg.Call{call("k1", "grep", `{}`)}},
			pg.Message{ID: "r4", Answers: []pg.CallID{"k1"}},
		)
		require.NoError(t, c.ReportValidationError("k1", "q"))
	}
}

// A saved call whose id a later call took must be done: two calls with
// one id never wait at once.
func TestRestoreRefusesASupersededPendingCall(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	appendAll(t, c, pg.Message{ID: "a1", Calls: []pg.Call{call("k1", "grep", `{}`)}})
	var b bytes.Buffer
	require.NoError(t, c.Save(&b))
	var s map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &s))
	calls := s["messages"].([]any)[0].(map[string]any)["calls"].([]any)
	require.Len(t, calls, 1)
	calls[0].(map[string]any)["superseded"] = true
	delete(s, "sha256")
	bad, err := json.Marshal(s)
	require.NoError(t, err)
	bad = pg.Reseal(bad)
	_, err = pg.Restore(bytes.NewReader(bad), pg.Config{})
	require.ErrorIs(t, err, pg.ErrBadState)
	require.ErrorIs(t, err, pg.ErrInvalidInput)

	// Answered, it restores, and its id names no call.
	appendAll(t, c, pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}})
	b.Reset()
	require.NoError(t, c.Save(&b))
	require.NoError(t, json.Unmarshal(b.Bytes(), &s))
	s["messages"].([]any)[0].(map[string]any)["calls"].([]any)[0].(map[string]any)["superseded"] = true
	delete(s, "sha256")
	ok, err := json.Marshal(s)
	require.NoError(t, err)
	ok = pg.Reseal(ok)
	r, err := pg.Restore(bytes.NewReader(ok), pg.Config{})
	require.NoError(t, err)
	err = r.Append(pg.Message{ID: "r2", Answers: []pg.CallID{"k1"}})
	require.ErrorIs(t, err, pg.ErrUnknownCall, "the id names no call")
}

package spill_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

func genBytes(t *rapid.T, label string) []byte {
	b := rapid.OneOf(
		rapid.SliceOf(rapid.Byte()),
		rapid.Map(rapid.String(), func(s string) []byte { return []byte(s) }),
	).Draw(t, label)
	if len(b) == 0 {
		return nil // empty content comes back nil
	}
	return b
}

func genMessage(t *rapid.T) pruneguard.Message {
	m := pruneguard.Message{
		ID:      pruneguard.MessageID(rapid.StringN(1, 12, -1).Draw(t, "id")),
		Role:    pruneguard.Role(rapid.SampledFrom([]string{"", "user", "assistant", "tool", "reasoning", "x<&>"}).Draw(t, "role")),
		Tokens:  rapid.IntRange(0, 1<<20).Draw(t, "tokens"),
		Content: genBytes(t, "content"),
		Class:   pruneguard.Class(rapid.Uint8().Draw(t, "class")),
		Facts:   pruneguard.Facts(rapid.Uint8().Draw(t, "facts")),
		Pinned:  rapid.Bool().Draw(t, "pinned"),
		IsError: rapid.Bool().Draw(t, "is_error"),
	}
	for range rapid.IntRange(0, 3).Draw(t, "calls") {
		m.Calls = append(m.Calls, pruneguard.Call{
			ID:     pruneguard.CallID(rapid.String().Draw(t, "call")),
			Tool:   rapid.String().Draw(t, "tool"),
			Args:   json.RawMessage(genBytes(t, "args")),
			Server: rapid.Bool().Draw(t, "server"),
		})
	}
	for range rapid.IntRange(0, 2).Draw(t, "answers") {
		m.Answers = append(m.Answers, pruneguard.CallID(rapid.String().Draw(t, "answer")))
	}
	for range rapid.IntRange(0, 2).Draw(t, "requires") {
		m.Requires = append(m.Requires, rapid.String().Draw(t, "require"))
	}
	for range rapid.IntRange(0, 2).Draw(t, "steps") {
		m.NeededBy = append(m.NeededBy, pruneguard.StepID(rapid.String().Draw(t, "step")))
	}
	return m
}

// Whatever the messages hold, a spill recalls them field for field, in a
// new Spiller too.
func TestSpillRecallProperty(t *testing.T) {
	ctx := t.Context()
	dir := spill.Dir(t.TempDir())
	rapid.Check(t, func(t *rapid.T) {
		var ms []pruneguard.Message
		for range rapid.IntRange(1, 5).Draw(t, "n") {
			ms = append(ms, genMessage(t))
		}
		s := &spill.Spiller{Store: dir}
		p, err := s.SpillMessages(ctx, ms)
		require.NoError(t, err)
		got, err := (&spill.Spiller{Store: dir}).Recall(ctx, p)
		require.NoError(t, err)
		require.Equal(t, ms, got)
	})
}

func TestSpillRefusesNamesThatAreNotText(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	for _, m := range []pruneguard.Message{
		{ID: "\xff"},
		{ID: "m", Role: "\xc3\x28"},
		{ID: "m", Calls: []pruneguard.Call{{ID: "c", Tool: "\xff"}}},
		{ID: "m", Calls: []pruneguard.Call{{ID: "\xff", Tool: "t"}}},
		{ID: "m", Answers: []pruneguard.CallID{"\xff"}},
		{ID: "m", NeededBy: []pruneguard.StepID{"\xff"}},
		{ID: "m", Requires: []string{"\xff"}},
	} {
		_, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "ok"}, m})
		require.ErrorIs(t, err, spill.ErrNotText)
		var me *spill.MessageError
		require.ErrorAs(t, err, &me)
		require.Equal(t, m.ID, me.ID)
	}
}

package spill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// session spills n segments of two messages each, a tool call and its
// result; the result of segment plant holds the ticket id INC-4711, and
// others hold ids like it.
func session(t *testing.T, ctx context.Context, s *spill.Spiller, n, plant int) []pruneguard.Pointer {
	t.Helper()
	var ps []pruneguard.Pointer
	for i := range n {
		out := fmt.Sprintf("build %d: 212 tests passed, see INC-%d and INC-47110; log at /var/log/build-%d.txt", i, 4700+i%11, i)
		if i == plant {
			out = "created ticket INC-4711 for the flaky settlement test"
		}
		ms := []pruneguard.Message{
			{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant,
				Calls: []pruneguard.Call{{ID: pruneguard.CallID(fmt.Sprint("k", i)), Tool: "run", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}},
			{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{pruneguard.CallID(fmt.Sprint("k", i))}, Content: []byte(out)},
		}
		p, err := s.SpillMessages(ctx, ms)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	return ps
}

func query(t *testing.T, ctx context.Context, s *spill.Spiller, q string) answer {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"query": q})
	out, err := s.HandleRecall(ctx, args)
	require.NoError(t, err)
	var a answer
	require.NoError(t, json.Unmarshal([]byte(out), &a), out)
	return a
}

// An id is found by its exact string, whatever else looks like it, and
// the query says where it is.
func TestQueryFindsExactID(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-1"}
	ps := session(t, ctx, s, 30, 3)
	for _, q := range []string{"INC-4711", "inc-4711", "ticket INC-4711", "INC-4711."} {
		a := query(t, ctx, s, q)
		require.NotEmpty(t, a.Messages, q)
		top := a.Messages[0]
		assert.Equal(t, "r3", top.ID, q)
		assert.Equal(t, ps[3].Key, top.Key, q)
		assert.Equal(t, 1, top.Index, q)
		assert.Contains(t, top.Content, "INC-4711", q)
		assert.Positive(t, top.Score)
	}
	a := query(t, ctx, s, "INC-4711")
	assert.Equal(t, "INC-4711", a.Query)
	for _, it := range a.Messages[1:] {
		assert.Less(t, it.Score, a.Messages[0].Score, "%s: only the exact id scores as high", it.ID)
	}
	assert.Empty(t, query(t, ctx, s, "INC-9999").Messages, "no hit: an empty list")
	a = query(t, ctx, s, "/var/log/build-17.txt")
	require.NotEmpty(t, a.Messages)
	assert.Equal(t, "r17", a.Messages[0].ID, "a path, exactly")
}

// A query searches every segment of the session in the store, those an
// earlier process wrote included, and nothing of another session's.
func TestQueryAcrossProcessesAndNamespaces(t *testing.T) {
	ctx := t.Context()
	dir := spill.Dir(t.TempDir())
	session(t, ctx, &spill.Spiller{Store: dir, Namespace: "sess-1"}, 12, 5)
	session(t, ctx, &spill.Spiller{Store: dir, Namespace: "sess-2"}, 12, 7)
	session(t, ctx, &spill.Spiller{Store: dir}, 12, 9)

	restarted := &spill.Spiller{Store: dir, Namespace: "sess-1"}
	a := query(t, ctx, restarted, "INC-4711")
	require.NotEmpty(t, a.Messages)
	assert.Equal(t, "r5", a.Messages[0].ID, "an earlier process's segment")
	for _, it := range a.Messages {
		assert.True(t, strings.HasPrefix(it.Key, "seg-sess-1_"), "only the session's own segments: %s", it.Key)
	}
	other := query(t, ctx, &spill.Spiller{Store: dir, Namespace: "sess-2"}, "INC-4711")
	require.NotEmpty(t, other.Messages)
	assert.Equal(t, "r7", other.Messages[0].ID)
	assert.Empty(t, query(t, ctx, &spill.Spiller{Store: dir, Namespace: "sess-3"}, "INC-4711").Messages, "a session with nothing spilled finds nothing")
	none := query(t, ctx, &spill.Spiller{Store: dir}, "INC-4711")
	require.NotEmpty(t, none.Messages)
	for _, it := range none.Messages {
		assert.NotContains(t, it.Key, "_", "no namespace: only segments written with none")
	}
	assert.Equal(t, "r9", none.Messages[0].ID)
}

// On a store that cannot list its keys, a query searches the segments
// the Spiller wrote or verified.
func TestQueryWithoutLister(t *testing.T) {
	ctx := t.Context()
	store := &counting{Store: &spill.Memory{}} // hides Memory's List
	s := &spill.Spiller{Store: store, Namespace: "sess-1"}
	ps := session(t, ctx, s, 6, 2)
	a := query(t, ctx, s, "INC-4711")
	require.NotEmpty(t, a.Messages)
	assert.Equal(t, "r2", a.Messages[0].ID)

	fresh := &spill.Spiller{Store: store, Namespace: "sess-1"}
	assert.Empty(t, query(t, ctx, fresh, "INC-4711").Messages, "knows no segment yet")
	require.NoError(t, fresh.Verify(ctx, ps[2]))
	assert.Equal(t, "r2", query(t, ctx, fresh, "INC-4711").Messages[0].ID)
}

// The same segments and query give the same answer, in any Spiller.
func TestQueryDeterministic(t *testing.T) {
	ctx := t.Context()
	store := &spill.Memory{}
	session(t, ctx, &spill.Spiller{Store: store, Namespace: "s"}, 40, 11)
	var first string
	for i := range 5 {
		out, err := (&spill.Spiller{Store: store, Namespace: "s"}).HandleRecall(ctx, json.RawMessage(`{"query":"tests passed INC-4705"}`))
		require.NoError(t, err)
		if i == 0 {
			first = out
			continue
		}
		assert.Equal(t, first, out)
	}
	hits, err := (&spill.Spiller{Store: store, Namespace: "s"}).Search(ctx, "tests passed INC-4705")
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.LessOrEqual(t, len(hits), spill.MaxHits)
	for i := 1; i < len(hits); i++ {
		assert.GreaterOrEqual(t, hits[i-1].Score, hits[i].Score)
	}
	assert.Contains(t, string(hits[0].Message.Content), "INC-4705")
}

// A query's answer is bounded and paged too; a hit too large for one
// answer shows the part that holds the term.
func TestQueryAnswerBounded(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}, MaxRecallBytes: spill.MinRecallBytes}
	session(t, ctx, s, 60, 1)
	log := strings.Repeat("ok line\n", 4000) + "FATAL: settlement deadline exceeded in INC-4711\n" + strings.Repeat("ok line\n", 4000)
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "log", Role: pruneguard.RoleTool, Content: []byte(log)}})
	require.NoError(t, err)

	as := recallAll(t, ctx, s, `{"query":"INC-4711"}`, spill.MinRecallBytes)
	var parts []answerItem
	for _, a := range as {
		for _, it := range a.Messages {
			if it.ID == "log" {
				parts = append(parts, it)
			}
		}
	}
	require.Len(t, parts, 1, "only the part that holds the term")
	assert.Equal(t, p.Key, parts[0].Key)
	assert.Contains(t, parts[0].Content, "FATAL: settlement deadline exceeded in INC-4711")
	assert.Greater(t, parts[0].Parts, 1)

	as = recallAll(t, ctx, s, `{"query":"tests passed"}`, spill.MinRecallBytes)
	assert.Greater(t, len(as), 1, "many hits: paged")
	n := 0
	for _, a := range as {
		n += len(a.Messages)
	}
	assert.LessOrEqual(t, n, spill.MaxHits)
}

// An id that every later summary copies is found first where it was
// given, however many summaries carry it and whatever their keys.
func TestQueryPrefersOriginalsToSummaries(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-1"}
	p0, err := s.SpillMessages(ctx, []pruneguard.Message{
		{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k1", Tool: "lookup", Args: json.RawMessage(`{"order":"ORD-100002"}`)}}},
		{ID: "r1", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"k1"}, Content: []byte(`{"order":"ORD-100002","left_with":"the neighbour"}`)},
	})
	require.NoError(t, err)
	for i := range spill.MaxHits + 5 {
		_, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: pruneguard.MessageID(fmt.Sprint("s", i)), Role: pruneguard.RoleSummary,
			Content: []byte(fmt.Sprintf("[Summary %d] Other facts: ORD-100002; ORD-%d", i, 200000+i))}})
		require.NoError(t, err)
	}
	hits, err := s.Search(ctx, "ORD-100002")
	require.NoError(t, err)
	require.Len(t, hits, spill.MaxHits)
	require.Equal(t, hits[0].Score, hits[len(hits)-1].Score, "the originals and the summaries tie")
	assert.Equal(t, []string{"a1", "r1"}, []string{string(hits[0].Message.ID), string(hits[1].Message.ID)})
	assert.Equal(t, p0.Key, hits[1].Pointer.Key)
	for _, h := range hits[2:] {
		assert.Equal(t, pruneguard.RoleSummary, h.Message.Role)
	}
}

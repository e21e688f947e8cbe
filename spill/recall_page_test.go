package spill_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

// answer is a recall answer as a model reads it.
type answer struct {
	Key      string          `json:"key"`
	Query    string          `json:"query"`
	Page     int             `json:"page"`
	Pages    int             `json:"pages"`
	Messages []answerItem    `json:"messages"`
	Next     json.RawMessage `json:"next"`
}

type answerItem struct {
	Key           string `json:"key"`
	Index         int    `json:"index"`
	Score         int    `json:"score"`
	Part          int    `json:"part"`
	Parts         int    `json:"parts"`
	ID            string `json:"id"`
	Content       string `json:"content"`
	ContentBase64 []byte `json:"content_base64"`
	Calls         []struct {
		ID         string `json:"id"`
		Args       string `json:"args"`
		ArgsBase64 []byte `json:"args_base64"`
	} `json:"calls"`
}

// recallAll reads every page of a recall, checking each answer's bound
// and paging, and returns the answers.
func recallAll(t tb, ctx context.Context, s *spill.Spiller, args string, bound int) []answer {
	t.Helper()
	var out []answer
	for page := 1; ; page++ {
		text, err := s.HandleRecall(ctx, json.RawMessage(args))
		require.NoError(t, err, args)
		require.LessOrEqual(t, len(text), bound, "page %d of %s", page, args)
		var a answer
		require.NoError(t, json.Unmarshal([]byte(text), &a), text)
		require.Equal(t, page, a.Page)
		out = append(out, a)
		if a.Next == nil {
			require.Equal(t, page, a.Pages, "the last page has no next")
			return out
		}
		require.Less(t, page, a.Pages)
		args = string(a.Next)
	}
}

// joined puts the parts of the messages of a segment's answers back
// together: content and each call's arguments, by message.
func joined(t tb, as []answer) []pruneguard.Message {
	t.Helper()
	var ms []pruneguard.Message
	for _, a := range as {
		for _, it := range a.Messages {
			if it.Part <= 1 {
				require.Equal(t, len(ms), it.Index, "messages in order")
				ms = append(ms, pruneguard.Message{ID: pruneguard.MessageID(it.ID)})
			} else {
				require.Equal(t, len(ms)-1, it.Index, "parts in order")
			}
			m := &ms[len(ms)-1]
			m.Content = append(m.Content, it.Content...)
			m.Content = append(m.Content, it.ContentBase64...)
			for len(m.Calls) < len(it.Calls) {
				m.Calls = append(m.Calls, pruneguard.Call{})
			}
			for i, c := range it.Calls {
				m.Calls[i].ID = pruneguard.CallID(c.ID)
				m.Calls[i].Args = append(m.Calls[i].Args, c.Args...)
				m.Calls[i].Args = append(m.Calls[i].Args, c.ArgsBase64...)
			}
		}
	}
	return ms
}

// sameContent checks that got holds want's ids, content and arguments.
func sameContent(t tb, want, got []pruneguard.Message) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].ID, got[i].ID)
		require.Equal(t, string(want[i].Content), string(got[i].Content), "message %d", i)
		require.Len(t, got[i].Calls, len(want[i].Calls))
		for j := range want[i].Calls {
			require.Equal(t, string(want[i].Calls[j].Args), string(got[i].Calls[j].Args), "message %d call %d", i, j)
		}
	}
}

// A recall answer never exceeds the bound: a segment larger than it is
// read in pages, a message larger than it in parts, and every byte comes
// back.
func TestRecallAnswerBounded(t *testing.T) {
	ctx := t.Context()
	var ms []pruneguard.Message
	for i := range 40 {
		ms = append(ms, pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool,
			Content: []byte(strings.Repeat(fmt.Sprintf("line %d of a build log\n", i), 120))})
	}
	huge := strings.Repeat("quote \" backslash \\ tab \t ünïcödé \u2028 ctrl \x01 newline \n", 2000)
	ms = append(ms, pruneguard.Message{ID: "big", Role: pruneguard.RoleAssistant, Content: []byte(huge),
		Calls: []pruneguard.Call{{ID: "k1", Tool: "write", Args: json.RawMessage(`{"text":"` + strings.Repeat("x", 9000) + `"}`)},
			{ID: "k2", Tool: "blob", Args: json.RawMessage(strings.Repeat("\xff\x00", 3000))}}})
	ms = append(ms, pruneguard.Message{ID: "bin", Content: []byte(strings.Repeat("\xfe\x01\x02", 4000))})

	for _, bound := range []int{0, spill.MinRecallBytes, 3000, 20000} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			s := &spill.Spiller{Store: &spill.Memory{}, MaxRecallBytes: bound}
			p, err := s.SpillMessages(ctx, ms)
			require.NoError(t, err)
			limit := max(bound, spill.MinRecallBytes)
			if bound == 0 {
				limit = spill.DefaultMaxRecallBytes
			}
			as := recallAll(t, ctx, s, `{"key":"`+p.Key+`"}`, limit)
			assert.Greater(t, len(as), 1, "paged")
			sameContent(t, ms, joined(t, as))
		})
	}
}

// Whatever the messages and the bound, the pages of a segment hold them
// whole, each page within the bound.
func TestRecallPagesProperty(t *testing.T) {
	ctx := t.Context()
	rapid.Check(t, func(rt *rapid.T) {
		var ms []pruneguard.Message
		for range rapid.IntRange(1, 8).Draw(rt, "n") {
			m := genMessage(rt)
			if rapid.Bool().Draw(rt, "large") {
				m.Content = []byte(strings.Repeat(string(m.Content)+"é\"\n", rapid.IntRange(100, 3000).Draw(rt, "repeat")))
			}
			ms = append(ms, m)
		}
		bound := rapid.IntRange(spill.MinRecallBytes, 12000).Draw(rt, "bound")
		s := &spill.Spiller{Store: &spill.Memory{}, MaxRecallBytes: bound}
		p, err := s.SpillMessages(ctx, ms)
		require.NoError(rt, err)
		sameContent(rt, ms, joined(rt, recallAll(rt, ctx, s, `{"key":"`+p.Key+`"}`, bound)))
	})
}

// A 100 KB segment does not come back as one 100 KB answer (19,247 tokens
// under a 10,000-token budget, in a reported session).
func TestRecallDefaultBound(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	var ms []pruneguard.Message
	for i := range 25 {
		ms = append(ms, pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("m", i)), Content: []byte(strings.Repeat("4 KB of tool output. ", 200))})
	}
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	out, err := s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), spill.DefaultMaxRecallBytes)
	assert.Contains(t, out, `"next":{"key":"`+p.Key+`","page":2}`)
}

func TestRecallBadPages(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	p, err := s.SpillMessages(ctx, ticketMessages(`{"ticket":"INC-4711"}`))
	require.NoError(t, err)
	for _, args := range []string{
		`{"key":"` + p.Key + `","page":2}`, `{"key":"` + p.Key + `","page":0}`, `{"key":"` + p.Key + `","page":-1}`,
		`{"key":"` + p.Key + `","page":1.5}`, `{"key":"` + p.Key + `","page":"1"}`,
		`{"key":"` + p.Key + `","query":"INC-4711"}`, `{"page":1}`, `{"query":""}`, `{"query":"  ;; "}`,
		`{"query":"` + strings.Repeat("a ", 200) + `"}`, `{"query":5}`, `{"query":"INC-4711","page":2}`,
	} {
		_, err := s.HandleRecall(ctx, json.RawMessage(args))
		assert.ErrorIs(t, err, spill.ErrBadRecall, args)
	}
	out, err := s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`","page":1}`))
	require.NoError(t, err)
	assert.Contains(t, out, `"pages":1`)
}

// A message whose fields besides content and arguments cannot fit in an
// answer is refused, never sent over the bound.
func TestRecallBoundTooSmallForFields(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}, MaxRecallBytes: 100}
	var steps []pruneguard.StepID
	for i := range 200 {
		steps = append(steps, pruneguard.StepID(fmt.Sprint("step-", i)))
	}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m", Content: []byte("x"), NeededBy: steps}})
	require.NoError(t, err)
	_, err = s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	assert.ErrorIs(t, err, spill.ErrRecallBound)
	var ke *spill.KeyError
	assert.ErrorAs(t, err, &ke)
}

func TestRecallBinaryParts(t *testing.T) {
	ctx := t.Context()
	content := make([]byte, 10000)
	for i := range content {
		content[i] = byte(i * 7)
	}
	s := &spill.Spiller{Store: &spill.Memory{}, MaxRecallBytes: spill.MinRecallBytes}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m", Content: content}})
	require.NoError(t, err)
	as := recallAll(t, ctx, s, `{"key":"`+p.Key+`"}`, spill.MinRecallBytes)
	got := joined(t, as)
	require.Len(t, got, 1)
	assert.Equal(t, base64.StdEncoding.EncodeToString(content), base64.StdEncoding.EncodeToString(got[0].Content))
	assert.Equal(t, len(as), as[0].Messages[0].Parts)
}

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

func TestRecallTool(t *testing.T) {
	tool := spill.RecallTool()
	assert.Equal(t, spill.RecallToolName, tool.Name)
	assert.Equal(t, pruneguard.Reconstructible, tool.OutputClass(), "its answers may be pruned again")
	assert.False(t, tool.Mutating())
	var schema struct {
		Type       string                     `json:"type"`
		Desc       string                     `json:"description"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	require.NoError(t, json.Unmarshal(tool.Schema, &schema))
	assert.Equal(t, "object", schema.Type)
	assert.NotEmpty(t, schema.Desc)
	for _, name := range []string{"key", "query", "page"} {
		assert.Contains(t, schema.Properties, name)
	}
	assert.Empty(t, schema.Required, "a key or a query: providers refuse oneOf at the top of a tool's schema")
	assert.NotContains(t, string(tool.Schema), "oneOf")

	c := pruneguard.NewContext(pruneguard.Config{})
	require.NoError(t, c.RegisterTool(tool), "a Context accepts it")
}

func TestHandleRecall(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}, Name: "scratch"}
	c := nonceContext(t, s)
	p, err := s.Spill(ctx, c, "a1", "r1")
	require.NoError(t, err)

	for _, arg := range []string{p.Key, "scratch:" + p.Key, " " + p.Key + "\n"} {
		args, _ := json.Marshal(map[string]string{"key": arg})
		out, err := s.HandleRecall(ctx, args)
		require.NoError(t, err, arg)
		var a struct {
			Key      string
			Page     int
			Pages    int
			Messages []map[string]any
			Next     any
		}
		require.NoError(t, json.Unmarshal([]byte(out), &a), out)
		assert.Equal(t, p.Key, a.Key)
		assert.Equal(t, 1, a.Page)
		assert.Equal(t, 1, a.Pages)
		assert.Nil(t, a.Next, "one page: no next")
		got := a.Messages
		require.Len(t, got, 2)
		assert.Equal(t, 0.0, got[0]["index"])
		assert.Equal(t, 1.0, got[1]["index"])
		assert.Equal(t, "a1", got[0]["id"])
		assert.Equal(t, "r1", got[1]["id"])
		assert.Equal(t, `{"nonce":"8f3a"}`, got[1]["content"], "content as text a model reads")
		assert.Equal(t, []any{"k1"}, got[1]["answers"])
	}

	fresh := &spill.Spiller{Store: s.Store, Name: "scratch"}
	out, err := fresh.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	require.NoError(t, err, "another process answers too")
	assert.Contains(t, out, "8f3a")
	assert.True(t, fresh.Resolvable(p))

	_, err = s.HandleRecall(ctx, json.RawMessage(`{"key":"seg-nope"}`))
	assert.ErrorIs(t, err, spill.ErrNotFound)
	var ke *spill.KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "seg-nope", ke.Key)
	assert.Contains(t, err.Error(), "seg-nope")

	for _, bad := range []string{`{}`, `[]`, `"k"`, `{"key":5}`, `nope`, ``} {
		_, err := s.HandleRecall(ctx, json.RawMessage(bad))
		assert.ErrorIs(t, err, spill.ErrBadRecall, bad)
	}
	_, err = s.HandleRecall(ctx, json.RawMessage(`{"key":"../x"}`))
	assert.ErrorIs(t, err, spill.ErrBadKey)
	_, err = s.HandleRecall(ctx, json.RawMessage(`{"key":"../x"}`))
	assert.ErrorIs(t, err, spill.ErrBadKey, "a bad key is not remembered as anything else")
}

func TestHandleRecallBinaryContent(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m", Content: []byte{0xff, 0, 1}}})
	require.NoError(t, err)
	out, err := s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"key":"`+p.Key+`","page":1,"pages":1,"messages":[{"index":0,"id":"m","content_base64":"/wAB"}]}`, out)
}

// The model reads a placeholder instead of the spilled messages, calls
// the recall tool with the key it names, and gets the messages back.
func ExampleSpiller_HandleRecall() {
	ctx := context.Background()
	s := &spill.Spiller{Store: &spill.Memory{}, Name: "scratch"}
	p, _ := s.SpillMessages(ctx, []pruneguard.Message{
		{ID: "r7", Role: pruneguard.RoleTool, Content: []byte("ulimit -n: unlimited (cgroup A)"), Facts: pruneguard.TransientState},
	})
	placeholder := spill.PointerText(p)
	fmt.Println(strings.Contains(placeholder, `call recall with key "`+p.Key+`"`))

	answer, err := s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	fmt.Println(strings.ReplaceAll(answer, p.Key, "KEY"), err)
	answer, err = s.HandleRecall(ctx, json.RawMessage(`{"query":"ulimit cgroup"}`))
	fmt.Println(strings.ReplaceAll(answer, p.Key, "KEY"), err)
	// Output:
	// true
	// {"key":"KEY","page":1,"pages":1,"messages":[{"index":0,"id":"r7","role":"tool","content":"ulimit -n: unlimited (cgroup A)","facts":["transient-state"]}]} <nil>
	// {"query":"ulimit cgroup","page":1,"pages":1,"messages":[{"key":"KEY","index":0,"score":8,"id":"r7","role":"tool","content":"ulimit -n: unlimited (cgroup A)","facts":["transient-state"]}]} <nil>
}

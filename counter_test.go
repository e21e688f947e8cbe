package pruneguard_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// bytesCounter counts a token per byte, so that the arithmetic of the
// tests is plain.
type bytesCounter struct{}

func (bytesCounter) Count(b []byte) int { return len(b) }

func TestApproxCounter(t *testing.T) {
	var c pg.Counter = pg.ApproxCounter{}
	for _, tt := range []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"abcdefgh", 2}, {"abcdefghi", 3}} {
		assert.Equal(t, tt.want, c.Count([]byte(tt.in)), "%q", tt.in)
	}
}

func TestNoCounterCountsNothing(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "t", Schema: incidentV1}))
	appendAll(t, c, pg.Message{ID: "m", Content: []byte("some text"), Calls: []pg.Call{call("k", "t", `{"a":1}`)}})
	require.NoError(t, c.Open(pg.Message{ID: "o"}))
	require.NoError(t, c.Write("o", []byte("chunk"), 0))
	assert.Equal(t, 0, c.Tokens())
	st, _ := c.Tool("t")
	assert.Equal(t, 0, st.Tokens)
}

func TestCounterCountsWhatTheRuntimeDoesNot(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: bytesCounter{}})
	appendAll(t, c,
		pg.Message{ID: "m1", Content: []byte("12345678"), Calls: []pg.Call{call("k1", "adhoc", `1234`)}},
		pg.Message{ID: "m2", Tokens: 7, Content: []byte("not counted")},
	)
	m, _ := c.Message("m1")
	assert.Equal(t, 12, m.Tokens, "content and arguments")
	m, _ = c.Message("m2")
	assert.Equal(t, 7, m.Tokens, "a count given is kept")
	assert.Equal(t, 19, c.Tokens(), "a tool known only from calls has no schema")

	// A stream opened without a count: its content, its chunks written
	// with 0 tokens, and the calls given at Close are counted.
	require.NoError(t, c.Open(pg.Message{ID: "s1", Content: []byte("ab")}))
	require.NoError(t, c.Write("s1", []byte("cde"), 0))
	require.NoError(t, c.Write("s1", []byte("fgh"), 10))
	require.NoError(t, c.Close("s1", call("k2", "adhoc", `[1]`)))
	m, _ = c.Message("s1")
	assert.Equal(t, 2+3+10+3, m.Tokens)

	// A stream opened with a count: its chunks written with 0 tokens are
	// counted, the calls at Close are the runtime's to count.
	require.NoError(t, c.Open(pg.Message{ID: "s2", Tokens: 4, Content: []byte("ab")}))
	require.NoError(t, c.Write("s2", []byte("cd"), 0))
	require.NoError(t, c.Close("s2", call("k3", "adhoc", `[1]`)))
	m, _ = c.Message("s2")
	assert.Equal(t, 6, m.Tokens)
	assert.Equal(t, 19+18+6, c.Tokens())
	u, _ := c.UnitOf("s2")
	assert.Equal(t, 6, u.Tokens)
}

func TestSchemasAndTombstonesCount(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`) // 17 bytes
	c := pg.NewContext(pg.Config{Counter: bytesCounter{}})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup", Schema: schema, Annotations: closedWorld}))
	full := len(incidentV1) + len(schema)
	assert.Equal(t, full, c.Tokens())
	st, _ := c.Tool("lookup")
	assert.Equal(t, 17, st.Tokens)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = c.Tokens() }), "constant time, no allocation")

	appendAll(t, c,
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 5, Class: pg.Reconstructible, Calls: []pg.Call{call("k1", "update_incident", `{"severity":"SEV-2"}`)}},
		pg.Message{ID: "r1", Tokens: 5, Answers: []pg.CallID{"k1"}, Class: pg.Reconstructible},
		pg.Message{ID: "a2", Role: pg.RoleAssistant}, // the model read r1; nothing to count
	)
	before := c.Tokens()
	assert.Equal(t, full+10, before)

	// Withdrawn with no arguments: the schema's tokens are freed.
	d := prune(t, c, pg.Plan{DropSchemas: []string{"lookup"}})
	assert.Equal(t, 17, d.Freed)
	assert.Equal(t, before-17, c.Tokens())
	st, _ = c.Tool("lookup")
	assert.Equal(t, 0, st.Tokens)

	// Withdrawn behind a tombstone: the schema's tokens less the line's.
	before = c.Tokens()
	d = prune(t, c, pg.Plan{DropSchemas: []string{"update_incident"}})
	require.Len(t, d.Tombstones, 1)
	line := len(d.Tombstones[0].Text)
	assert.Equal(t, len(incidentV1)-line, d.Freed)
	assert.Equal(t, before-d.Freed, c.Tokens())
	st, _ = c.Tool("update_incident")
	assert.Equal(t, line, st.Tokens, "the tombstone counts while it stands")

	// The tombstone leaves with the last arguments.
	before = c.Tokens()
	d = prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}})
	assert.Equal(t, []string{"update_incident"}, d.Retire)
	assert.Equal(t, 10+line, d.Freed)
	assert.Equal(t, before-d.Freed, c.Tokens())
	assert.Equal(t, 0, c.Tokens())

	// Asked for back, the schema counts again.
	_, err := c.RequestTool("update_incident")
	require.NoError(t, err)
	assert.Equal(t, len(incidentV1), c.Tokens())

	// A compression counts as compressed; a new schema as itself.
	small := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"string"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`)
	d = prune(t, c, pg.Plan{CompressSchemas: map[string]json.RawMessage{"update_incident": small}})
	assert.Empty(t, d.Lossy)
	assert.Equal(t, 0, d.Freed, "the same bytes")
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: schema}))
	assert.Equal(t, 17, c.Tokens(), "a migration drops the compression")
}

func TestRepairingTombstoneCosts(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: bytesCounter{}})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "update_incident", Schema: incidentV1}))
	prune(t, c, pg.Plan{DropSchemas: []string{"update_incident"}})
	appendAll(t, c,
		pg.Message{ID: "a1", Tokens: 1, Calls: []pg.Call{call("k1", "update_incident", `{}`)}},
		pg.Message{ID: "r1", Tokens: 1, Answers: []pg.CallID{"k1"}},
	)
	before := c.Tokens()
	assert.Equal(t, 2, before)
	d := prune(t, c, pg.Plan{})
	require.Len(t, d.Tombstones, 1)
	assert.Equal(t, -len(d.Tombstones[0].Text), d.Freed, "a decision that only adds a line frees a negative number")
	assert.Equal(t, before-d.Freed, c.Tokens())
}

// The budget covers the schemas the Context holds: a check whose
// messages fit but whose schemas do not is over budget and prunes.
func TestGuardCountsSchemas(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","description":"a schema long enough to matter"}`)
	c := pg.NewContext(pg.Config{Counter: bytesCounter{}})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup", Schema: schema, Annotations: closedWorld}))
	appendAll(t, c, pg.Message{ID: "m1", Content: []byte("hello")})
	budget := c.Tokens() - 10
	require.Greater(t, budget, 5, "the messages alone fit")
	drop := pg.PolicyFunc(func([]pg.Entry, int) pg.Plan { return pg.Plan{DropSchemas: []string{"lookup"}} })
	res, err := pg.Guard{Budget: budget, Policy: drop}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pg.Pruned, res.Outcome)
	assert.Equal(t, len(schema)+5, res.Before)
	assert.LessOrEqual(t, res.After, budget)
	st, _ := c.Tool("lookup")
	assert.False(t, st.Resident)
}

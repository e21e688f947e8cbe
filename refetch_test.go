package pruneguard_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// Refetch signals: a result pruned, fetched again, compared.

func sum(b string) pg.ContentHash {
	s := sha256.Sum256([]byte(b))
	return pg.ContentHash(s[:16])
}

// readSession: read_file (reconstructible) called with args, answered
// with content, then the unit evicted.
func readSession(t *testing.T, args, content string) *pg.Context {
	t.Helper()
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: closedWorld}))
	appendAll(t, c,
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Calls: []pg.Call{call("k1", "read_file", args)}},
		pg.Message{ID: "r1", Tokens: 100, Answers: []pg.CallID{"k1"}, Content: []byte(content)},
	)
	modelRead(t, c, "seen")
	d := prune(t, c, pg.Plan{Evict: []pg.MessageID{"r1"}})
	recs := d.Records()
	require.Len(t, recs, 2)
	assert.True(t, recs[0].Hash.IsZero(), "not a result")
	assert.Equal(t, sum(content), recs[1].Hash)
	return c
}

func TestRefetchAlert(t *testing.T) {
	c := readSession(t, `{"path":"main.go","lines":[1,20]}`, "package main")
	appendAll(t, c, pg.Message{ID: "a2", Calls: []pg.Call{call("k2", "read_file", "{ \"lines\": [1, 20],\n \"path\": \"main.go\" }")}})
	assert.Empty(t, c.TakeAlerts(), "raised when the result comes back, not at the call")
	appendAll(t, c, pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}, Content: []byte("package main")})
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	assert.Equal(t, pg.RefetchAlert{Tool: "read_file", Call: "k2", Result: "r2", Pruned: "r1", Class: pg.Reconstructible,
		Match: true, Was: sum("package main"), Now: sum("package main")}, alerts[0])
	assert.Empty(t, c.TakeAlerts(), "drained")
	st, _ := c.Tool("read_file")
	assert.Equal(t, 1, st.Refetches)
	assert.Equal(t, 0, st.IrreducibleRefetches)
	assert.Equal(t, 0, st.MismatchedRefetches)

	// The memory of the pruned result went with the alert: the same call
	// a third time is no refetch.
	appendAll(t, c,
		pg.Message{ID: "a3", Calls: []pg.Call{call("k3", "read_file", `{"path":"main.go","lines":[1,20]}`)}},
		pg.Message{ID: "r3", Answers: []pg.CallID{"k3"}, Content: []byte("package main")},
	)
	assert.Empty(t, c.TakeAlerts())
	st, _ = c.Tool("read_file")
	assert.Equal(t, 1, st.Refetches)
}

func TestRefetchSignature(t *testing.T) {
	const pruned = `{"a":1,"b":[{"y":2,"x":"s p"}],"c":null}`
	tests := []struct {
		name, tool, args string
		alert            bool
	}{
		{"same bytes", "read_file", pruned, true},
		{"keys in another order, nested too", "read_file", `{"c":null,"b":[{"x":"s p","y":2}],"a":1}`, true},
		{"white space", "read_file", "{\n\t\"a\" : 1 , \"b\" : [ { \"y\" : 2 , \"x\" : \"s p\" } ] , \"c\" : null }", true},
		{"a value differs", "read_file", `{"a":2,"b":[{"y":2,"x":"s p"}],"c":null}`, false},
		{"space inside a string differs", "read_file", `{"a":1,"b":[{"y":2,"x":"sp"}],"c":null}`, false},
		{"array order matters", "read_file", `{"a":1,"b":[{"x":"s p"},{"y":2}],"c":null}`, false},
		{"a key fewer", "read_file", `{"a":1,"b":[{"y":2,"x":"s p"}]}`, false},
		{"another tool", "grep", pruned, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := readSession(t, pruned, "x")
			appendAll(t, c,
				pg.Message{ID: "a2", Calls: []pg.Call{call("k2", tt.tool, tt.args)}},
				pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}, Content: []byte("x")},
			)
			assert.Equal(t, tt.alert, len(c.TakeAlerts()) == 1)
		})
	}
	// Arguments that are not JSON match byte for byte.
	c := readSession(t, `path=a`, "x")
	appendAll(t, c,
		pg.Message{ID: "a2", Calls: []pg.Call{call("k2", "read_file", `path= a`)}},
		pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}},
		pg.Message{ID: "a3", Calls: []pg.Call{call("k3", "read_file", `path=a`)}},
		pg.Message{ID: "r3", Answers: []pg.CallID{"k3"}},
	)
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	assert.Equal(t, pg.CallID("k3"), alerts[0].Call)
	assert.False(t, alerts[0].Match)
}

// Seed 002: the measurement taken again under other conditions.
func TestRefetchMismatchOfAnIrreducibleResult(t *testing.T) {
	c := pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(pg.Pointer) bool { return true })})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "run_shell"}))
	appendAll(t, c,
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Calls: []pg.Call{call("k1", "run_shell", `{"cmd":"ulimit -u"}`)}, Pointer: pg.Pointer{Store: "scratch", Key: "a1"}},
		pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Content: []byte("unlimited"), Facts: pg.NegativeResult,
			Pointer: pg.Pointer{Store: "scratch", Key: "r1"}},
	)
	modelRead(t, c, "seen")
	// Spilled behind pointers that resolve, the call and its result may go.
	d := prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}})
	assert.Equal(t, pg.Irreducible, d.Records()[1].Class)
	// The model runs the check again instead of following the pointer.
	appendAll(t, c,
		pg.Message{ID: "a2", Calls: []pg.Call{call("k2", "run_shell", `{"cmd":"ulimit -u"}`)}},
		pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}, Content: []byte("1024")},
	)
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	a := alerts[0]
	assert.Equal(t, pg.Irreducible, a.Class)
	assert.False(t, a.Match)
	assert.Equal(t, sum("unlimited"), a.Was)
	assert.Equal(t, sum("1024"), a.Now)
	st, _ := c.Tool("run_shell")
	assert.Equal(t, 1, st.Refetches)
	assert.Equal(t, 1, st.IrreducibleRefetches)
	assert.Equal(t, 1, st.MismatchedRefetches)
}

func TestNoRefetchWhileAResultIsInThePrompt(t *testing.T) {
	setup := func() *pg.Context {
		c := pg.NewContext(pg.Config{})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: closedWorld}))
		appendAll(t, c,
			pg.Message{ID: "a1", Calls: []pg.Call{call("k1", "read_file", `{"path":"a"}`)}},
			pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Content: []byte("A")},
			pg.Message{ID: "a2", Calls: []pg.Call{call("k2", "read_file", `{"path": "a"}`)}},
			pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}, Content: []byte("A")},
		)
		modelRead(t, c, "seen")
		return c
	}
	c := setup()
	prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}})
	appendAll(t, c,
		pg.Message{ID: "a3", Calls: []pg.Call{call("k3", "read_file", `{"path":"a"}`)}},
		pg.Message{ID: "r3", Answers: []pg.CallID{"k3"}, Content: []byte("A")},
	)
	assert.Empty(t, c.TakeAlerts(), "r2 was still in the prompt")
	st, _ := c.Tool("read_file")
	assert.Equal(t, 0, st.Refetches)

	// A stubbed result is no longer in the prompt.
	c = setup()
	d := prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}, Stub: []pg.MessageID{"r2"}})
	assert.Equal(t, []pg.MessageID{"r2"}, d.Stub)
	appendAll(t, c,
		pg.Message{ID: "a3", Calls: []pg.Call{call("k3", "read_file", `{"path":"a"}`)}},
		pg.Message{ID: "r3", Answers: []pg.CallID{"k3"}, Content: []byte("B")},
	)
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	assert.Equal(t, pg.MessageID("r2"), alerts[0].Pruned, "the latest pruned result of the signature")
	assert.True(t, alerts[0].Stubbed)
	assert.False(t, alerts[0].Match)
}

func TestRefetchOfAStreamedResult(t *testing.T) {
	c := readSession(t, `{"path":"a"}`, "AB")
	appendAll(t, c, pg.Message{ID: "a2", Calls: []pg.Call{call("k2", "read_file", `{"path":"a"}`)}})
	require.NoError(t, c.Open(pg.Message{ID: "r2", Answers: []pg.CallID{"k2"}}))
	require.NoError(t, c.Write("r2", []byte("A"), 1))
	assert.Empty(t, c.TakeAlerts(), "the result is not closed")
	require.NoError(t, c.Write("r2", []byte("B"), 1))
	require.NoError(t, c.Close("r2"))
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	assert.True(t, alerts[0].Match, "compared with the whole streamed content")
}

func TestAlertsAreBounded(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: closedWorld}))
	const n = 1030
	for i := range n {
		appendAll(t, c,
			pg.Message{ID: pg.MessageID(fmt.Sprintf("a%d", i)), Calls: []pg.Call{call(fmt.Sprintf("k%d", i), "read_file", fmt.Sprintf(`{"n":%d}`, i))}},
			pg.Message{ID: pg.MessageID(fmt.Sprintf("r%d", i)), Answers: []pg.CallID{pg.CallID(fmt.Sprintf("k%d", i))}},
			pg.Message{ID: pg.MessageID(fmt.Sprintf("t%d", i)), Role: pg.RoleAssistant}, // the model read r_i
		)
		prune(t, c, pg.Plan{Evict: []pg.MessageID{pg.MessageID(fmt.Sprintf("a%d", i))}})
		appendAll(t, c,
			pg.Message{ID: pg.MessageID(fmt.Sprintf("b%d", i)), Calls: []pg.Call{call(fmt.Sprintf("g%d", i), "read_file", fmt.Sprintf(`{"n":%d}`, i))}},
			pg.Message{ID: pg.MessageID(fmt.Sprintf("s%d", i)), Answers: []pg.CallID{pg.CallID(fmt.Sprintf("g%d", i))}},
		)
	}
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1024)
	assert.Equal(t, pg.CallID("g6"), alerts[0].Call, "the oldest are dropped")
	assert.Equal(t, pg.CallID(fmt.Sprintf("g%d", n-1)), alerts[1023].Call)
	st, _ := c.Tool("read_file")
	assert.Equal(t, n, st.Refetches)
}

func TestContentHash(t *testing.T) {
	h := sum("ulimit")
	assert.Equal(t, hex.EncodeToString(h[:]), h.String())
	assert.Len(t, h.String(), 32)
	assert.False(t, h.IsZero())
	assert.True(t, pg.ContentHash{}.IsZero())
}

// The check is pruned, run again later under another cgroup, and the
// alert says the answer changed.
func ExampleContext_TakeAlerts() {
	c := pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(pg.Pointer) bool { return true })})
	c.RegisterTool(pg.Tool{Name: "run_shell"}) // no annotations: irreducible results
	c.Append(pg.Message{ID: "a1", Calls: []pg.Call{{ID: "k1", Tool: "run_shell", Args: json.RawMessage(`{"cmd":"ulimit -u","host":"web-1"}`)}},
		Pointer: pg.Pointer{Store: "scratch", Key: "a1"}})
	c.Append(pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}, Content: []byte("unlimited"),
		Pointer: pg.Pointer{Store: "scratch", Key: "r1"}}) // spilled, as its call: they may leave
	c.Append(pg.Message{ID: "a2", Role: pg.RoleAssistant, Content: []byte("no limit on processes")})
	d, _ := c.Prune(pg.Plan{Evict: []pg.MessageID{"a1"}})
	c.Apply(d)
	for _, r := range d.Records() {
		fmt.Println("pruned", r.Message, r.Class, r.Hash)
	}

	c.Append(pg.Message{ID: "a7", Calls: []pg.Call{{ID: "k7", Tool: "run_shell", Args: json.RawMessage(`{"host": "web-1", "cmd": "ulimit -u"}`)}}})
	c.Append(pg.Message{ID: "r7", Answers: []pg.CallID{"k7"}, Content: []byte("1024")})
	for _, a := range c.TakeAlerts() {
		fmt.Printf("%s fetched again by %s (pruned %s, %s): match %v, was %s, now %s\n", a.Tool, a.Call, a.Pruned, a.Class, a.Match, a.Was, a.Now)
	}
	// Output:
	// pruned a1 irreducible 00000000000000000000000000000000
	// pruned r1 irreducible 2044fbdb55f9238637ff4adbdd07a491
	// run_shell fetched again by k7 (pruned r1, irreducible): match false, was 2044fbdb55f9238637ff4adbdd07a491, now e39eef82f61b21e2e7f762fcc4307358
}

// A server call's result is inside its caller: pruning the caller prunes
// the result, a later server call of the same signature fetches it again,
// and a caller still in the prompt holds it.
func TestServerCallRefetchAlert(t *testing.T) {
	c := pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(pg.Pointer) bool { return true })})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "web_search", Annotations: pg.Annotations{ReadOnlyHint: pg.Bool(true)}}))
	search := func(msg, id string, content string) pg.Message {
		return pg.Message{ID: pg.MessageID(msg), Role: pg.RoleAssistant, Content: []byte(content), Pointer: pg.Pointer{Store: "s", Key: msg},
			Calls: []pg.Call{{ID: pg.CallID(id), Tool: "web_search", Args: json.RawMessage(`{"query":"ulimit"}`), Server: true}}}
	}
	appendAll(t, c, search("a1", "s1", "first"), search("a2", "s2", "second"))
	d := prune(t, c, pg.Plan{Evict: []pg.MessageID{"a1"}})
	require.Equal(t, []pg.MessageID{"a1"}, d.Evict)
	appendAll(t, c, search("a3", "s3", "third"))
	assert.Empty(t, c.TakeAlerts(), "a2 still holds a result of that signature")

	prune(t, c, pg.Plan{Evict: []pg.MessageID{"a2", "a3"}})
	open := search("a4", "s4", "")
	open.Pointer = pg.Pointer{}
	require.NoError(t, c.Open(open))
	require.NoError(t, c.Write("a4", []byte("third"), 1))
	assert.Empty(t, c.TakeAlerts(), "not until its message closes")
	require.NoError(t, c.Close("a4"))
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	a := alerts[0]
	assert.Equal(t, pg.CallID("s4"), a.Call)
	assert.Equal(t, pg.MessageID("a4"), a.Result)
	assert.Equal(t, pg.MessageID("a3"), a.Pruned)
	assert.Equal(t, pg.Irreducible, a.Class, "an open-world search")
	assert.True(t, a.Match)
	assert.Equal(t, sum("third"), a.Now)
	st, _ := c.Tool("web_search")
	assert.Equal(t, 1, st.Refetches)
	assert.Equal(t, 1, st.IrreducibleRefetches)
}

// A message that answers a call and carries a server call's result
// besides, stubbed rather than evicted, prunes both results all the
// same: a later server call of the same signature raises an alert that
// says the result was stubbed.
func TestServerCallRefetchAfterStub(t *testing.T) {
	c := pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(pg.Pointer) bool { return true })})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "web_search", Annotations: pg.Annotations{ReadOnlyHint: pg.Bool(true)}}))
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: closedWorld}))
	search := pg.Call{ID: "s1", Tool: "web_search", Args: json.RawMessage(`{"query":"ulimit"}`), Server: true}
	appendAll(t, c,
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Calls: []pg.Call{call("k1", "read_file", `{"path":"a"}`)}},
		pg.Message{ID: "r1", Role: pg.RoleTool, Answers: []pg.CallID{"k1"}, Content: []byte("first"), Calls: []pg.Call{search},
			Pointer: pg.Pointer{Store: "s", Key: "r1"}},
	)
	modelRead(t, c, "seen")
	d := prune(t, c, pg.Plan{Stub: []pg.MessageID{"r1"}})
	require.Equal(t, []pg.MessageID{"r1"}, d.Stub)
	again := search
	again.ID = "s2"
	appendAll(t, c, pg.Message{ID: "a2", Role: pg.RoleAssistant, Content: []byte("second"), Pointer: pg.Pointer{Store: "s", Key: "a2"},
		Calls: []pg.Call{again}})
	alerts := c.TakeAlerts()
	require.Len(t, alerts, 1)
	assert.Equal(t, pg.CallID("s2"), alerts[0].Call)
	assert.Equal(t, pg.MessageID("r1"), alerts[0].Pruned)
	assert.True(t, alerts[0].Stubbed)
	assert.False(t, alerts[0].Match)
}

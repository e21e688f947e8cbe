package pruneguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// persistSession is a session of n messages as an agent loop makes them:
// a user turn, the model's call, its result (about 300 bytes), the
// model's answer; a read-only tool with a schema, every tenth result
// stubbed by a prune, the model having read everything.
func persistSession(tb testing.TB, n int) *Context {
	tb.Helper()
	c := NewContext(Config{TextClass: Reconstructible})
	pure := Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}
	if err := c.RegisterTool(Tool{Name: "read_file", Annotations: pure, Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}); err != nil {
		tb.Fatal(err)
	}
	body := strings.Repeat("line of a file the agent read; ", 10)
	var stub []MessageID
	for i := 0; c.Len() < n; i++ {
		s := strconv.Itoa(i)
		ms := []Message{
			{ID: MessageID("u" + s), Role: RoleUser, Tokens: 12, Content: []byte("Look at file " + s + ", please.")},
			{ID: MessageID("a" + s), Role: RoleAssistant, Tokens: 20, Calls: []Call{{ID: CallID("c" + s), Tool: "read_file", Args: json.RawMessage(`{"path":"/src/file` + s + `.go"}`)}}},
			{ID: MessageID("r" + s), Role: RoleTool, Tokens: 80, Answers: []CallID{CallID("c" + s)}, Content: []byte(body + s)},
			{ID: MessageID("b" + s), Role: RoleAssistant, Tokens: 15, Content: []byte("File " + s + " holds nothing of note.")},
		}
		for _, m := range ms {
			if c.Len() >= n {
				break
			}
			if err := c.Append(m); err != nil {
				tb.Fatal(err)
			}
		}
		if i%10 == 0 && c.Len() < n {
			stub = append(stub, MessageID("r"+s))
		}
	}
	if len(stub) > 0 {
		d, err := c.Prune(Plan{Stub: stub})
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Apply(d); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// BenchmarkSaveRestore reports what saving and restoring a session of
// 10,000 and 100,000 messages costs, and the bytes per message of the
// state.
func BenchmarkSaveRestore(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		c := persistSession(b, n)
		var state bytes.Buffer
		if err := c.Save(&state); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("save/%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			var w bytes.Buffer
			for b.Loop() {
				w.Reset()
				if err := c.Save(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.Len())/float64(n), "B/msg")
		})
		b.Run(fmt.Sprintf("restore/%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Restore(bytes.NewReader(state.Bytes()), Config{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

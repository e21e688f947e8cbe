package pruneguard_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// Tool.ScopeArgs: a tool says which argument names the resource a call
// touches, so that a write stales only the reads of what it wrote (the
// same path, a path inside a written directory, a directory holding the
// written path), not every read of its scope. With no argument named, or
// one the call does not give as a string, the call touches all of its
// scope, as before.

var (
	readFile  = pruneguard.Tool{Name: "read_file", Annotations: pure, Scope: "fs", ScopeArgs: []string{"path"}}
	writeFile = pruneguard.Tool{Name: "write_file", Annotations: mutating, Scope: "fs", ScopeArgs: []string{"path"}}
	moveFile  = pruneguard.Tool{Name: "move_file", Annotations: mutating, Scope: "fs", ScopeArgs: []string{"from", "to"}}
	shellTool = pruneguard.Tool{Name: "shell", Annotations: mutating, Scope: "fs"} // names nothing
	anyRead   = pruneguard.Tool{Name: "cat", Annotations: pure, ScopeArgs: []string{"path"}}
)

// pathContext registers the file tools.
func pathContext(t *testing.T) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(pruneguard.Config{})
	for _, tool := range []pruneguard.Tool{readFile, writeFile, moveFile, shellTool, anyRead} {
		require.NoError(t, c.RegisterTool(tool))
	}
	return c
}

// pathCall appends a turn of one call of tool with args (JSON), its result
// (id+".r") and the model's answer, so that the model has read it.
func pathCall(t *testing.T, c *pruneguard.Context, id, tool, args string) {
	t.Helper()
	k := pruneguard.CallID("k" + id)
	mustDo(t,
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(id), Role: pruneguard.RoleAssistant, Tokens: 5,
			Calls: []pruneguard.Call{{ID: k, Tool: tool, Args: json.RawMessage(args)}}}),
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(id + ".r"), Role: pruneguard.RoleTool, Tokens: 50, Answers: []pruneguard.CallID{k}}),
		c.Append(pruneguard.Message{ID: pruneguard.MessageID(id + ".ok"), Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("ok")}),
	)
}

// staleReads lists, of the read results ids, those classed irreducible.
func staleReads(t *testing.T, c *pruneguard.Context, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		if classOf(t, c, pruneguard.MessageID(id+".r")) == pruneguard.Irreducible {
			out = append(out, id)
		}
	}
	return out
}

func TestScopeArgsStaleOnlyWhatWasWritten(t *testing.T) {
	reads := []string{"a", "b", "dir", "dotted", "other", "abs", "all"}
	c := pathContext(t)
	pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "b", "read_file", `{"path":"notes/b.txt"}`)
	pathCall(t, c, "dir", "read_file", `{"path":"notes"}`)
	pathCall(t, c, "dotted", "read_file", `{"path":"./notes/../notes/b.txt"}`)
	pathCall(t, c, "other", "read_file", `{"path":"notesx/a.txt"}`) // a prefix, not at a '/'
	pathCall(t, c, "abs", "read_file", `{"path":"/srv/notes/a.txt"}`)
	pathCall(t, c, "all", "read_file", `{}`) // names no path: reads all of fs
	assert.Empty(t, staleReads(t, c, reads...))

	pathCall(t, c, "w1", "write_file", `{"path":"notes/b.txt","text":"x"}`)
	assert.Equal(t, []string{"b", "dir", "dotted", "abs", "all"}, staleReads(t, c, reads...),
		"the same path, its directory, a path that cleans to it, an absolute path (it may be any), a read of everything")
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a", "other"}})
	require.NoError(t, err, "a write to notes/b.txt leaves the read of notes/a.txt reconstructible")
	assert.Equal(t, []pruneguard.MessageID{"a", "a.r", "other", "other.r"}, d.Evict)

	// A write to the directory stales what is inside it.
	c = pathContext(t)
	pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "other", "read_file", `{"path":"src/main.go"}`)
	pathCall(t, c, "w", "write_file", `{"path":"notes"}`)
	assert.Equal(t, []string{"a"}, staleReads(t, c, "a", "other"))

	// A move names two paths: both are written.
	c = pathContext(t)
	pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "b", "read_file", `{"path":"notes/b.txt"}`)
	pathCall(t, c, "x", "read_file", `{"path":"notes/x.txt"}`)
	pathCall(t, c, "m", "move_file", `{"from":"notes/a.txt","to":"notes/b.txt"}`)
	assert.Equal(t, []string{"a", "b"}, staleReads(t, c, "a", "b", "x"))
}

// What names no resource touches all of its scope, as before: a tool
// without ScopeArgs, a call whose argument is missing, not a string,
// given twice, or whose arguments are not a JSON object.
func TestScopeArgsDefaultStaysConservative(t *testing.T) {
	for _, w := range []struct{ tool, args string }{
		{"shell", `{"cmd":"rm notes/b.txt"}`},
		{"write_file", `{"text":"x"}`},
		{"write_file", `{"path":7}`},
		{"write_file", `{"path":"notes/b.txt","path":"notes/zzz"}`},
		{"write_file", `{"path":"notes/b.txt"`},
		{"write_file", `{"path":"notes/b.txt" "x":1}`},
		{"write_file", `["notes/b.txt"]`},
		{"move_file", `{"from":"notes/b.txt"}`},
	} {
		t.Run(w.tool+" "+w.args, func(t *testing.T) {
			c := pathContext(t)
			pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
			pathCall(t, c, "w", w.tool, w.args)
			assert.Equal(t, []string{"a"}, staleReads(t, c, "a"))
		})
	}
	// A write in another scope touches nothing here; one in the empty
	// scope naming a path touches that path in every scope.
	c := pathContext(t)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "put_row", Annotations: mutating, Scope: "db", ScopeArgs: []string{"path"}}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "touch", Annotations: mutating, ScopeArgs: []string{"path"}}))
	pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "b", "read_file", `{"path":"notes/b.txt"}`)
	pathCall(t, c, "c", "cat", `{"path":"notes/a.txt"}`) // the empty scope: reads of every scope's paths
	pathCall(t, c, "w", "put_row", `{"path":"notes/a.txt"}`)
	assert.Equal(t, []string{"c"}, staleReads(t, c, "a", "b", "c"), "db's notes/a.txt is not fs's, but cat reads any scope")
	pathCall(t, c, "t", "touch", `{"path":"notes/b.txt"}`)
	assert.Equal(t, []string{"b", "c"}, staleReads(t, c, "a", "b", "c"))
}

// A write beside a read in one parallel batch stales it when their paths
// overlap, as any write does today, and only then.
func TestScopeArgsInOneBatch(t *testing.T) {
	c := pathContext(t)
	mustDo(t,
		c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{
			{ID: "k1", Tool: "read_file", Args: json.RawMessage(`{"path":"notes/a.txt"}`)},
			{ID: "k2", Tool: "read_file", Args: json.RawMessage(`{"path":"notes/b.txt"}`)},
			{ID: "k3", Tool: "write_file", Args: json.RawMessage(`{"path":"notes/b.txt"}`)},
		}}),
		c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 50, Answers: []pruneguard.CallID{"k1"}}),
		c.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 50, Answers: []pruneguard.CallID{"k2"}}),
	)
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "r1"))
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "r2"))
}

// The precision outlives a restart, a compaction of the Context's
// records, and a tool registered again as it was; a registration that
// changes how calls touch resources judges again, conservatively.
func TestScopeArgsKeptAcrossSaveCompactionAndRegistration(t *testing.T) {
	c := pathContext(t)
	pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "b", "read_file", `{"path":"notes/b.txt"}`)
	pathCall(t, c, "w", "write_file", `{"path":"notes/b.txt"}`)
	for i := range 40 { // units that leave, so that the records are compacted
		pathCall(t, c, fmt.Sprint("f", i), "read_file", fmt.Sprintf(`{"path":"tmp/%d"}`, i))
	}
	for i := range 40 {
		id := pruneguard.MessageID(fmt.Sprint("f", i))
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{id}})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
	}
	assert.Equal(t, []string{"b"}, staleReads(t, c, "a", "b"), "after compaction")

	var buf bytes.Buffer
	require.NoError(t, c.Save(&buf))
	r, err := pruneguard.Restore(&buf, pruneguard.Config{})
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, staleReads(t, r, "a", "b"), "after a restart")
	pathCall(t, r, "a2", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, r, "w2", "write_file", `{"path":"notes/a.txt"}`)
	assert.Equal(t, []string{"a", "b", "a2"}, staleReads(t, r, "a", "b", "a2"), "the restored Context goes on")

	require.NoError(t, c.RegisterTool(writeFile))
	assert.Equal(t, []string{"b"}, staleReads(t, c, "a", "b"), "the same registration changes nothing")
	unscoped := writeFile
	unscoped.ScopeArgs = nil
	require.NoError(t, c.RegisterTool(unscoped))
	assert.Equal(t, []string{"a", "b"}, staleReads(t, c, "a", "b"), "its calls now touch all of fs")
}

// A write that left the prompt still stales what it wrote after a
// restart, though a later write of another path is held: the saved state
// keeps the marks of every path written, not only of the calls held.
func TestScopeArgsWriteEvictedStaysAfterRestore(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Resolver: resolveAll})
	for _, tool := range []pruneguard.Tool{readFile, writeFile} {
		require.NoError(t, c.RegisterTool(tool))
	}
	pathCall(t, c, "a", "read_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "b", "read_file", `{"path":"notes/b.txt"}`)
	pathCall(t, c, "c", "read_file", `{"path":"notes/c.txt"}`)
	pathCall(t, c, "wa", "write_file", `{"path":"notes/a.txt"}`)
	pathCall(t, c, "wb", "write_file", `{"path":"notes/b.txt"}`)
	// The write is irreducible: it leaves behind a pointer to a store.
	require.NoError(t, c.Spill("wa", pruneguard.Pointer{Store: "s", Key: "wa"}))
	require.NoError(t, c.Spill("wa.r", pruneguard.Pointer{Store: "s", Key: "wa.r"}))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"wa"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.Equal(t, []string{"a", "b"}, staleReads(t, c, "a", "b", "c"))

	var buf bytes.Buffer
	require.NoError(t, c.Save(&buf))
	r, err := pruneguard.Restore(&buf, pruneguard.Config{Resolver: resolveAll})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, staleReads(t, r, "a", "b", "c"), "the evicted write of a still stales a; c stays fresh")
	assert.Equal(t, saved(t, c), saved(t, r))
}

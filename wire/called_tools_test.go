package wire_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// AppendCalledTools gives, for every message of a body, the tools of the
// client calls the Context holds for it (not those the provider ran), in order, after what dst held; and dst
// as it is for an index out of range. ServerTools lists the tools the
// provider runs that the parts of the body's messages name, sorted, once
// each. Checked on every recorded transcript a Guarded binds, and on a
// body with server tool use.
func TestAppendCalledTools(t *testing.T) {
	var bodies [][]byte
	err := filepath.WalkDir("../testdata/transcripts", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		bodies = append(bodies, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	bodies = append(bodies, []byte(`{"system":"s","tools":[{"type":"web_search_20250305","name":"web_search"},{"name":"read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"news?"},
		{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"news"}},
			{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"tool_use","id":"r1","name":"read","input":{}},{"type":"tool_use","id":"r2","name":"read","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"r1","content":"a"},{"type":"tool_result","tool_use_id":"r2","content":"b"}]}]}`))
	bound := 0
	for _, body := range bodies {
		g, err := wire.Bind(body, "", wire.Options{})
		if err != nil {
			continue
		}
		bound++
		for i := -1; i <= g.Len(); i++ {
			dst := []string{"before"}
			got := g.AppendCalledTools(dst, i)
			want := []string{"before"}
			if m, ok := g.Context().Message(wire.ID(i)); ok && i >= 0 {
				for _, c := range m.Calls {
					if !c.Server {
						want = append(want, c.Tool)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("message %d of a %s body: %v, the Context's calls %v", i, g.Dialect(), got, want)
			}
		}
		b, err := wire.Read(body, g.Dialect())
		if err != nil {
			t.Fatal(err)
		}
		var server []string
		for _, m := range b.Messages {
			for _, p := range m.Parts {
				if (p.Kind == wire.PartServerCall || p.Kind == wire.PartServerResult) && p.Name != "" && !slices.Contains(server, p.Name) {
					server = append(server, p.Name)
				}
			}
		}
		slices.Sort(server)
		if got := g.ServerTools(); !slices.Equal(got, server) {
			t.Errorf("a %s body: server tools %v, its parts name %v", g.Dialect(), got, server)
		}
	}
	if bound < 8 {
		t.Fatalf("only %d bodies bound", bound)
	}
	// The last body: two calls of read, web_search run by the provider.
	g, err := wire.Bind(bodies[len(bodies)-1], wire.Anthropic, wire.Options{Config: pruneguard.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.AppendCalledTools(nil, 1); !slices.Equal(got, []string{"read", "read"}) {
		t.Errorf("calls of the assistant turn: %v", got)
	}
	if got := g.ServerTools(); !slices.Equal(got, []string{"web_search"}) {
		t.Errorf("server tools %v", got)
	}
}

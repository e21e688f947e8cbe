// Command genchat writes a synthetic OpenAI Chat Completions request body
// of a long coding-agent session, for measuring pruneguard prune against
// other trimmers on the same file.
//
// Usage:
//
//	go run ./bench/cmd/genchat -messages 20000 > chat-20k.json
//
// The body is a system prompt, a task, then rounds of an assistant message
// (a sentence of prose on some rounds) calling one to three tools in
// parallel, and their results: file contents, grep matches and test logs
// of 200 to 1,900 bytes with line breaks, tabs and quotes, so that the
// strings carry escapes as real ones do. Every eighth round ends with an
// assistant reply and a user follow-up. Four tools are declared, without
// annotations. The output is the same for the same flags.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	n := flag.Int("messages", 20000, "number of messages (at least 2)")
	seed := flag.Uint64("seed", 1, "seed of the generator")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	if err := write(w, *n, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "genchat:", err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "genchat:", err)
		os.Exit(1)
	}
}

// tools are the declared tools, with the shape of their results.
var tools = []struct {
	name, desc, params string
}{
	{"read_file", "Read a file of the workspace and return its numbered lines.",
		`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]}`},
	{"grep", "Search the workspace for a regular expression and return the matching lines.",
		`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`},
	{"run_tests", "Run the test suite of a package and return its log.",
		`{"type":"object","properties":{"package":{"type":"string"},"run":{"type":"string"}},"required":["package"]}`},
	{"write_file", "Write a file of the workspace.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`},
}

var words = strings.Fields(`the a of to in for func return if err nil var type struct
	package import range len append make map string int byte slice index value key
	context message call result tool unit guard budget token prune evict stub`)

// gen is the generator's state.
type gen struct {
	r    *rand.Rand
	w    io.Writer
	call int
	err  error
}

func (g *gen) printf(format string, args ...any) {
	if g.err == nil {
		_, g.err = fmt.Fprintf(g.w, format, args...)
	}
}

// str writes s as a JSON string.
func (g *gen) str(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (g *gen) sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[g.r.IntN(len(words))]
	}
	return strings.Join(ws, " ")
}

// output is a tool result of about size bytes.
func (g *gen) output(tool string, size int) string {
	var sb strings.Builder
	for line := 1; sb.Len() < size; line++ {
		switch tool {
		case "read_file":
			fmt.Fprintf(&sb, "%4d\t%s(%q)\n", line, g.sentence(4+g.r.IntN(6)), g.sentence(2))
		case "grep":
			fmt.Fprintf(&sb, "pkg/f%d.go:%d:\t%s\n", g.r.IntN(90), g.r.IntN(900), g.sentence(5+g.r.IntN(5)))
		default:
			fmt.Fprintf(&sb, "=== RUN   Test%s%d\n--- PASS: (0.%02ds) \"%s\"\n", strings.ToUpper(words[g.r.IntN(len(words))][:1]), line, g.r.IntN(100), g.sentence(3))
		}
	}
	return sb.String()
}

func write(w io.Writer, n int, seed uint64) error {
	if n < 2 {
		return fmt.Errorf("-messages %d: at least 2", n)
	}
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), w: w}
	g.printf(`{"model":"gpt-4o","temperature":0,"tools":[`)
	for i, t := range tools {
		if i > 0 {
			g.printf(",")
		}
		g.printf(`{"type":"function","function":{"name":%q,"description":%q,"parameters":%s}}`, t.name, t.desc, t.params)
	}
	g.printf(`],"messages":[{"role":"system","content":%s}`, g.str("You are a coding agent. Work in the repository, call tools to read and change it, and run the tests before you answer."))
	g.printf(`,{"role":"user","content":%s}`, g.str("Fix the failing test in pkg/guard and explain the cause: "+g.sentence(30)))
	left := n - 2
	for round := 0; left > 0; round++ {
		calls := 1 + g.r.IntN(3)
		if calls+1 > left {
			calls = left - 1
		}
		if calls < 1 {
			// One message left: a closing reply.
			g.printf(`,{"role":"assistant","content":%s}`, g.str(g.sentence(25)))
			left--
			break
		}
		ids := make([]string, calls)
		names := make([]string, calls)
		g.printf(`,{"role":"assistant","content":`)
		if g.r.IntN(3) == 0 {
			g.printf("%s", g.str("Next I "+g.sentence(12)+"."))
		} else {
			g.printf("null")
		}
		g.printf(`,"tool_calls":[`)
		for k := range calls {
			g.call++
			ids[k] = fmt.Sprintf("call_%06d", g.call)
			names[k] = tools[g.r.IntN(len(tools))].name
			args := fmt.Sprintf(`{"path":"pkg/f%d.go","pattern":"%s"}`, g.r.IntN(90), words[g.r.IntN(len(words))])
			if k > 0 {
				g.printf(",")
			}
			g.printf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, ids[k], names[k], g.str(args))
		}
		g.printf(`]}`)
		left -= 1 + calls
		for k := range calls {
			size := 200 + g.r.IntN(1700)
			if names[k] == "write_file" {
				size = 20
			}
			g.printf(`,{"role":"tool","tool_call_id":%q,"content":%s}`, ids[k], g.str(g.output(names[k], size)))
		}
		if round%8 == 7 && left >= 2 {
			g.printf(`,{"role":"assistant","content":%s}`, g.str(g.sentence(40)))
			g.printf(`,{"role":"user","content":%s}`, g.str("Good. Now "+g.sentence(15)))
			left -= 2
		}
	}
	g.printf("]}\n")
	return g.err
}

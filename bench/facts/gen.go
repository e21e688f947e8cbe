package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/pruneguard/pruneguard/wire"
)

// generated returns n sessions with planted facts, the same every time:
// session i has 24+8i turns.
func generated(n int) []*session {
	out := make([]*session, 0, n)
	for i := range n {
		turns := 24 + 8*i
		body := genSession(uint64(i+1), turns)
		s, err := newSession(fmt.Sprintf("generated/%02d-%dturns", i, turns), body, wire.OpenAIChat)
		if err != nil {
			panic(err) // the generator writes bodies Read accepts
		}
		out = append(out, s)
	}
	return out
}

// planted are the facts of one generated session: the first turns hold
// them, in tool results, the user's request and the model's notes, and
// later assistant turns use them verbatim.
type planted struct {
	ticket, env, window, pod, nonce, idem string
	port, exit                            int
	errLine, negative, kernel             string
}

func plant(r *rand.Rand) planted {
	p := planted{
		ticket: fmt.Sprintf("INC-%04d", 1000+r.IntN(9000)),
		env:    fmt.Sprintf("%s-%s-%d", pick(r, "staging", "canary", "preprod"), pick(r, "eu", "us", "ap"), 1+r.IntN(4)),
		window: fmt.Sprintf("%02d:%02d", 14+r.IntN(6), 5*r.IntN(12)),
		pod:    "checkout-" + hexString(r, 5) + "-" + hexString(r, 4),
		nonce:  hexString(r, 16),
		idem:   "idem-" + hexString(r, 12),
		port:   5400 + r.IntN(100),
		exit:   pick(r, 137, 143, 139),
	}
	p.errLine = fmt.Sprintf("2026-11-%02dT%02d:%02d:%02dZ ERROR %s: pq: could not connect to server: connection refused (port %d)",
		1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), p.pod, p.port)
	p.negative = fmt.Sprintf("Checked /etc/security/limits.conf on %s: nofile is unlimited, so the crash is not from the file limit", p.pod)
	p.kernel = `grep: 0 results for "OOMKilled" in /var/log/kern.log`
	return p
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func hexString(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	// A hex id holds a digit and a letter.
	b[0], b[n-1] = digits[r.IntN(10)], digits[10+r.IntN(6)]
	return string(b)
}

// chat builds an OpenAI Chat history.
type chat struct {
	msgs  []map[string]any
	calls int
}

func (c *chat) add(m map[string]any) { c.msgs = append(c.msgs, m) }

func (c *chat) user(text string) { c.add(map[string]any{"role": "user", "content": text}) }

// call adds an assistant message (text may be empty) calling tool with
// args, and the tool's result.
func (c *chat) call(text, tool string, args any, result string) {
	c.calls++
	id := fmt.Sprintf("call_%04d", c.calls)
	a, _ := json.Marshal(args)
	m := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": id, "type": "function", "function": map[string]any{"name": tool, "arguments": string(a)},
	}}}
	if text != "" {
		m["content"] = text
	}
	c.add(m)
	c.add(map[string]any{"role": "tool", "tool_call_id": id, "content": result})
}

// genSession writes a session of the given number of turns (at least
// 16): the user's request with a constraint, four turns that find the
// facts, filler turns reading source files, and two turns, at 60% and
// 90% of the session, that use the facts.
func genSession(seed uint64, turns int) []byte {
	r := rand.New(rand.NewPCG(seed, seed*7919))
	p := plant(r)
	var c chat
	c.add(map[string]any{"role": "system", "content": "You are an on-call engineer's assistant. Use the tools to investigate and fix incidents."})
	c.user(fmt.Sprintf("The checkout service keeps crashing, see ticket %s. Only deploy to %s, and the change window closes at %s UTC.", p.ticket, p.env, p.window))
	c.call("Let me look at the logs first.", "search_logs", map[string]any{"service": "checkout", "level": "error"},
		logLines(r, 12)+p.errLine+"\n"+logLines(r, 8))
	c.call("", "run_command", map[string]any{"cmd": "kubectl describe pod " + p.pod},
		fmt.Sprintf("Name: %s\nNamespace: shop\nLast State: Terminated\n  Reason: Error\n  Exit Code: %d\nRestart Count: %d\n", p.pod, p.exit, 3+r.IntN(20)))
	c.call(p.negative+". Next, the kernel log.", "run_command", map[string]any{"cmd": "grep OOMKilled /var/log/kern.log"}, p.kernel)
	pay, _ := json.Marshal(map[string]any{"status": "accepted", "idempotency_key": p.idem, "nonce": p.nonce, "amount": "$" + fmt.Sprint(100+r.IntN(900)) + ".00"})
	c.call("Retrying the stuck refund once.", "call_api", map[string]any{"endpoint": "/v1/refunds", "method": "POST"}, string(pay))
	early, late := turns*6/10, turns*9/10
	for t := 5; t < turns; t++ {
		switch t {
		case early:
			c.call(fmt.Sprintf("Recap for %s: the first error was %s. The pod died with exit %d. %s.", p.ticket, p.errLine, p.exit, p.negative),
				"update_ticket", map[string]any{"ticket": p.ticket, "note": "root cause narrowed to the database connection"}, "updated")
		case late:
			c.call(fmt.Sprintf("Deploying the fix to %s before %s UTC. Earlier, %s, so the kernel did not kill it.", p.env, p.window, p.kernel),
				"deploy", map[string]any{"env": p.env, "ticket": p.ticket, "idempotency_key": p.idem, "nonce": p.nonce}, "deployed")
		case turns - 1:
			c.add(map[string]any{"role": "assistant", "content": fmt.Sprintf("Done: %s is fixed on %s.", p.ticket, p.env)})
		default:
			if t%7 == 0 {
				c.user("Keep going.")
			}
			file := fmt.Sprintf("src/checkout/%s.go", pick(r, "handler", "store", "retry", "pool", "config", "server"))
			c.call("Reading "+file+".", "read_file", map[string]any{"path": file}, sourceLines(r, 30+r.IntN(60)))
		}
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": c.msgs, "tools": tools()})
	return body
}

func tools() []any {
	var out []any
	for _, name := range []string{"search_logs", "run_command", "call_api", "read_file", "update_ticket", "deploy"} {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "The " + strings.ReplaceAll(name, "_", " ") + " tool.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}},
		}})
	}
	return out
}

// logLines returns n routine log lines.
func logLines(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "2026-11-%02dT%02d:%02d:%02dZ INFO request %s served in %dms\n",
			1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), hexString(r, 8), 5+r.IntN(400))
	}
	return b.String()
}

// sourceLines returns n lines of Go-like source.
func sourceLines(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		switch r.IntN(5) {
		case 0:
			fmt.Fprintf(&b, "%4d\tfunc step%d(ctx context.Context, n int) error {\n", i+1, r.IntN(100))
		case 1:
			fmt.Fprintf(&b, "%4d\t\tif n > %d { return errTooMany }\n", i+1, r.IntN(1000))
		case 2:
			fmt.Fprintf(&b, "%4d\t\tlog.Printf(\"retry %%d of %%d\", n, max)\n", i+1)
		case 3:
			fmt.Fprintf(&b, "%4d\t\treturn pool.Get(ctx)\n", i+1)
		default:
			fmt.Fprintf(&b, "%4d\t}\n", i+1)
		}
	}
	return b.String()
}

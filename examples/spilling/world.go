package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// world is what the tools act on: a small repository, flaky tests and a
// ticket tracker. It is deterministic: the same calls give the same
// answers.
type world struct {
	paths    []string
	files    map[string]string
	testRuns int
	tickets  []string            // ids, in the order created
	comments map[string][]string // by ticket
}

func newWorld() *world {
	w := &world{files: map[string]string{}, comments: map[string][]string{}}
	names := []string{"settle", "batch", "ledger", "journal", "clock", "retry", "store", "audit", "export", "nightly"}
	for i, n := range names {
		path := "ledger/" + n + ".go"
		w.paths = append(w.paths, path)
		var b strings.Builder
		fmt.Fprintf(&b, "package ledger\n\n// %s.go: part of the nightly settlement job.\n", n)
		for j := range 24 + (i*13)%40 {
			fmt.Fprintf(&b, "func %s%d(ctx context.Context, b *Batch) error { return b.step(ctx, %q, %d) }\n", n, j, n, (i+1)*(j+3)%97)
		}
		w.files[path] = b.String()
	}
	return w
}

// run answers a tool call: the content of its result, and whether it is
// an error.
func (w *world) run(tool string, raw json.RawMessage) ([]byte, bool) {
	var a map[string]string
	if err := json.Unmarshal(raw, &a); err != nil {
		return []byte("bad arguments: " + err.Error()), true
	}
	switch tool {
	case "read_file":
		f, ok := w.files[a["path"]]
		if !ok {
			return []byte("no such file: " + a["path"]), true
		}
		return []byte(f), false
	case "grep":
		var b strings.Builder
		for _, p := range w.paths {
			for i, l := range strings.Split(w.files[p], "\n") {
				if strings.Contains(l, a["pattern"]) {
					fmt.Fprintf(&b, "%s:%d: %s\n", p, i+1, l)
				}
			}
		}
		if b.Len() == 0 {
			return []byte("no matches"), false
		}
		return []byte(b.String()), false
	case "run_tests":
		w.testRuns++
		var b strings.Builder
		fixed := strings.Contains(w.files["ledger/settle.go"], "deadline")
		for i, n := range []string{"Settle", "SettleBatch", "Journal", "Clock", "Retry", "Store", "Audit", "Export"} {
			ms := 40 + (w.testRuns*31+i*17)%900
			fmt.Fprintf(&b, "=== RUN   Test%s\n    %s_test.go:%d: seed %d, %d batches, journal lag %dms\n", n, strings.ToLower(n), 20+i, w.testRuns*7919%10007, 8+i, ms/7)
			if n == "SettleBatch" && !fixed && w.testRuns%3 != 0 {
				fmt.Fprintf(&b, "--- FAIL: Test%s (%d.%03ds)\n    settle_test.go:88: batch 17 timed out after 30s (run %d)\n", n, ms/1000, ms%1000, w.testRuns)
				continue
			}
			fmt.Fprintf(&b, "--- PASS: Test%s (%d.%03ds)\n", n, ms/1000, ms%1000)
		}
		return []byte(b.String()), false
	case "create_ticket":
		id := fmt.Sprintf("LEDG-%d", 4817+len(w.tickets))
		w.tickets = append(w.tickets, id)
		return []byte(fmt.Sprintf(`{"ticket":%q,"status":"open","title":%q}`, id, a["title"])), false
	case "comment_ticket":
		if _, ok := w.comments[a["ticket"]]; !ok && !w.has(a["ticket"]) {
			return []byte("no such ticket: " + a["ticket"]), true
		}
		w.comments[a["ticket"]] = append(w.comments[a["ticket"]], a["text"])
		return []byte(fmt.Sprintf(`{"ticket":%q,"comments":%d}`, a["ticket"], len(w.comments[a["ticket"]]))), false
	case "apply_patch":
		if _, ok := w.files[a["path"]]; !ok {
			return []byte("no such file: " + a["path"]), true
		}
		w.files[a["path"]] += a["diff"] + "\n"
		return []byte("patched " + a["path"]), false
	}
	return []byte("unknown tool " + tool), true
}

func (w *world) has(ticket string) bool {
	for _, t := range w.tickets {
		if t == ticket {
			return true
		}
	}
	return false
}

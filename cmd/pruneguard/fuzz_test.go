package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// FuzzRun runs check and prune on arbitrary bytes: the command never
// panics; it calls bad input exactly what the wire reader refuses (exit 2,
// nothing on stdout, one error line), and so a prune with a budget of 0,
// a configuration error; otherwise check exits 0 or 1 and
// prune exits 0 within the budget or 3 over it, with a body that breaks
// no rule its input kept and is no larger. Plain `go test` runs the seeds.
func FuzzRun(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":99,"system":"s","messages":[{"role":"user","content":"hi"}]}`), uint16(10), uint8(0))
	f.Add([]byte("{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}"), uint16(10), uint8(1))
	f.Add([]byte(`{"max_tokens":1e400,"messages":[{"role":"user","content":"x"}]}`), uint16(10), uint8(2))
	f.Add([]byte("\xef\xbb\xbf{}"), uint16(10), uint8(3))
	f.Add([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"a long result of the tool call"},{"role":"assistant","content":null,"function_call":{"name":"g","arguments":"{}"}},{"role":"function","name":"g","content":"another long result"},{"role":"user","content":"more"}],"functions":[{"name":"g"}],"tools":[{"type":"function","function":{"name":"f"}}]}`), uint16(20), uint8(5))
	f.Add([]byte(`{"input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"long output text here"}]},{"role":"user","content":"more"}]}`), uint16(20), uint8(6))
	policies := []string{"oldest", "largest", "keep-last-tools"}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, k uint8) {
		_, rerr := wire.Read(data, "")
		code, out, errs := runIn(data, "check", "-")
		if (code == 2) != (rerr != nil) || code > 2 {
			t.Fatalf("check exit %d, reader error %v, stderr %q", code, rerr, errs)
		}
		if code == 2 && (out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "pruneguard: ")) {
			t.Fatalf("check: bad input reported as %q %q", out, errs)
		}
		args := []string{"prune", "--budget", strconv.Itoa(int(budget)), "--policy", policies[int(k)%3]}
		if k&4 != 0 {
			args = append(args, "--unannotated", "regenerable")
		}
		code, out, errs = runIn(data, append(args, "-")...)
		if rerr != nil || budget == 0 {
			if code != 2 || out != "" || strings.Count(errs, "\n") != 1 {
				t.Fatalf("prune of bad input or a zero budget = %d %q %q", code, out, errs)
			}
			return
		}
		if code != 0 && code != 3 {
			t.Fatalf("prune exit %d: %q", code, errs)
		}
		var rep Report
		if err := json.Unmarshal([]byte(errs), &rep); err != nil || strings.Count(errs, "\n") != 1 {
			t.Fatalf("report %q: %v", errs, err)
		}
		if (code == 0) != (rep.OutputTokens <= int(budget)) {
			t.Fatalf("exit %d with %d tokens for a budget of %d", code, rep.OutputTokens, budget)
		}
		in, _ := wire.Read(data, rep.Dialect)
		pruned, err := wire.Read([]byte(out), rep.Dialect)
		if err != nil {
			t.Fatalf("output does not read as %s: %v", rep.Dialect, err)
		}
		if nv := wire.NewViolations(in.Validate(), pruned.Validate()); len(nv) > 0 {
			t.Fatalf("output breaks %v", nv)
		}
		if rep.OutputTokens > rep.InputTokens {
			t.Fatalf("output grew from %d to %d tokens", rep.InputTokens, rep.OutputTokens)
		}
	})
}

// runIn runs the command in process with data on stdin.
func runIn(data []byte, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(data), &out, &errb)
	return code, out.String(), errb.String()
}

package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// bin is the pruneguard command, built once for these tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pruneguard-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "pruneguard")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pg runs the built command with stdin and returns its exit code, stdout
// and stderr.
func pg(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

// badInput requires exit 2, nothing on stdout and exactly one line on
// stderr, starting with "pruneguard: " and holding want.
func badInput(t *testing.T, stdin, want string, args ...string) {
	t.Helper()
	code, out, errs := pg(t, stdin, args...)
	if code != 2 || out != "" {
		t.Errorf("%v: exit %d, stdout %q", args, code, out)
	}
	if !strings.HasPrefix(errs, "pruneguard: ") || strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") {
		t.Errorf("%v: stderr is not one error line: %q", args, errs)
	}
	if !strings.Contains(errs, want) {
		t.Errorf("%v: stderr %q lacks %q", args, errs, want)
	}
}

const okBody = `{"model":"m","max_tokens":99,"system":"be brief","messages":[{"role":"user","content":"hello there"}]}`

// Bytes that are not UTF-8 are bad input for check and prune (exit 2, one
// line naming the place), as they are for the reader.
func TestCLIInvalidUTF8(t *testing.T) {
	body := "{\"messages\":[{\"role\":\"user\",\n\"content\":\"caf\xe9\"}]}"
	badInput(t, body, "<stdin>:2:15: ", "check", "-")
	badInput(t, body, "UTF-8", "check", "--dialect", "openai-chat", "-")
	badInput(t, body, "UTF-8", "prune", "--budget", "1", "-")
	badInput(t, body, "UTF-8", "extract", "-")
	badInput(t, "\xef\xbb\xbf"+okBody, "byte order mark", "check", "-")
	badInput(t, "\xef\xbb\xbf"+okBody, "byte order mark", "prune", "--budget", "1", "-")
}

// Every number the JSON grammar allows reads: the command agrees with the
// reader, and keeps the number as written.
func TestCLINumbers(t *testing.T) {
	for _, n := range []string{"1e400", "-1e400", "1E-400", "-0", "0.0e0", "123456789012345678901234567890", "-9223372036854775809"} {
		body := `{"model":"m","max_tokens":` + n + `,"system":"s","messages":[{"role":"user","content":"hi"}]}`
		if _, err := wire.Read([]byte(body), ""); err != nil {
			t.Fatalf("%s: reader: %v", n, err)
		}
		if code, out, errs := pg(t, body, "check", "-"); code != 0 || !strings.Contains(out, `"violations":[]`) {
			t.Errorf("check %s = %d %q %q", n, code, out, errs)
		}
		code, out, errs := pg(t, body, "prune", "--budget", "100000", "-")
		if code != 0 || strings.TrimSpace(out) != body {
			t.Errorf("prune %s = %d %q %q", n, code, out, errs)
		}
	}
	// A manifest with such numbers reads as the reader reads it.
	dir := t.TempDir()
	man := filepath.Join(dir, "m.json")
	os.WriteFile(man, []byte(`{"tools":[{"name":"f","inputSchema":{"type":"object","maximum":1e400}}]}`), 0o644)
	if code, _, errs := pg(t, okBody, "prune", "--budget", "100000", "--tools-manifest", man, "-"); code != 0 {
		t.Errorf("manifest with 1e400 = %d %q", code, errs)
	}
}

// -h and --help print the usage on stdout and exit 0, for the command and
// each subcommand.
func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"check", "-h"}, {"check", "--help"}, {"prune", "-h"}, {"prune", "--budget", "5", "--help"}, {"extract", "-h"}} {
		code, out, errs := pg(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage:") || errs != "" {
			t.Errorf("%v = %d %q %q", args, code, out, errs)
		}
	}
}

// Every flag refuses a bad value with exit 2 and one error line, before
// reading the body.
func TestCLIBadFlags(t *testing.T) {
	dir := t.TempDir()
	badMan := filepath.Join(dir, "bad.json")
	os.WriteFile(badMan, []byte(`{"tools":[{"name":"f"`), 0o644)
	utf := filepath.Join(dir, "utf.json")
	os.WriteFile(utf, []byte("{\"tools\":[{\"name\":\"f\xff\"}]}"), 0o644)
	noName := filepath.Join(dir, "noname.json")
	os.WriteFile(noName, []byte(`{"tools":[{"description":"x"}]}`), 0o644)
	cases := []struct {
		want string
		args []string
	}{
		{"--budget", []string{"prune", "-"}},
		{"budget", []string{"prune", "--budget", "abc", "-"}},
		{"budget", []string{"prune", "--budget", "", "-"}},
		{"budget", []string{"prune", "--budget", "-1", "-"}},
		{"budget", []string{"prune", "--budget", "1e3", "-"}},
		{"budget", []string{"prune", "--budget", "0x10", "-"}},
		{"budget", []string{"prune", "--budget", "1_000", "-"}},
		{"budget", []string{"prune", "--budget", "99999999999999999999999", "-"}},
		{"keep", []string{"prune", "--budget", "5", "--keep", "0", "-"}},
		{"keep", []string{"prune", "--budget", "5", "--keep", "x", "-"}},
		{"keep", []string{"prune", "--budget", "5", "--keep", "-3", "-"}},
		{"policy", []string{"prune", "--budget", "5", "--policy", "", "-"}},
		{"policy", []string{"prune", "--budget", "5", "--policy", "newest", "-"}},
		{"dialect", []string{"prune", "--budget", "5", "--dialect", "openai", "-"}},
		{"dialect", []string{"check", "--dialect", "ANTHROPIC", "-"}},
		{"unannotated", []string{"prune", "--budget", "5", "--unannotated", "", "-"}},
		{"boundary", []string{"prune", "--budget", "5", "--boundary", "loose", "-"}},
		{"text", []string{"prune", "--budget", "5", "--text", "maybe", "-"}},
		{"no-such", []string{"prune", "--budget", "5", "--tools-manifest", filepath.Join(dir, "no-such.json"), "-"}},
		{"invalid JSON", []string{"prune", "--budget", "5", "--tools-manifest", badMan, "-"}},
		{"UTF-8", []string{"prune", "--budget", "5", "--tools-manifest", utf, "-"}},
		{"no name", []string{"prune", "--budget", "5", "--tools-manifest", noName, "-"}},
		{"drop-unused-schemas", []string{"prune", "--budget", "5", "--drop-unused-schemas=maybe", "-"}},
		{"not defined", []string{"prune", "--budget", "5", "--nope", "-"}},
		{"not defined", []string{"check", "--budget", "5", "-"}},
		{"one FILE", []string{"check"}},
		{"one FILE", []string{"check", "-", "-"}},
		{"one FILE", []string{"prune", "--budget", "5"}},
		{"transcript FILE", []string{"extract"}},
		{"unknown command", []string{"chek", "-"}},
	}
	for _, c := range cases {
		badInput(t, okBody, c.want, c.args...)
	}
	// With no arguments at all, the usage goes to stderr, exit 2.
	if code, out, errs := pg(t, ""); code != 2 || out != "" || !strings.Contains(errs, "usage:") {
		t.Errorf("no arguments = %d %q %q", code, out, errs)
	}
}

// A budget of zero or less is a configuration error, not a prune that
// cannot reach it: no body fits in no tokens, and the guard would report
// the furthest safe prune as if a positive budget had been asked for.
func TestCLIBudgetMustBePositive(t *testing.T) {
	for _, b := range []string{"0", "-0", "000", "-7"} {
		badInput(t, okBody, "--budget must be positive", "prune", "--budget", b, "-")
	}
	// The least budget is a budget: it runs, and exits 3 for a body that
	// cannot fit.
	if code, out, _ := pg(t, okBody, "prune", "--budget", "1", "-"); code != 3 || out == "" {
		t.Errorf("--budget 1 = %d, output %q", code, out)
	}
}

// A budget is a decimal count: a leading zero is not octal.
func TestCLIBudgetIsDecimal(t *testing.T) {
	code, _, errs := pg(t, okBody, "prune", "--budget", "0100000", "-")
	var r struct{ Budget int }
	json.Unmarshal([]byte(strings.TrimSpace(errs)), &r)
	if code != 0 || r.Budget != 100000 {
		t.Errorf("budget 0100000 = %d, report %q", code, errs)
	}
}

// Inputs that are not request bodies are bad input, on one line.
func TestCLIBadBodies(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ body, want string }{
		{"", "invalid JSON"},
		{"   ", "invalid JSON"},
		{`[{"role":"user","content":"x"}]`, "not a JSON object"},
		{`{"messages":[{"role":"user","content":"x"}]} {}`, "invalid JSON"},
		{`{"messages":[{"role":"user","content":"x"}]`, "invalid JSON"},
		{`{"messages":"x"}`, "not an array"},
		{`{"messages":[{"role":"user","content":[{"type":"x` + "\\n" + `y_tool_result"}]}]}`, "without tool_use_id"},
		{`{"model":"m"}`, "messages"},
		{`{"messages":[` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `]}`, "invalid JSON"},
	}
	for _, c := range cases {
		badInput(t, c.body, c.want, "check", "-")
		badInput(t, c.body, c.want, "prune", "--budget", "10", "-")
	}
	badInput(t, "", "is a directory", "check", dir)
}

// The exit codes the README promises: 0 within budget (the body comes back
// byte for byte when nothing had to go), 3 when refusals leave no safe
// way there, with the furthest safe prune on stdout.
func TestCLIExitCodes(t *testing.T) {
	code, out, _ := pg(t, okBody, "prune", "--budget", "1000", "-")
	if code != 0 || out != okBody+"\n" {
		t.Errorf("under budget = %d %q", code, out)
	}
	big := strings.Repeat("data ", 300)
	body := `{"model":"m","max_tokens":9,"system":"s","messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"write","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + big + `"}]},
		{"role":"assistant","content":"done"},{"role":"user","content":"next"}]}`
	code, out, errs := pg(t, body, "prune", "--budget", "50", "-")
	if code != 3 || out == "" || strings.Count(errs, "\n") != 1 {
		t.Errorf("irreducible = %d %q %q", code, out, errs)
	}
	if v, err := wire.Validate([]byte(out), wire.Anthropic); err != nil || len(v) > 0 {
		t.Errorf("output %v %v", v, err)
	}
	code, out, _ = pg(t, body, "prune", "--budget", "100", "--unannotated", "regenerable", "-")
	if code != 0 || strings.Contains(out, "data data") {
		t.Errorf("regenerable = %d %q", code, out)
	}
	if code, out, _ := pg(t, body, "check", "-"); code != 0 || out != "{\"dialect\":\"anthropic\",\"violations\":[]}\n" {
		t.Errorf("check = %d %q", code, out)
	}
	if code, _, _ := pg(t, `{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":"x"}]}`, "check", "--dialect", "anthropic", "-"); code != 1 {
		t.Errorf("check of a broken body = %d", code)
	}
}

// After "--" every argument is a file, even one that looks like a flag.
func TestCLIDoubleDash(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "-x.json")
	os.WriteFile(f, []byte(okBody), 0o644)
	old, _ := os.Getwd()
	defer os.Chdir(old)
	os.Chdir(dir)
	if code, out, errs := pg(t, "", "check", "--", "-x.json"); code != 0 || !strings.Contains(out, "anthropic") {
		t.Errorf("check -- -x.json = %d %q %q", code, out, errs)
	}
	badInput(t, "", "one FILE", "check", "--", "-x.json", "--dialect")
}

// Each subcommand's help says what it does and lists its flags, on
// stdout with exit 0, whichever way it is asked for.
func TestCLISubcommandHelp(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		about string
		flags []string
	}{
		{"check", "Checks a request body against its provider's rules", []string{"--dialect D", "--format json|text", "Exits 0 with no violation, 1 with some, 2"}},
		{"prune", "Brings a request body under a token budget", []string{"--budget TOKENS", "--policy", "--keep N", "--tools-manifest FILE", "--unannotated", "--text irreducible|reconstructible", "--boundary", "--drop-unused-schemas", "--report", "Exits 0 when the output", "within_budget"}},
		{"extract", "Prints the request body inside a recorded transcript", nil},
	} {
		for _, args := range [][]string{{"help", c.cmd}, {c.cmd, "-h"}, {c.cmd, "--help"}, {c.cmd, "-", "-help"}} {
			code, out, errs := pg(t, "", args...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: pruneguard "+c.cmd) || !strings.Contains(out, c.about) {
				t.Errorf("%v = %d %q %q", args, code, out, errs)
				continue
			}
			for _, f := range c.flags {
				if !strings.Contains(out, f) {
					t.Errorf("%v: the help lacks %q", args, f)
				}
			}
		}
	}
	// The command's own help names every subcommand and what it does.
	code, out, _ := pg(t, "", "help")
	for _, w := range []string{"check    check a request body", "prune    bring a request body under a token budget", "extract  print the request body", "pruneguard help COMMAND"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("help lacks %q: %q", w, out)
		}
	}
	badInput(t, "", "help takes one command", "help", "nope")
	badInput(t, "", "see pruneguard help prune", "prune", "--nope", "-")
}

// check --format text prints one line per violation (where, rule, the
// provider's words) and a line that counts them; the exit codes are the
// JSON format's.
func TestCLICheckText(t *testing.T) {
	broken := `{"messages":[{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"user","content":"hi"}]}`
	code, out, errs := pg(t, broken, "check", "--format", "text", "-")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 1 || errs != "" || len(lines) != 2 ||
		lines[0] != "messages[0]: "+wire.RuleChatOrphanToolMessage+": Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'." ||
		lines[1] != "openai-chat: 1 violation" {
		t.Errorf("broken = %d %q %q", code, out, errs)
	}
	if code, out, _ := pg(t, okBody, "check", "--format=text", "-"); code != 0 || out != "anthropic: no violations\n" {
		t.Errorf("clean = %d %q", code, out)
	}
	gem := `{"contents":[{"role":"model","parts":[{"text":"x"}]}]}`
	if code, out, _ := pg(t, gem, "check", "--format", "text", "-"); code != 1 || !strings.HasPrefix(out, "contents[0]: gemini/") {
		t.Errorf("gemini = %d %q", code, out)
	}
	badInput(t, okBody, "--format", "check", "--format", "yaml", "-")
}

// The report says in plain words whether the output is within the
// budget, agreeing with within_budget, the token counts and the exit code.
func TestCLIReportSummary(t *testing.T) {
	big := strings.Repeat("data ", 300)
	body := `{"model":"m","max_tokens":9,"system":"s","messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + big + `"}]},
		{"role":"assistant","content":"done"},{"role":"user","content":"next"}]}`
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--budget", "100000"}, 0, "within budget: "},
		{[]string{"--budget", "100", "--unannotated", "regenerable"}, 0, "within budget: "},
		{[]string{"--budget", "50"}, 3, "over budget by "},
	} {
		code, _, errs := pg(t, body, append(append([]string{"prune"}, c.args...), "-")...)
		var r struct {
			Budget       int    `json:"budget"`
			InputTokens  int    `json:"input_tokens"`
			OutputTokens int    `json:"output_tokens"`
			WithinBudget bool   `json:"within_budget"`
			Description  string `json:"description"`
		}
		if err := json.Unmarshal([]byte(errs), &r); err != nil {
			t.Fatalf("%v: %v %q", c.args, err, errs)
		}
		if code != c.code || !strings.HasPrefix(r.Description, c.want) || r.WithinBudget != (code == 0) {
			t.Errorf("%v = %d %+v", c.args, code, r)
		}
		if !r.WithinBudget && !strings.HasPrefix(r.Description, fmt.Sprintf("over budget by %d tokens: %d of %d", r.OutputTokens-r.Budget, r.OutputTokens, r.Budget)) {
			t.Errorf("%v: summary %q", c.args, r.Description)
		}
		if r.WithinBudget && !strings.HasPrefix(r.Description, fmt.Sprintf("within budget: %d of %d tokens", r.OutputTokens, r.Budget)) {
			t.Errorf("%v: summary %q", c.args, r.Description)
		}
	}
}

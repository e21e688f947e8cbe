package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// errorf writes one error line: whatever the message quotes from the
// input, line breaks in it are escaped.
func errorf(w io.Writer, format string, args ...any) {
	msg := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(fmt.Sprintf(format, args...))
	fmt.Fprintf(w, "pruneguard: %s\n", msg)
}

// errHelp is returned by parse for -h and --help.
var errHelp = flag.ErrHelp

// parse parses flags that may come before or after the positional
// arguments, and returns the positional ones; after "--" every argument
// is positional. The flag set prints nothing: the caller reports the
// error on one line, or the usage on -h.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError reports the outcome of parse for subcommand cmd: its usage
// on stdout and 0 for -h or --help, one error line on stderr and 2
// otherwise.
func flagError(cmd string, err error, stdout, stderr io.Writer) int {
	if errors.Is(err, errHelp) {
		commandUsage(stdout, cmd)
		return 0
	}
	errorf(stderr, "%s: %v (see pruneguard help %s)", cmd, err, cmd)
	return 2
}

// decimal is a flag holding a decimal integer: no sign other than a
// leading minus, no base prefix, no underscores, so that a leading zero
// is not read as octal.
type decimal struct {
	n   *int
	set *bool // when not nil, set to true once a value is given
}

func (d decimal) String() string {
	if d.n == nil || d.set != nil && !*d.set {
		return "" // a required flag has no default
	}
	return strconv.Itoa(*d.n)
}

func (d decimal) Set(s string) error {
	t := strings.TrimPrefix(s, "-")
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return errors.New("not a decimal integer")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("out of range")
	}
	*d.n = n
	if d.set != nil {
		*d.set = true
	}
	return nil
}

// readInput reads FILE, or stdin for "-", and returns the bytes and the
// name to use in messages.
func readInput(name string, stdin io.Reader) ([]byte, string, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		return b, "<stdin>", err
	}
	b, err := os.ReadFile(name)
	return b, name, err
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// inputError words err, the reader's error for data read from name,
// with the line and column of the fault when it has one: bytes that are
// not UTF-8, a byte order mark, or a JSON syntax error. The reader alone
// decides what is bad input; this only says where.
func inputError(name string, data []byte, err error) error {
	var te *wire.TextError
	if errors.As(err, &te) {
		l, c := lineCol(data, int64(te.Offset))
		return fmt.Errorf("%s:%d:%d: %v", name, l, c, te)
	}
	// A syntax error, found again with its offset. A RawMessage takes any
	// number the grammar allows, as the reader does.
	var raw json.RawMessage
	var se *json.SyntaxError
	if jerr := json.Unmarshal(data, &raw); errors.As(jerr, &se) {
		off := se.Offset
		if off > 0 {
			off-- // the offset is just past the offending byte
		}
		l, c := lineCol(data, off)
		return fmt.Errorf("%s:%d:%d: invalid JSON: %v", name, l, c, se)
	} else if jerr != nil {
		return fmt.Errorf("%s: invalid JSON: %v", name, jerr)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// readBody reads and parses a request body.
func readBody(file, dialect string, stdin io.Reader) (*wire.Body, []byte, string, error) {
	data, name, err := readInput(file, stdin)
	if err != nil {
		return nil, nil, name, err
	}
	b, err := wire.Read(data, wire.Dialect(dialect))
	if err != nil {
		return nil, nil, name, inputError(name, data, err)
	}
	return b, data, name, nil
}

func checkDialect(d string) error {
	if d == "" || slices.Contains(wire.Dialects, wire.Dialect(d)) {
		return nil
	}
	return fmt.Errorf("unknown dialect %q (want one of openai-chat, openai-responses, anthropic, gemini, bedrock)", d)
}

// ---- check ----------------------------------------------------------------

type jsonViolation struct {
	Rule    string `json:"rule"`
	Index   int    `json:"index"`
	Message string `json:"message"`
}

func toJSONViolations(vs []wire.RuleViolation) []jsonViolation {
	out := make([]jsonViolation, len(vs))
	for i, v := range vs {
		out[i] = jsonViolation{v.Rule, v.Index, v.Message}
	}
	return out
}

// checkFlags are the check command's flags.
type checkFlags struct {
	dialect, format *string
}

func checkFlagSet() (*flag.FlagSet, checkFlags) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	return fs, checkFlags{
		dialect: fs.String("dialect", "", "the body's wire dialect: openai-chat, openai-responses, anthropic, gemini or bedrock (detected when empty)"),
		format:  fs.String("format", "json", "json (one JSON object) or text (one line per violation: where, rule, the provider's words)"),
	}
}

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, f := checkFlagSet()
	pos, err := parse(fs, args)
	if err != nil {
		return flagError("check", err, stdout, stderr)
	}
	dialect := f.dialect
	if err := checkDialect(*dialect); err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	if *f.format != "json" && *f.format != "text" {
		errorf(stderr, "unknown --format %q (want json or text)", *f.format)
		return 2
	}
	if len(pos) != 1 {
		errorf(stderr, "check takes one FILE (or - for stdin)")
		return 2
	}
	b, _, _, err := readBody(pos[0], *dialect, stdin)
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	vs := b.Validate()
	if *f.format == "text" {
		writeViolations(stdout, b, vs)
	} else {
		out, _ := json.Marshal(struct {
			Dialect    wire.Dialect    `json:"dialect"`
			Violations []jsonViolation `json:"violations"`
		}{b.Dialect, toJSONViolations(vs)})
		fmt.Fprintf(stdout, "%s\n", out)
	}
	if len(vs) > 0 {
		return 1
	}
	return 0
}

// writeViolations writes one line per violation, where it is (the
// history's key and the message's index), its rule and the provider's
// words, then a line that counts them and names the dialect.
func writeViolations(w io.Writer, b *wire.Body, vs []wire.RuleViolation) {
	key := map[wire.Dialect]string{wire.OpenAIResponses: "input", wire.Gemini: "contents"}[b.Dialect]
	if key == "" {
		key = "messages"
	}
	bw := bufio.NewWriter(w)
	flat := strings.NewReplacer("\n", `\n`, "\r", `\r`)
	for _, v := range vs {
		fmt.Fprintf(bw, "%s[%d]: %s: %s\n", key, v.Index, v.Rule, flat.Replace(v.Message))
	}
	switch len(vs) {
	case 0:
		fmt.Fprintf(bw, "%s: no violations\n", b.Dialect)
	case 1:
		fmt.Fprintf(bw, "%s: 1 violation\n", b.Dialect)
	default:
		fmt.Fprintf(bw, "%s: %d violations\n", b.Dialect, len(vs))
	}
	bw.Flush()
}

// ---- extract --------------------------------------------------------------

func runExtract(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	pos, err := parse(fs, args)
	if err != nil {
		return flagError("extract", err, stdout, stderr)
	}
	if len(pos) != 1 {
		errorf(stderr, "extract takes one transcript FILE (or - for stdin)")
		return 2
	}
	data, name, err := readInput(pos[0], stdin)
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	body, _, err := wire.Unwrap(data, name)
	if err != nil {
		errorf(stderr, "%v", inputError(name, data, err))
		return 2
	}
	stdout.Write(body)
	io.WriteString(stdout, "\n")
	return 0
}

// ---- prune ----------------------------------------------------------------

// pruneOpts are the prune command's settings.
type pruneOpts struct {
	budget      int
	policy      string
	keep        int
	manifest    *wire.Manifest
	unannotated wire.Unannotated
	text        pruneguard.Class // the class of text: Irreducible or Reconstructible
	boundary    pruneguard.BoundaryMode
	dropUnused  bool
	full        bool           // report every unit, message and refusal
	spiller     *spill.Spiller // where to spill, or nil
	summarizer  pruneguard.Summarizer
}

// Report is the JSON line prune writes on stderr. Lists longer than
// listMax are cut to their first and last listKeep items unless
// --report=full is given; the counts say how many there were.
type Report struct {
	Dialect      wire.Dialect `json:"dialect"`
	Policy       string       `json:"policy"`
	Boundary     string       `json:"boundary"`
	Unannotated  string       `json:"unannotated"`
	Text         string       `json:"text"`
	Budget       int          `json:"budget"`
	InputTokens  int          `json:"input_tokens"`
	OutputTokens int          `json:"output_tokens"`
	WithinBudget bool         `json:"within_budget"`
	// Description says in words what was done and whether the output is
	// within budget.
	Description string `json:"description"`
	// Summary, with --summarize, totals the summaries the output holds:
	// the input messages they replaced, the facts and the spill keys they
	// carry; Summarized lists them one by one.
	Summary     *summaryTotal `json:"summary,omitempty"`
	Outcome     string        `json:"outcome"`
	Evicted     []unitReport  `json:"evicted"`
	Stubbed     []msgReport   `json:"stubbed"`
	Withdrawn   []string      `json:"withdrawn"`
	Tombstones  []string      `json:"tombstones"`
	Refused     []refusal     `json:"refused"`
	Unpaired    []unpaired    `json:"unpaired,omitempty"`
	Spilled     []spilled     `json:"spilled"`
	SpillFailed []spillFail   `json:"spill_failed,omitempty"`
	Summarized  []summarized  `json:"summarized,omitempty"`
	Counts      counts        `json:"counts"`
	Detail      string        `json:"report"`
	Messages    int           `json:"messages"`
	ReadMS      float64       `json:"read_ms"`
	PruneMS     float64       `json:"prune_ms"`
	WriteMS     float64       `json:"write_ms"`
}

// counts are the lengths of the report's lists before any was cut.
type counts struct {
	EvictedUnits    int `json:"evicted_units"`
	EvictedMessages int `json:"evicted_messages"`
	Stubbed         int `json:"stubbed"`
	Refused         int `json:"refused"`
	RefusedUnits    int `json:"refused_units"` // the units the refusals name, each once
	Unpaired        int `json:"unpaired"`
}

// A summary report lists at most listMax items of a list: the first and
// the last listKeep when it is longer.
const listMax, listKeep = 16, 8

// cut returns xs whole, or its first and last listKeep items.
func cut[T any](xs []T, full bool) []T {
	if full || len(xs) <= listMax {
		return xs
	}
	return append(append(make([]T, 0, 2*listKeep), xs[:listKeep]...), xs[len(xs)-listKeep:]...)
}

type unitReport struct {
	Unit     string   `json:"unit"`
	Messages []string `json:"messages"`
	Indexes  []int    `json:"indexes"`
}

type msgReport struct {
	Message string `json:"message"`
	Index   int    `json:"index"`
}

type refusal struct {
	Gate     string   `json:"gate"`
	Code     string   `json:"code"`
	Units    []string `json:"units,omitempty"`
	Messages []string `json:"messages,omitempty"`
	Indexes  []int    `json:"indexes,omitempty"`
	Tools    []string `json:"tools,omitempty"`
	Calls    []string `json:"calls,omitempty"`
	Detail   string   `json:"detail,omitempty"`
}

// spilled is one segment a prune spilled: its key in the store, and the
// input-body indexes of the messages stored under it, in the order stored.
type spilled struct {
	Key     string `json:"key"`
	Indexes []int  `json:"indexes"`
}

// summarized is a summary the output holds: where it stands (the input
// index of the first message it replaced), the input indexes of the
// messages it replaced, the facts it carries and the spill keys it
// carries, with which what it replaced is read back.
type summarized struct {
	Index   int      `json:"index"`
	Indexes []int    `json:"indexes"`
	Facts   int      `json:"facts"`
	Keys    []string `json:"keys"`
}

// summaryTotal is what the summaries an output holds replaced and carry,
// all together: the input indexes replaced, in order, the facts carried
// and the spill keys carried, each once.
type summaryTotal struct {
	Indexes []int    `json:"indexes"`
	Facts   int      `json:"facts"`
	Keys    []string `json:"keys"`
}

// spillFail is a spill that failed: the input-body indexes of the
// messages it was to store, which stay in the output, and the store's
// error.
type spillFail struct {
	Indexes []int  `json:"indexes"`
	Error   string `json:"error"`
}

type unpaired struct {
	Index  int    `json:"index"`
	CallID string `json:"call_id"`
	Kind   string `json:"kind"` // "result" (no call) or "call" (no result)
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// policyFor builds the named policy.
func policyFor(name string, keep int) (pruneguard.Policy, error) {
	switch name {
	case "oldest":
		return pruneguard.OldestFirst{}, nil
	case "largest":
		return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
			p := pruneguard.LargestResultsFirst{Stub: true}.Propose(v, need)
			if p.Empty() {
				p = pruneguard.OldestFirst{}.Propose(v, need)
			}
			return p
		}), nil
	case "keep-last-tools":
		return pruneguard.KeepLastToolUses{Keep: keep, Stub: true}, nil
	}
	return nil, fmt.Errorf("unknown policy %q (want oldest, largest or keep-last-tools)", name)
}

// dropUnused wraps a policy: to each plan it adds the withdrawal of the
// schemas, declared in the body's tools array and still in the prompt, of
// tools never called in the Context, or whose every call the plan evicts
// or stands in a unit the guard holds (its View hides it: the gates
// refused it). The schema gate then decides: a tool whose calls all leave
// loses its schema outright, one whose call stays (the gates kept its
// unit) loses it behind a tombstone, or keeps it. It never withdraws the
// last declared schema (providers reject an empty tools array, and
// Anthropic and Bedrock want tools declared while tool blocks remain), a
// tool named in the body's tool choice (or legacy function_call), nor a
// tool the provider runs that the body uses. It costs in proportion to
// the plan and the tools declared, and, for a tool some of whose calls
// the plan does not name, to its calls.
type dropUnused struct {
	inner    pruneguard.Policy
	g        *wire.Guarded
	declared []string
	keep     map[string]bool
	callers  map[string][]int // the body messages calling each tool, made when first needed
}

// Propose returns the inner policy's plan with the withdrawals added.
func (pu *dropUnused) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	p := pu.inner.Propose(v, need)
	ctx := pu.g.Context()
	// The calls of each tool that the plan names, read from the body: at
	// least as many as leave with it, which only the messages still in
	// the Context do. They are counted for a tool only when that bound
	// could withdraw its schema.
	named := map[string]int{}
	var tools []string
	for _, id := range p.Evict {
		i, ok := pu.g.Index(id)
		if !ok {
			continue
		}
		tools = pu.g.AppendCalledTools(tools[:0], i)
		for _, t := range tools {
			named[t]++
		}
	}
	var evicting map[pruneguard.MessageID]bool // made when first asked
	inPlan := func(id pruneguard.MessageID) bool {
		if evicting == nil {
			evicting = make(map[pruneguard.MessageID]bool, len(p.Evict))
			for _, e := range p.Evict {
				evicting[e] = true
			}
		}
		return evicting[id]
	}
	resident := 0
	var drop []string
	for _, t := range pu.declared {
		ts, ok := ctx.Tool(t)
		if !ok || !ts.Resident || ts.Tombstoned {
			continue
		}
		resident++
		if pu.keep[t] || slices.Contains(p.DropSchemas, t) {
			continue
		}
		if ts.Args <= named[t] && ts.Args <= pu.leaving(p.Evict, t) || pu.held(v, inPlan, t) {
			drop = append(drop, t)
		}
	}
	if len(drop) > 0 && len(drop) >= resident {
		drop = drop[:resident-1]
	}
	p.DropSchemas = append(p.DropSchemas, drop...)
	return p
}

// held reports whether every call of tool t still in the Context either
// leaves with the plan (inPlan) or stands in a unit v hides, one at least
// so.
func (pu *dropUnused) held(v *pruneguard.View, inPlan func(pruneguard.MessageID) bool, t string) bool {
	if pu.callers == nil {
		pu.callers = map[string][]int{}
		var tools []string
		for i := range pu.g.Len() {
			tools = pu.g.AppendCalledTools(tools[:0], i)
			for _, u := range tools {
				if n := len(pu.callers[u]); n == 0 || pu.callers[u][n-1] != i {
					pu.callers[u] = append(pu.callers[u], i)
				}
			}
		}
	}
	ctx := pu.g.Context()
	hidden := false
	for _, i := range pu.callers[t] {
		id := wire.ID(i)
		u, ok := ctx.UnitOf(id)
		switch {
		case !ok || inPlan(id):
		case v.Hidden(u.ID):
			hidden = true
		default:
			return false
		}
	}
	return hidden
}

// leaving counts the calls of tool t that leave with evict: those of the
// messages it names that the Context holds.
func (pu *dropUnused) leaving(evict []pruneguard.MessageID, t string) int {
	ctx := pu.g.Context()
	n := 0
	var tools []string
	for _, id := range evict {
		i, ok := pu.g.Index(id)
		if !ok {
			continue
		}
		k := 0
		tools = pu.g.AppendCalledTools(tools[:0], i)
		for _, u := range tools {
			if u == t {
				k++
			}
		}
		if k == 0 {
			continue
		}
		if _, ok := ctx.ClassOf(id); ok {
			n += k
		}
	}
	return n
}

// toolChoiceNames returns every string inside the body's tool choice
// fields (tool_choice, toolConfig, tool_config): a tool named there keeps
// its schema.
func toolChoiceNames(g *wire.Guarded) map[string]bool {
	names := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			names[x] = true
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			for k, y := range x {
				if k != "tools" {
					walk(y)
				}
			}
		}
	}
	for _, k := range []string{"tool_choice", "function_call", "toolConfig", "tool_config"} {
		var v any
		if raw := g.Field(k); raw != nil && json.Unmarshal(raw, &v) == nil {
			walk(v)
		}
	}
	return names
}

// ms returns the milliseconds since start.
func ms(start time.Time) float64 { return float64(time.Since(start).Microseconds()) / 1000 }

// prune binds body data to a Context and brings it under o.budget. It
// returns the Guarded holding the output body, the report (without its
// write time) and the exit code (0 or 3).
func prune(data []byte, dialect wire.Dialect, o pruneOpts) (*wire.Guarded, Report, int, error) {
	pol, err := policyFor(o.policy, o.keep)
	if err != nil {
		return nil, Report{}, 2, err
	}
	start := time.Now()
	opts := wire.Options{
		Config:      pruneguard.Config{Boundary: o.boundary, Regen: pruneguard.RegenDropUnsafe, TextClass: o.text},
		Manifest:    o.manifest,
		Unannotated: o.unannotated,
	}
	if o.spiller != nil {
		opts.Spiller = o.spiller
	}
	g, err := wire.Bind(data, dialect, opts)
	if err != nil {
		return nil, Report{}, 2, err
	}
	rep := newReport(g, o)
	rep.ReadMS = ms(start)

	start = time.Now()
	if o.dropUnused {
		pol = newDropUnused(pol, g)
	}
	refs, decisions := rep.check(g, o.budget, pol, o.summarizer)
	rep.OutputTokens = g.Tokens()
	rep.WithinBudget = rep.OutputTokens <= o.budget
	rep.PruneMS = ms(start)

	rep.addDecisions(g, decisions, o.full)
	if o.summarizer != nil {
		rep.addSummaries(g, decisions)
	}
	units := map[pruneguard.UnitID]bool{}
	for _, r := range dedupeRefusals(refs) {
		for _, u := range r.Units {
			units[u] = true
		}
		rep.Refused = append(rep.Refused, refusal{
			Gate: r.Gate, Code: r.Code, Units: cut(strs(r.Units), o.full), Messages: cut(strs(r.Messages), o.full),
			Indexes: cut(r.Indexes, o.full), Tools: r.Tools, Calls: strs(r.Calls), Detail: r.Detail,
		})
	}
	for _, u := range g.Unpaired() {
		kind := "call"
		if u.Result {
			kind = "result"
		}
		rep.Unpaired = append(rep.Unpaired, unpaired{u.Index, u.CallID, kind})
	}
	rep.Counts.RefusedUnits = len(units)
	code := 0
	if !rep.WithinBudget {
		code = 3
		rep.addHeldBack(g)
	}
	rep.Counts.Stubbed, rep.Counts.Refused, rep.Counts.Unpaired = len(rep.Stubbed), len(rep.Refused), len(rep.Unpaired)
	rep.Description = describe(rep)
	rep.Stubbed = cut(rep.Stubbed, o.full)
	rep.Refused = cut(rep.Refused, o.full)
	rep.Unpaired = cut(rep.Unpaired, o.full)
	return g, rep, code, nil
}

// newReport starts the report of a prune of g with o: its settings and
// what was read.
func newReport(g *wire.Guarded, o pruneOpts) Report {
	rep := Report{
		Dialect: g.Dialect(), Policy: o.policy, Unannotated: o.unannotated.String(), Text: "irreducible", Budget: o.budget,
		Boundary: "relaxed", Evicted: []unitReport{}, Stubbed: []msgReport{}, Withdrawn: []string{}, Tombstones: []string{}, Refused: []refusal{}, Spilled: []spilled{},
		Detail: "summary", Messages: g.Len(),
	}
	if o.full {
		rep.Detail = "full"
	}
	if o.boundary == pruneguard.BoundaryStrict {
		rep.Boundary = "strict"
	}
	if o.text == pruneguard.Reconstructible {
		rep.Text = "reconstructible"
	}
	rep.InputTokens = g.Tokens()
	return rep
}

// newDropUnused wraps pol in the policy that also withdraws the schemas
// of the tools g declares and the transcript does not use, but for those
// the tool choice or the server names.
func newDropUnused(pol pruneguard.Policy, g *wire.Guarded) *dropUnused {
	du := &dropUnused{inner: pol, g: g, keep: toolChoiceNames(g)}
	for _, t := range g.ServerTools() {
		du.keep[t] = true
	}
	for _, t := range g.Tools() {
		du.declared = append(du.declared, t.Name)
	}
	return du
}

// check runs the guard with pol on g when it is over budget, and records
// the outcome and the spills. It returns the refusals met and the
// decisions applied.
func (rep *Report) check(g *wire.Guarded, budget int, pol pruneguard.Policy, sum pruneguard.Summarizer) ([]wire.Refusal, []*pruneguard.Decision) {
	if rep.InputTokens <= budget {
		rep.Outcome = pruneguard.UnderBudget.String()
		return nil, nil
	}
	// The budget counts the whole body, as Guarded.Check does.
	res, refs, _ := g.Check(pruneguard.Guard{Budget: budget, Policy: pol, Rounds: 32, Summarizer: sum})
	outcome := res.Outcome
	if outcome == pruneguard.UnderBudget {
		outcome = pruneguard.Deferred
	}
	rep.Outcome = outcome.String()
	// A segment no applied decision points to (written for a decision the
	// wire screen refused) is not in the output: not reported.
	used := map[pruneguard.Pointer]bool{}
	for _, d := range res.Decisions {
		for _, n := range d.Pointers {
			used[n.Pointer] = true
		}
	}
	for _, sp := range res.Spills {
		if !used[sp.Pointer] {
			continue
		}
		s := spilled{Key: sp.Pointer.Key, Indexes: make([]int, 0, len(sp.Messages))}
		for _, id := range sp.Messages {
			if i, ok := g.Index(id); ok { // an earlier summary has no input index
				s.Indexes = append(s.Indexes, i)
			}
		}
		rep.Spilled = append(rep.Spilled, s)
	}
	for _, se := range res.SpillErrors {
		f := spillFail{Indexes: make([]int, 0, len(se.Messages)), Error: se.Err.Error()}
		for _, id := range se.Messages {
			if i, ok := g.Index(id); ok {
				f.Indexes = append(f.Indexes, i)
			}
		}
		rep.SpillFailed = append(rep.SpillFailed, f)
	}
	return refs, res.Decisions
}

// addDecisions reports what the decisions evicted, stubbed, withdrew and
// tombstoned. A message stubbed by one decision may leave with its unit
// in a later one: it is reported as evicted only. In a summary, only the
// units listed are spelt out.
func (rep *Report) addDecisions(g *wire.Guarded, decisions []*pruneguard.Decision, full bool) {
	decisions = slices.DeleteFunc(slices.Clone(decisions), func(d *pruneguard.Decision) bool { return d.Summary != nil })
	total := 0
	stubs := false
	for _, d := range decisions {
		total += len(d.Units)
		stubs = stubs || len(d.Stub) > 0
	}
	var evicted map[pruneguard.MessageID]bool
	if stubs {
		evicted = map[pruneguard.MessageID]bool{}
		for _, d := range decisions {
			for _, id := range d.Evict {
				evicted[id] = true
			}
		}
	}
	listed := func(k int) bool { return full || total <= listMax || k < listKeep || k >= total-listKeep }
	tombs := map[string]string{}
	var tombOrder []string
	for _, d := range decisions {
		rep.Evicted = append(rep.Evicted, evictedUnits(d, g, rep.Counts.EvictedUnits, listed)...)
		rep.Counts.EvictedUnits += len(d.Units)
		rep.Counts.EvictedMessages += len(d.Evict)
		for _, id := range d.Stub {
			if evicted[id] {
				continue
			}
			i, _ := g.Index(id)
			rep.Stubbed = append(rep.Stubbed, msgReport{string(id), i})
		}
		rep.Withdrawn = append(rep.Withdrawn, d.DropSchemas...)
		for _, t := range d.Tombstones {
			tombs[t.Tool] = t.Text
			tombOrder = append(tombOrder, t.Tool)
		}
		for _, t := range d.Retire {
			delete(tombs, t)
		}
	}
	for _, t := range tombOrder {
		if text, ok := tombs[t]; ok {
			rep.Tombstones = append(rep.Tombstones, text)
			delete(tombs, t)
		}
	}
}

// addSummaries reports the summaries the output holds: a summary that a
// later one replaced is reported within the later one.
func (rep *Report) addSummaries(g *wire.Guarded, decisions []*pruneguard.Decision) {
	rep.Summarized = []summarized{}
	type held struct {
		id  pruneguard.MessageID
		rep summarized
	}
	var standing []held
	for _, d := range decisions {
		if d.Summary == nil {
			continue
		}
		s := summarized{Indexes: []int{}, Keys: []string{}}
		for _, p := range d.Summary.Pointers {
			s.Keys = append(s.Keys, p.Key)
		}
		for _, id := range d.Evict {
			k := slices.IndexFunc(standing, func(h held) bool { return h.id == id })
			if k < 0 {
				i, _ := g.Index(id)
				s.Indexes = append(s.Indexes, i)
				continue
			}
			// An earlier summary, replaced: what it replaced, and the
			// keys it carried that this one carries forward.
			s.Indexes = append(s.Indexes, standing[k].rep.Indexes...)
			for _, key := range standing[k].rep.Keys {
				if strings.Contains(d.Summary.Text, key) && !slices.Contains(s.Keys, key) {
					s.Keys = append(s.Keys, key)
				}
			}
			standing = slices.Delete(standing, k, k+1)
		}
		slices.Sort(s.Indexes)
		s.Index = s.Indexes[0]
		standing = append(standing, held{d.Summary.ID, s})
	}
	for _, h := range standing {
		if _, ok := g.Context().Message(h.id); !ok {
			continue // evicted since
		}
		h.rep.Facts = carriedFacts(g, h.id)
		rep.Summarized = append(rep.Summarized, h.rep)
	}
	slices.SortFunc(rep.Summarized, func(a, b summarized) int { return a.Index - b.Index })
	rep.Summary = &summaryTotal{Indexes: []int{}, Keys: []string{}}
	for _, s := range rep.Summarized {
		rep.Summary.Indexes = append(rep.Summary.Indexes, s.Indexes...)
		rep.Summary.Facts += s.Facts
		for _, k := range s.Keys {
			if !slices.Contains(rep.Summary.Keys, k) {
				rep.Summary.Keys = append(rep.Summary.Keys, k)
			}
		}
	}
	slices.Sort(rep.Summary.Indexes)
}

// carriedFacts counts the facts summary id carries, as the gates will
// require of a later summary of it (the keys of its pointers aside).
func carriedFacts(g *wire.Guarded, id pruneguard.MessageID) int {
	b, err := g.Context().Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: []pruneguard.MessageID{id}}})
	if err != nil || len(b.Messages) == 0 {
		return 0
	}
	n := 0
	for _, f := range b.Messages[0].Facts {
		if f.Kind != "pointer" {
			n++
		}
	}
	return n
}

// addHeldBack names what the guard holds back, which policies skip
// silently, unless a refusal with the same code and units says it
// already: units with a pending call, and pinned units.
func (rep *Report) addHeldBack(g *wire.Guarded) {
	key := func(r refusal) string { return r.Code + "\x00" + strings.Join(r.Units, "\x00") }
	named := make(map[string]bool, len(rep.Refused))
	for _, r := range rep.Refused {
		named[key(r)] = true
	}
	for _, u := range g.Context().Units() {
		r := refusal{Gate: "boundary", Units: []string{string(u.ID)}, Messages: strs(u.Messages)}
		switch {
		case len(u.Pending) > 0:
			r.Code = string(pruneguard.CodePending)
		case u.Pinned:
			r.Code = string(pruneguard.CodePinned)
		default:
			continue
		}
		for _, id := range u.Messages {
			i, _ := g.Index(id)
			r.Indexes = append(r.Indexes, i)
		}
		if !named[key(r)] {
			named[key(r)] = true
			rep.Refused = append(rep.Refused, r)
		}
	}
}

// describe says in a sentence whether the output is within the budget,
// what was done and, when it is not, why.
func describe(r Report) string {
	var b strings.Builder
	if r.WithinBudget {
		fmt.Fprintf(&b, "within budget: %d of %d tokens", r.OutputTokens, r.Budget)
	} else {
		fmt.Fprintf(&b, "over budget by %d tokens: %d of %d", r.OutputTokens-r.Budget, r.OutputTokens, r.Budget)
	}
	if r.OutputTokens != r.InputTokens {
		fmt.Fprintf(&b, " (from %d)", r.InputTokens)
	}
	var did []string
	if n := r.Counts.EvictedUnits; n > 0 {
		did = append(did, fmt.Sprintf("evicted %d %s (%d %s)", n, plural(n, "unit", "units"), r.Counts.EvictedMessages, plural(r.Counts.EvictedMessages, "message", "messages")))
	}
	if n := r.Counts.Stubbed; n > 0 {
		did = append(did, fmt.Sprintf("stubbed %d %s", n, plural(n, "result", "results")))
	}
	if n := len(r.Withdrawn); n > 0 {
		did = append(did, fmt.Sprintf("withdrew %d %s", n, plural(n, "schema", "schemas")))
	}
	if n := len(r.Summarized); n > 0 {
		m := 0
		for _, s := range r.Summarized {
			m += len(s.Indexes)
		}
		did = append(did, fmt.Sprintf("summarized %d %s in %d %s", m, plural(m, "message", "messages"), n, plural(n, "summary", "summaries")))
	}
	if n := len(r.Spilled); n > 0 {
		m := 0
		for _, s := range r.Spilled {
			m += len(s.Indexes)
		}
		did = append(did, fmt.Sprintf("spilled %d %s in %d %s", m, plural(m, "message", "messages"), n, plural(n, "segment", "segments")))
	}
	switch {
	case len(did) > 0:
		b.WriteString("; " + strings.Join(did, ", "))
	case r.Outcome == pruneguard.UnderBudget.String():
		b.WriteString("; nothing to prune")
	default:
		b.WriteString("; nothing pruned")
	}
	if n := len(r.SpillFailed); n > 0 {
		fmt.Fprintf(&b, "; %d %s failed (see spill_failed)", n, plural(n, "spill", "spills"))
	}
	if !r.WithinBudget {
		fmt.Fprintf(&b, "; the guard's refusals leave no safe way further (%d %s of %d %s, see refused)", r.Counts.Refused,
			plural(r.Counts.Refused, "refusal", "refusals"), r.Counts.RefusedUnits, plural(r.Counts.RefusedUnits, "unit", "units"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// evictedUnits lists the units decision d evicts that listed picks by
// their place among all the units evicted (the first of d's is at
// before), in the order of d.Units, each with its messages in transcript
// order. Membership comes from the decision's audit records: a unit need
// not be a contiguous run of d.Evict (in Responses a call and its output
// may have other items between them).
func evictedUnits(d *pruneguard.Decision, g *wire.Guarded, before int, listed func(int) bool) []unitReport {
	var out []unitReport
	at := make(map[pruneguard.UnitID]int)
	for k, u := range d.Units {
		if listed(before + k) {
			at[u] = len(out)
			out = append(out, unitReport{Unit: string(u), Messages: []string{}, Indexes: []int{}})
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, r := range d.Records() {
		k, ok := at[r.Unit]
		if r.Stubbed || !ok {
			continue
		}
		i, _ := g.Index(r.Message)
		out[k].Messages = append(out[k].Messages, string(r.Message))
		out[k].Indexes = append(out[k].Indexes, i)
	}
	return out
}

// dedupeRefusals returns rs without the refusals that name what an
// earlier one names, in order.
func dedupeRefusals(rs []wire.Refusal) []wire.Refusal {
	type key struct{ gate, code, unit, msg, all string }
	seen := make(map[key]bool, len(rs))
	out := make([]wire.Refusal, 0, len(rs))
	for _, r := range rs {
		k := key{gate: r.Gate, code: r.Code}
		if len(r.Units) <= 1 && len(r.Messages) <= 1 && len(r.Tools) == 0 && len(r.Calls) == 0 {
			if len(r.Units) == 1 {
				k.unit = string(r.Units[0])
			}
			if len(r.Messages) == 1 {
				k.msg = string(r.Messages[0])
			}
		} else {
			k.all = joinAll(r.Units, r.Messages, r.Tools, r.Calls)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// joinAll writes the ids of a refusal's lists, each list ended by a
// byte no id holds, for its key.
func joinAll(units []pruneguard.UnitID, msgs []pruneguard.MessageID, tools []string, calls []pruneguard.CallID) string {
	var b strings.Builder
	for _, ids := range [][]string{strs(units), strs(msgs), tools, strs(calls)} {
		for _, id := range ids {
			b.WriteString(id)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	return b.String()
}

// readManifest reads the MCP tools/list file given to --tools-manifest.
func readManifest(name string) (*wire.Manifest, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	m, err := wire.ReadManifest(data)
	if err != nil {
		return nil, inputError(name, data, err)
	}
	return m, nil
}

// pruneFlags are the prune command's flags.
type pruneFlags struct {
	budget, keep                                                    *int
	dialect, policy, manifest, unann, text, boundary, detail, spill *string
	summarize                                                       *string
	dropSchemas                                                     *bool
	budgetSet                                                       *bool // --budget was given
}

func pruneFlagSet() (*flag.FlagSet, pruneFlags) {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	f := pruneFlags{budget: new(int), keep: new(int), budgetSet: new(bool)}
	*f.keep = 3
	fs.Var(decimal{n: f.budget, set: f.budgetSet}, "budget", "the token budget for the whole request body: messages, system prompt, tools and settings (required, at least 1; a quarter of the compact JSON's length per token)")
	f.dialect = fs.String("dialect", "", "the body's wire dialect (detected when empty)")
	f.policy = fs.String("policy", "oldest", "what to propose: oldest (evict whole units, oldest first), largest (stub the largest tool results, then evict oldest first) or keep-last-tools (stub every tool result but the last --keep)")
	fs.Var(decimal{n: f.keep}, "keep", "the tool uses keep-last-tools keeps")
	f.manifest = fs.String("tools-manifest", "", "an MCP tools/list JSON whose tool annotations win over the body's")
	f.unann = fs.String("unannotated", "irreducible", "tools without annotations: irreducible (their results never go) or regenerable (they can be called again for the same result)")
	f.text = fs.String("text", "irreducible", "text a person or the model wrote (user messages, assistant prose): irreducible (it leaves only spilled, with --spill) or reconstructible (the runtime accepts losing it)")
	f.boundary = fs.String("boundary", "relaxed", "the commit boundary: relaxed (hold back only units still in flight) or strict (defer every prune while a call is pending)")
	f.dropSchemas = fs.Bool("drop-unused-schemas", false, "withdraw the schemas of tools never called or whose calls all leave (behind a tombstone line when a call stays)")
	f.detail = fs.String("report", "summary", "the report: summary (counts, and the first and last 8 items of long lists) or full")
	f.spill = fs.String("spill", "", "a directory to spill to: what only a spill lets go (irreducible messages of closed units, results to stub) is stored there, read back and compared, then pruned, its pointer left where the model reads it; the report's \"spilled\" lists each key with the input indexes of the messages stored under it (read them back with pruneguard recall)")
	f.summarize = fs.String("summarize", "", "compact before evicting: builtin replaces the oldest whole units that may go with one summary message (one for each stretch between pinned messages) the built-in summarizer writes (what happened, every fact the guard requires verbatim, the spill keys with --spill), in the place of the run, as a user message of the dialect; the report's \"summarized\" lists each summary the output holds with the input indexes it replaced, the facts and the spill keys it carries")
	return fs, f
}

func runPrune(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, f := pruneFlagSet()
	budget, keep, dialect, policy, manifest := f.budget, f.keep, f.dialect, f.policy, f.manifest
	unann, boundary, dropSchemas, detail := f.unann, f.boundary, f.dropSchemas, f.detail
	pos, err := parse(fs, args)
	if err != nil {
		return flagError("prune", err, stdout, stderr)
	}
	o := pruneOpts{budget: *budget, policy: *policy, keep: *keep, dropUnused: *dropSchemas, full: *detail == "full"}
	switch {
	case !*f.budgetSet:
		err = errors.New("prune needs --budget TOKENS (1 or more)")
	case *budget <= 0:
		err = fmt.Errorf("--budget must be positive, not %d: no body fits in no tokens (1 is the least budget)", *budget)
	case len(pos) != 1:
		err = errors.New("prune takes one FILE (or - for stdin)")
	case *keep < 1:
		err = errors.New("--keep must be at least 1")
	case *detail != "summary" && *detail != "full":
		err = fmt.Errorf("unknown --report %q (want summary or full)", *detail)
	}
	if err == nil {
		err = checkDialect(*dialect)
	}
	if err == nil {
		_, err = policyFor(*policy, *keep)
	}
	if err == nil {
		switch *unann {
		case "irreducible":
			o.unannotated = wire.UnannotatedIrreducible
		case "regenerable":
			o.unannotated = wire.UnannotatedRegenerable
		default:
			err = fmt.Errorf("unknown --unannotated %q (want irreducible or regenerable)", *unann)
		}
	}
	if err == nil {
		switch *f.text {
		case "irreducible":
			o.text = pruneguard.Irreducible
		case "reconstructible":
			o.text = pruneguard.Reconstructible
		default:
			err = fmt.Errorf("unknown --text %q (want irreducible or reconstructible)", *f.text)
		}
	}
	if err == nil {
		switch *boundary {
		case "relaxed":
			o.boundary = pruneguard.BoundaryRelaxed
		case "strict":
			o.boundary = pruneguard.BoundaryStrict
		default:
			err = fmt.Errorf("unknown --boundary %q (want relaxed or strict)", *boundary)
		}
	}
	if err == nil && *manifest != "" {
		o.manifest, err = readManifest(*manifest)
	}
	if err == nil && *f.spill != "" {
		o.spiller = &spill.Spiller{Store: spill.Dir(*f.spill)}
	}
	if err == nil {
		switch *f.summarize {
		case "":
		case "builtin":
			o.summarizer = pruneguard.Digest{}
		default:
			err = fmt.Errorf("unknown --summarize %q (want builtin)", *f.summarize)
		}
	}
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	data, name, err := readInput(pos[0], stdin)
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	g, rep, code, err := prune(data, wire.Dialect(*dialect), o)
	if err != nil {
		errorf(stderr, "%v", inputError(name, data, err))
		return 2
	}
	start := time.Now()
	w := bufio.NewWriterSize(stdout, 1<<20)
	if _, err := g.WriteTo(w); err == nil {
		io.WriteString(w, "\n")
		err = w.Flush()
	}
	rep.WriteMS = ms(start)
	line, _ := json.Marshal(rep)
	fmt.Fprintf(stderr, "%s\n", line)
	return code
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pruneguard/pruneguard"
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

// flagError reports the outcome of parse: the usage on stdout and 0 for
// -h or --help, one error line on stderr and 2 otherwise.
func flagError(err error, stdout, stderr io.Writer) int {
	if errors.Is(err, errHelp) {
		usage(stdout)
		return 0
	}
	errorf(stderr, "%v", err)
	return 2
}

// decimal is a flag holding a decimal integer: no sign other than a
// leading minus, no base prefix, no underscores, so that a leading zero
// is not read as octal.
type decimal struct{ n *int }

func (d decimal) String() string {
	if d.n == nil {
		return ""
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

func toJSONViolations(vs []wire.Violation) []jsonViolation {
	out := make([]jsonViolation, len(vs))
	for i, v := range vs {
		out[i] = jsonViolation{v.Rule, v.Index, v.Message}
	}
	return out
}

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dialect := fs.String("dialect", "", "wire dialect (detected when empty)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagError(err, stdout, stderr)
	}
	if err := checkDialect(*dialect); err != nil {
		errorf(stderr, "%v", err)
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
	out, _ := json.Marshal(struct {
		Dialect    wire.Dialect    `json:"dialect"`
		Violations []jsonViolation `json:"violations"`
	}{b.Dialect, toJSONViolations(vs)})
	fmt.Fprintf(stdout, "%s\n", out)
	if len(vs) > 0 {
		return 1
	}
	return 0
}

// ---- extract --------------------------------------------------------------

func runExtract(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	pos, err := parse(fs, args)
	if err != nil {
		return flagError(err, stdout, stderr)
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
	boundary    pruneguard.BoundaryMode
	dropUnused  bool
	raw         []byte // the body as read, for --drop-unused-schemas
}

// Report is the JSON line prune writes on stderr.
type Report struct {
	Dialect      wire.Dialect `json:"dialect"`
	Policy       string       `json:"policy"`
	Boundary     string       `json:"boundary"`
	Unannotated  string       `json:"unannotated"`
	Budget       int          `json:"budget"`
	InputTokens  int          `json:"input_tokens"`
	OutputTokens int          `json:"output_tokens"`
	Outcome      string       `json:"outcome"`
	Evicted      []unitReport `json:"evicted"`
	Stubbed      []msgReport  `json:"stubbed"`
	Withdrawn    []string     `json:"withdrawn"`
	Tombstones   []string     `json:"tombstones"`
	Refused      []refusal    `json:"refused"`
	Unpaired     []unpaired   `json:"unpaired,omitempty"`
	PruneMS      float64      `json:"prune_ms"`
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
	Detail   string   `json:"detail,omitempty"`
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
// tools never called in the Context or whose every call the plan evicts.
// The schema gate then decides: a tool whose calls all leave loses its
// schema outright, one whose call stays after all (the gates kept its
// unit) loses it behind a tombstone, or keeps it. It never withdraws the
// last declared schema (providers reject an empty tools array, and
// Anthropic and Bedrock want tools declared while tool blocks remain), a
// tool named in the body's tool choice (or legacy function_call), nor a
// tool the provider runs that the body uses.
type dropUnused struct {
	inner    pruneguard.Policy
	g        *wire.Guarded
	declared []string
	keep     map[string]bool
}

// Propose returns the inner policy's plan with the withdrawals added.
func (pu *dropUnused) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	p := pu.inner.Propose(v, need)
	ctx := pu.g.Context()
	evict := make(map[pruneguard.MessageID]bool, len(p.Evict))
	for _, id := range p.Evict {
		evict[id] = true
	}
	survives := map[string]bool{}
	for _, e := range ctx.Snapshot() {
		if e.Calls > 0 && !evict[e.ID] {
			for _, t := range e.Tools {
				survives[t] = true
			}
		}
	}
	resident := 0
	var drop []string
	for _, t := range pu.declared {
		ts, ok := ctx.Tool(t)
		if !ok || !ts.Resident || ts.Tombstoned {
			continue
		}
		resident++
		if !survives[t] && !pu.keep[t] && !slices.Contains(p.DropSchemas, t) {
			drop = append(drop, t)
		}
	}
	if len(drop) > 0 && len(drop) >= resident {
		drop = drop[:resident-1]
	}
	p.DropSchemas = append(p.DropSchemas, drop...)
	return p
}

// toolChoiceNames returns every string inside the body's tool choice
// fields (tool_choice, toolConfig, tool_config): a tool named there keeps
// its schema.
func toolChoiceNames(data []byte) map[string]bool {
	var top map[string]any
	json.Unmarshal(data, &top)
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
		walk(top[k])
	}
	return names
}

// serverTools returns the names of the tools the provider runs that the
// body uses (Anthropic server_tool_use, MCP tool use): their calls are
// not the Context's, so they keep their declarations.
func serverTools(b *wire.Body) map[string]bool {
	names := map[string]bool{}
	for _, m := range b.Messages {
		for _, p := range m.Parts {
			if (p.Kind == wire.PartServerCall || p.Kind == wire.PartServerResult) && p.Name != "" {
				names[p.Name] = true
			}
		}
	}
	return names
}

// prune brings body b under o.budget. It returns the output body, the
// report and the exit code (0 or 3).
func prune(b *wire.Body, o pruneOpts) ([]byte, Report, int, error) {
	pol, err := policyFor(o.policy, o.keep)
	if err != nil {
		return nil, Report{}, 2, err
	}
	rep := Report{
		Dialect: b.Dialect, Policy: o.policy, Unannotated: o.unannotated.String(), Budget: o.budget,
		Boundary: "relaxed", Evicted: []unitReport{}, Stubbed: []msgReport{}, Withdrawn: []string{}, Tombstones: []string{}, Refused: []refusal{},
	}
	if o.boundary == pruneguard.BoundaryStrict {
		rep.Boundary = "strict"
	}
	rep.InputTokens = wire.Tokens(b, nil)

	start := time.Now()
	g, err := b.Context(wire.Options{
		Config:      pruneguard.Config{Boundary: o.boundary, Regen: pruneguard.RegenDropUnsafe},
		Manifest:    o.manifest,
		Unannotated: o.unannotated,
	})
	if err != nil {
		return nil, Report{}, 2, err
	}
	if o.dropUnused {
		du := &dropUnused{inner: pol, g: g, keep: toolChoiceNames(o.raw)}
		maps.Copy(du.keep, serverTools(b))
		for _, t := range b.Tools() {
			du.declared = append(du.declared, t.Name)
		}
		pol = du
	}
	var refs []wire.Refusal
	var decisions []*pruneguard.Decision
	outcome := pruneguard.UnderBudget
	if rep.InputTokens > o.budget {
		outcome = pruneguard.Deferred
		// The Context counts messages only: the rest of the body is a fixed
		// cost. The Context's count of a stub is an estimate; when the body
		// as written still exceeds the budget, ask again for the difference.
		target := o.budget - g.Overhead()
		for try := 0; try < 4; try++ {
			res, rs, _ := g.Check(pruneguard.Guard{Budget: max(target, 1), Policy: pol, Rounds: 32})
			refs = append(refs, rs...)
			decisions = append(decisions, res.Decisions...)
			if len(res.Decisions) > 0 {
				outcome = pruneguard.Pruned
			}
			over := g.Tokens() - o.budget
			if over <= 0 || len(res.Decisions) == 0 {
				break
			}
			target = g.Context().Tokens() - over
		}
	}
	out := g.Body()
	rep.PruneMS = float64(time.Since(start).Microseconds()) / 1000
	rep.Outcome = outcome.String()

	// A message stubbed by one decision may leave with its unit in a
	// later one: it is reported as evicted only.
	evicted := map[pruneguard.MessageID]bool{}
	tombs := map[string]string{}
	var tombOrder []string
	for _, d := range decisions {
		for _, id := range d.Evict {
			evicted[id] = true
		}
	}
	for _, d := range decisions {
		rep.Evicted = append(rep.Evicted, evictedUnits(d, g)...)
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
	for _, r := range dedupeRefusals(refs) {
		rep.Refused = append(rep.Refused, refusal{
			Gate: r.Gate, Code: r.Code, Units: strs(r.Units), Messages: strs(r.Messages),
			Indexes: r.Indexes, Tools: r.Tools, Detail: r.Detail,
		})
	}
	for _, u := range g.Unpaired() {
		kind := "call"
		if u.Result {
			kind = "result"
		}
		rep.Unpaired = append(rep.Unpaired, unpaired{u.Index, u.CallID, kind})
	}
	data, err := out.Marshal()
	if err != nil {
		return nil, Report{}, 2, err
	}
	rep.OutputTokens = wire.Tokens(out, nil)
	code := 0
	if rep.OutputTokens > o.budget {
		code = 3
		// Name what the guard holds back, which policies skip silently,
		// unless a refusal with the same code and units says it already.
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
	return data, rep, code, nil
}

// evictedUnits lists the units decision d evicts, in the order of
// d.Units, each with its messages in transcript order. Membership comes
// from the decision's audit records: a unit need not be a contiguous run
// of d.Evict (in Responses a call and its output may have other items
// between them).
func evictedUnits(d *pruneguard.Decision, g *wire.Guarded) []unitReport {
	out := make([]unitReport, len(d.Units))
	at := make(map[pruneguard.UnitID]int, len(d.Units))
	for k, u := range d.Units {
		out[k] = unitReport{Unit: string(u), Messages: []string{}, Indexes: []int{}}
		at[u] = k
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

func dedupeRefusals(rs []wire.Refusal) []wire.Refusal {
	seen := map[string]bool{}
	var out []wire.Refusal
	for _, r := range rs {
		k := fmt.Sprint(r.Gate, r.Code, r.Units, r.Messages, r.Tools)
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
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

func runPrune(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	budget, keep := new(int), new(int)
	*budget, *keep = -1, 3
	fs.Var(decimal{budget}, "budget", "token budget for the whole request body (required)")
	dialect := fs.String("dialect", "", "wire dialect (detected when empty)")
	policy := fs.String("policy", "oldest", "salience policy: oldest, largest or keep-last-tools")
	fs.Var(decimal{keep}, "keep", "tool uses keep-last-tools keeps")
	manifest := fs.String("tools-manifest", "", "MCP tools/list JSON with tool annotations")
	unann := fs.String("unannotated", "irreducible", "unannotated tools: irreducible or regenerable")
	boundary := fs.String("boundary", "relaxed", "commit boundary: relaxed or strict")
	dropSchemas := fs.Bool("drop-unused-schemas", false, "withdraw the schemas of tools never called or whose calls all leave (tombstoned when a call stays)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagError(err, stdout, stderr)
	}
	o := pruneOpts{budget: *budget, policy: *policy, keep: *keep, dropUnused: *dropSchemas}
	switch {
	case *budget < 0:
		err = errors.New("prune needs --budget TOKENS (0 or more)")
	case len(pos) != 1:
		err = errors.New("prune takes one FILE (or - for stdin)")
	case *keep < 1:
		err = errors.New("--keep must be at least 1")
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
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	b, raw, name, err := readBody(pos[0], *dialect, stdin)
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	o.raw = raw
	out, rep, code, err := prune(b, o)
	if err != nil {
		errorf(stderr, "%s: %v", name, err)
		return 2
	}
	stdout.Write(out)
	io.WriteString(stdout, "\n")
	line, _ := json.Marshal(rep)
	fmt.Fprintf(stderr, "%s\n", line)
	return code
}

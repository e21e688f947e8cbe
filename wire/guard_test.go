package wire

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// unitsOf lists the units of a guarded body as lists of body indexes.
func unitsOf(t *testing.T, g *Guarded) [][]int {
	t.Helper()
	var out [][]int
	for _, u := range g.Context().Units() {
		var idx []int
		for _, id := range u.Messages {
			i, ok := g.Index(id)
			if !ok {
				t.Fatalf("unknown id %s", id)
			}
			idx = append(idx, i)
		}
		out = append(out, idx)
	}
	return out
}

func TestContextUnits(t *testing.T) {
	cases := []struct {
		name     string
		d        Dialect
		body     string
		units    [][]int
		pending  []pruneguard.CallID
		unpaired []Unpaired
		pinned   []int
		turn     int // the first message of the turn kept from eviction; 0 for none
	}{
		{
			name: "chat parallel batch is one unit, pending trailing batch",
			d:    OpenAIChat,
			body: `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},
				{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"b","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"b","content":"rb"},{"role":"tool","tool_call_id":"a","content":"ra"},
				{"role":"user","content":"again"},
				{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"c","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"a","content":"ra2"}]}`,
			units:   [][]int{{0}, {1}, {2, 3, 4}, {5}, {6, 7}},
			pending: []pruneguard.CallID{"6.1"},
			pinned:  []int{0, 1, 5},
		},
		{
			name: "chat result with no call is unpaired, unanswered call mid-body dropped",
			d:    OpenAIChat,
			body: `{"messages":[{"role":"user","content":"u"},{"role":"tool","tool_call_id":"x","content":"r"},
				{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]},
				{"role":"user","content":"v"}]}`,
			units:    [][]int{{0}, {1}, {2}, {3}},
			unpaired: []Unpaired{{Index: 1, CallID: "x", Result: true}, {Index: 2, CallID: "a"}},
			pinned:   []int{0, 3},
		},
		{
			name: "responses: consecutive calls coupled, reasoning coupled with what follows, reused id",
			d:    OpenAIResponses,
			body: `{"input":[{"role":"user","content":"u"},
				{"type":"reasoning","id":"rs1","summary":[]},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
				{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","output":"1"},
				{"type":"function_call_output","call_id":"c2","output":"2"},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","output":"3"},
				{"type":"message","role":"assistant","content":"done"}]}`,
			units:  [][]int{{0}, {1, 2, 3, 4, 5}, {6, 7}, {8}},
			pinned: []int{0},
			turn:   1,
		},
		{
			name: "anthropic: assistant turn with the user turn after it; first user pinned",
			d:    Anthropic,
			body: `{"messages":[{"role":"user","content":"u"},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}},{"type":"tool_use","id":"t2","name":"f","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t2","content":"b"}]},
				{"role":"assistant","content":"ok"},{"role":"user","content":"next"},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}]}`,
			units:   [][]int{{0}, {1, 2}, {3, 4}, {5}},
			pending: []pruneguard.CallID{"5.0"},
			pinned:  []int{0, 4},
		},
		{
			name: "gemini: calls paired by position without ids",
			d:    Gemini,
			body: `{"contents":[{"role":"user","parts":[{"text":"u"}]},
				{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"g","args":{}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}},{"functionResponse":{"name":"g","response":{}}}]},
				{"role":"model","parts":[{"text":"ok"}]}]}`,
			units:  [][]int{{0}, {1, 2}, {3}},
			pinned: []int{0},
		},
		{
			name: "bedrock: result answering no call of the previous turn is unpaired",
			d:    Bedrock,
			body: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}]},"messages":[{"role":"user","content":[{"text":"u"}]},
				{"role":"assistant","content":[{"toolUse":{"toolUseId":"a","name":"f","input":{}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"z","content":[{"text":"r"}]}}]},
				{"role":"assistant","content":[{"text":"ok"}]}]}`,
			units:    [][]int{{0}, {1, 2}, {3}},
			unpaired: []Unpaired{{Index: 1, CallID: "a"}, {Index: 2, CallID: "z", Result: true}},
			pinned:   []int{0},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Read([]byte(c.body), c.d)
			if err != nil {
				t.Fatal(err)
			}
			g, err := b.Bind(Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := unitsOf(t, g); !reflect.DeepEqual(got, c.units) {
				t.Errorf("units = %v, want %v", got, c.units)
			}
			if got := g.Context().Pending(); !reflect.DeepEqual(got, c.pending) {
				t.Errorf("pending = %v, want %v", got, c.pending)
			}
			if got := g.Unpaired(); !reflect.DeepEqual(got, c.unpaired) {
				t.Errorf("unpaired = %+v, want %+v", got, c.unpaired)
			}
			var pins []int
			for i := range b.Messages {
				if m, _ := g.Context().Message(ID(i)); m.Pinned {
					pins = append(pins, i)
				}
			}
			if !reflect.DeepEqual(pins, c.pinned) {
				t.Errorf("pinned = %v, want %v", pins, c.pinned)
			}
			want := c.turn
			if want == 0 {
				want = -1
			}
			if g.turn != want {
				t.Errorf("turn = %d, want %d", g.turn, want)
			}
		})
	}
}

// Applying a decision removes, stubs, withdraws schemas and writes
// tombstones into the system prompt.
func TestApplyDecision(t *testing.T) {
	body := `{"system":"be brief","tools":[{"name":"read","description":"Reads a file of the workspace and returns its lines, numbered, from the offset given, at most limit of them.","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"the file's path, relative to the workspace root"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}},
		{"name":"write","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"u"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"p":1}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"long long long long long long long long long long long long long long long long long long long long long long long long long"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"read","input":{"p":2}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"x"}]},
		{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}]}`
	b, err := Read([]byte(body), Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Bind(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, refs, err := g.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{ID(2)}, Evict: []pruneguard.MessageID{ID(3)}, DropSchemas: []string{"read"}})
	if err != nil {
		t.Fatalf("prune: %v %+v", err, refs)
	}
	if err := g.Apply(d); err != nil {
		t.Fatal(err)
	}
	out := g.Body()
	if len(out.Messages) != 5 || len(out.Tools()) != 1 || out.Tools()[0].Name != "write" {
		t.Fatalf("body: %d messages, tools %+v", len(out.Messages), out.Tools())
	}
	if v := out.Validate(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
	raw, _ := out.Marshal()
	if len(d.Tombstones) != 1 || !strings.Contains(string(raw), "schema was withdrawn") || !strings.Contains(string(raw), g.StubText()) {
		t.Errorf("tombstones %v, body %s", d.Tombstones, raw)
	}
	if Tokens(out, nil) >= Tokens(b, nil) {
		t.Errorf("tokens did not shrink")
	}
}

// The wire screen leaves out a unit whose eviction would break a rule the
// core does not know: Bedrock's first message must be a user message.
func TestWireRefusal(t *testing.T) {
	body := `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"text":"u"}]},{"role":"assistant","content":[{"text":"a"}]},{"role":"user","content":[{"text":"v"}]}]}`
	b, _ := Read([]byte(body), Bedrock)
	g, err := b.Bind(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Unpin and uncouple are not possible, so go under the core: a plan
	// naming the first message alone is refused as pinned by the core;
	// the screen is exercised on a Context whose pins were not set.
	g2 := *g
	g2.ctx = pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	for i, m := range b.Messages {
		g2.ctx.Append(pruneguard.Message{ID: ID(i), Role: pruneguard.Role(m.Role), Tokens: 5})
	}
	d, refs, err := g2.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{ID(0)}})
	if err != nil || len(d.Evict) != 0 || len(refs) != 1 || refs[0].Gate != "wire" || refs[0].Code != RuleBedrockFirstNotUser {
		t.Fatalf("decision %+v refusals %+v err %v", d, refs, err)
	}
}

func FuzzContext(f *testing.F) {
	for _, c := range ruleCases {
		f.Add(dialectIndex(c.d), []byte(c.body))
	}
	files, _ := filepath.Glob("../testdata/bodies/*.json")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(dialectIndex(Anthropic), data)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		d := Dialects[int(k)%len(Dialects)]
		b, err := Read(data, d)
		if err != nil {
			return
		}
		g, err := b.Bind(Options{Unannotated: Unannotated(k & 1)})
		if err != nil {
			t.Fatalf("Context: %v", err)
		}
		res, _, _ := g.Check(pruneguard.Guard{Budget: g.Context().Tokens() / 2, Policy: pruneguard.OldestFirst{}})
		_ = res
		out := g.Body()
		if nv := NewViolations(b.Validate(), out.Validate()); len(nv) > 0 {
			t.Fatalf("pruned body worse: %v", nv)
		}
		if len(b.Messages) > 0 && len(out.Messages) == 0 {
			t.Fatalf("pruned body has no history")
		}
		if Tokens(out, nil) > Tokens(b, nil) {
			t.Fatalf("pruned body grew from %d to %d tokens", Tokens(b, nil), Tokens(out, nil))
		}
		if _, err := out.Marshal(); err != nil {
			t.Fatalf("Marshal: %v", err)
		}
	})
}

// The screen never empties a body: every provider rejects an empty
// history, so the last unit stays and its eviction is refused. A body
// whose only message is the model's own (read by it) meets the screen; a
// body whose only message is a result meets the core first: nothing the
// model has not read yet goes.
func TestNeverEmpty(t *testing.T) {
	answers := map[Dialect]string{
		Anthropic:       `{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"text","text":"an answer long enough to matter"}]}]}`,
		OpenAIChat:      `{"messages":[{"role":"assistant","content":"an answer long enough to matter"}]}`,
		OpenAIResponses: `{"input":[{"type":"message","role":"assistant","content":"an answer long enough to matter"}]}`,
		Gemini:          `{"contents":[{"role":"model","parts":[{"text":"an answer long enough to matter"}]}]}`,
		Bedrock:         `{"messages":[{"role":"assistant","content":[{"text":"an answer long enough to matter"}]}]}`,
	}
	results := map[Dialect]string{
		Anthropic:       `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"some output here that is long enough"}]}]}`,
		OpenAIChat:      `{"messages":[{"role":"tool","tool_call_id":"c1","content":"some output here that is long enough"}]}`,
		OpenAIResponses: `{"input":[{"type":"function_call_output","call_id":"c1","output":"some output here that is long enough"}]}`,
		Gemini:          `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"r":"some output here that is long enough"}}}]}]}`,
		Bedrock:         `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"some output here that is long enough"}]}}]}]}`,
	}
	opts := Options{Unannotated: UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}
	for _, tc := range []struct {
		bodies     map[Dialect]string
		gate, code func(d Dialect) string
	}{
		{answers, func(Dialect) string { return "wire" }, func(d Dialect) string { return d.provider().emptyRule }},
		{results, func(Dialect) string { return "boundary" }, func(Dialect) string { return string(pruneguard.CodeUnread) }},
	} {
		for d, body := range tc.bodies {
			b, err := Read([]byte(body), d)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			g, err := b.Bind(opts)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			_, refs, _ := g.Check(pruneguard.Guard{Budget: 1})
			out := g.Body()
			if len(out.Messages) != 1 {
				t.Errorf("%s: %d messages left", d, len(out.Messages))
			}
			gate, code := tc.gate(d), tc.code(d)
			if !slices.ContainsFunc(refs, func(r Refusal) bool { return r.Gate == gate && r.Code == code }) {
				t.Errorf("%s: no %s/%s refusal in %+v", d, gate, code, refs)
			}
			if nv := NewViolations(b.Validate(), out.Validate()); len(nv) > 0 {
				t.Errorf("%s: worse: %v", d, nv)
			}
		}
	}
}

// A deferral for pending calls names the messages that made them, their
// indexes and units.
func TestDeferredNamesPendingCalls(t *testing.T) {
	body := `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"go go go go go go go go go"},
		{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`
	b, _ := Read([]byte(body), OpenAIChat)
	g, err := b.Bind(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, refs, _ := g.Check(pruneguard.Guard{Budget: 1})
	if res.Outcome != pruneguard.Deferred {
		t.Fatalf("outcome %v", res.Outcome)
	}
	var found bool
	for _, r := range refs {
		if r.Code != "deferred" {
			continue
		}
		found = true
		if !reflect.DeepEqual(r.Messages, []pruneguard.MessageID{ID(2)}) || !reflect.DeepEqual(r.Indexes, []int{2}) ||
			!reflect.DeepEqual(r.Units, []pruneguard.UnitID{"m2"}) {
			t.Errorf("deferred refusal %+v", r)
		}
	}
	if !found {
		t.Errorf("no deferred refusal in %+v", refs)
	}
}

// NewViolations ignores message indexes in both wordings, "messages.3"
// and "messages[3]", since removals shift them.
func TestNewViolationsIgnoresIndexes(t *testing.T) {
	before := []RuleViolation{{Rule: RuleChatDuplicateToolResponse, Index: 8,
		Message: "Invalid parameter: Duplicate value for 'tool_call_id' of 'a', in messages[7] and messages[8]."}}
	after := []RuleViolation{{Rule: RuleChatDuplicateToolResponse, Index: 3,
		Message: "Invalid parameter: Duplicate value for 'tool_call_id' of 'a', in messages[2] and messages[3]."}}
	if nv := NewViolations(before, after); len(nv) != 0 {
		t.Errorf("new violations %v", nv)
	}
}

// Check reports every refusal the guard met, not only those of the applied
// decisions and the last error.
func TestCheckReportsEveryRefusal(t *testing.T) {
	big := strings.Repeat("data ", 100)
	body := `{"model":"m","max_tokens":9,"system":"s","tools":[{"name":"read","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":false}},{"name":"search","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true}}],
		"messages":[{"role":"user","content":"task"},
		{"role":"assistant","content":[{"type":"tool_use","id":"w1","name":"search","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"w1","content":"` + big + `"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"r1","name":"read","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"r1","content":"short"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"w2","name":"search","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"w2","content":"` + big + `"}]},
		{"role":"assistant","content":"done"},{"role":"user","content":"next"}]}`
	b, err := Read([]byte(body), Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Bind(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The first round proposes the first search unit alone and is refused;
	// the second proposes the read unit with the second search unit, and
	// only the read unit goes. Each search unit is refused once, for its
	// call and its result.
	read, _ := g.Context().UnitOf(ID(3))
	res, refs, _ := g.Check(pruneguard.Guard{Budget: g.Context().Tokens() - read.Tokens - 20})
	if len(res.Refused) != 2 || len(res.Decisions) != 1 {
		t.Fatalf("no refusal met: %+v", res)
	}
	for _, v := range res.Refused {
		if !slices.ContainsFunc(refs, func(r Refusal) bool {
			return r.Gate == v.Gate.String() && r.Code == string(v.Code) && reflect.DeepEqual(r.Units, v.Units)
		}) {
			t.Errorf("refusal %v (units %v) missing from %+v", v, v.Units, refs)
		}
	}
}

// A schema withdrawn behind a tombstone longer than the schema would grow
// the body: the screen refuses the withdrawal (found by the generated
// sweep: prune --drop-unused-schemas wrote more tokens than it read).
func TestSchemaNotSmaller(t *testing.T) {
	body := `{"system":"be brief","tools":[{"name":"edit","input_schema":{"type":"object"}},
		{"name":"read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"u"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"edit","input":{"p":1}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},
		{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}]}`
	b, err := Read([]byte(body), Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []bool{false, true} {
		g, err := b.Bind(Options{})
		if err != nil {
			t.Fatal(err)
		}
		plan := pruneguard.Plan{DropSchemas: []string{"edit"}}
		var refs []Refusal
		if check {
			pol := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return plan })
			_, refs, _ = g.Check(pruneguard.Guard{Budget: 1, Policy: pol, Rounds: 2})
		} else {
			d, rs, err := g.Prune(plan)
			if err != nil {
				t.Fatal(err)
			}
			refs = rs
			if len(d.DropSchemas) > 0 || len(d.Tombstones) > 0 {
				t.Errorf("decision still withdraws %v behind %v", d.DropSchemas, d.Tombstones)
			}
			if err := g.Apply(d); err != nil {
				t.Fatal(err)
			}
		}
		if Tokens(g.Body(), nil) > Tokens(b, nil) {
			t.Errorf("check=%v: body grew from %d to %d tokens", check, Tokens(b, nil), Tokens(g.Body(), nil))
		}
		if !slices.ContainsFunc(refs, func(r Refusal) bool {
			return r.Code == CodeSchemaNotSmaller && slices.Equal(r.Tools, []string{"edit"})
		}) {
			t.Errorf("check=%v: refusals %+v", check, refs)
		}
	}
}

// The screen checks a decision's schema edits against the tool rules: a
// withdrawal that leaves tool_choice naming an undeclared tool, or an
// Anthropic history with tool blocks and an empty tools array, is refused
// with the rule as its code.
func TestScreenToolRules(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does ", 8)
	cases := []struct {
		name, body, drop, rule string
		d                      Dialect
	}{
		{"tool choice", `{"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[
			{"type":"function","function":{"name":"f","description":"` + desc + `"}},
			{"type":"function","function":{"name":"g","description":"` + desc + `"}}],
			"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`,
			"g", RuleChatUnknownToolChoice, OpenAIChat},
		{"last anthropic tool", `{"tools":[{"name":"f","description":"` + desc + `","input_schema":{"type":"object"}}],
			"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},
			{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`,
			"f", RuleAnthropicToolBlocksWithoutTools, Anthropic},
		{"bedrock tool choice", `{"toolConfig":{"toolChoice":{"tool":{"name":"g"}},"tools":[
			{"toolSpec":{"name":"f","description":"` + desc + `","inputSchema":{"json":{}}}},
			{"toolSpec":{"name":"g","description":"` + desc + `","inputSchema":{"json":{}}}}]},
			"messages":[{"role":"user","content":[{"text":"go"}]}]}`,
			"g", RuleBedrockUnknownToolChoice, Bedrock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Read([]byte(c.body), c.d)
			if err != nil {
				t.Fatal(err)
			}
			if v := b.Validate(); len(v) > 0 {
				t.Fatalf("input violations %v", v)
			}
			g, err := b.Bind(Options{})
			if err != nil {
				t.Fatal(err)
			}
			d, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{c.drop}})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(d.DropSchemas, c.drop) {
				t.Errorf("decision withdraws %q", c.drop)
			}
			if !slices.ContainsFunc(refs, func(r Refusal) bool {
				return r.Gate == "wire" && r.Code == c.rule && slices.Equal(r.Tools, []string{c.drop})
			}) {
				t.Errorf("refusals %+v", refs)
			}
			if err := g.Apply(d); err != nil {
				t.Fatal(err)
			}
			if v := g.Body().Validate(); len(v) > 0 {
				t.Errorf("pruned body: %v", v)
			}
		})
	}
}

// In Chat the tombstone line goes into a system message, not the body
// outside the messages: the size screen counts it there too (it used to
// count only the overhead, and let the body grow from 125 to 150 tokens).
func TestSchemaNotSmallerChat(t *testing.T) {
	body := `{"tools":[{"type":"function","function":{"name":"edit","parameters":{"type":"object"}}},
		{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],"messages":[{"role":"system","content":"be brief"},
		{"role":"user","content":"u"},
		{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"edit","arguments":"{\"p\":1}"}}]},
		{"role":"tool","tool_call_id":"t1","content":"ok"},
		{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}]}`
	b, err := Read([]byte(body), OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Bind(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"edit"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.DropSchemas) > 0 || len(d.Tombstones) > 0 {
		t.Errorf("decision still withdraws %v behind %v", d.DropSchemas, d.Tombstones)
	}
	if err := g.Apply(d); err != nil {
		t.Fatal(err)
	}
	if Tokens(g.Body(), nil) > Tokens(b, nil) {
		t.Errorf("body grew from %d to %d tokens", Tokens(b, nil), Tokens(g.Body(), nil))
	}
	if !slices.ContainsFunc(refs, func(r Refusal) bool {
		return r.Code == CodeSchemaNotSmaller && slices.Equal(r.Tools, []string{"edit"})
	}) {
		t.Errorf("refusals %+v", refs)
	}
}

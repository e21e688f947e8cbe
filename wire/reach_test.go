package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// proposeNothing is a policy that never proposes anything: the only room
// a check makes is the guard's own furthest safe prune.
var proposeNothing = pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return pruneguard.Plan{} })

// reconstructible makes every text message one the guard may let go.
var reconstructible = wire.Options{Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}}

// The guard's furthest safe prune, evicting whole units oldest first when
// the policy makes no room, goes through the wire screen: evicting the
// only unit (the model's answer, which nothing pins and the model has
// read) would leave the history empty, which every provider rejects, so
// its eviction is refused and never written.
func TestCheckFurthestSafePruneNeverEmpties(t *testing.T) {
	const out = "an answer long enough to matter"
	bodies := map[wire.Dialect]string{
		wire.Anthropic:       `{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"text","text":"` + out + `"}]}]}`,
		wire.OpenAIChat:      `{"messages":[{"role":"assistant","content":"` + out + `"}]}`,
		wire.OpenAIResponses: `{"input":[{"type":"message","role":"assistant","content":"` + out + `"}]}`,
		wire.Gemini:          `{"contents":[{"role":"model","parts":[{"text":"` + out + `"}]}]}`,
		wire.Bedrock:         `{"messages":[{"role":"assistant","content":[{"text":"` + out + `"}]}]}`,
	}
	rules := map[wire.Dialect]string{
		wire.Anthropic: wire.RuleAnthropicEmptyMessages, wire.OpenAIChat: wire.RuleChatEmptyMessages,
		wire.OpenAIResponses: wire.RuleResponsesEmptyInput, wire.Gemini: wire.RuleGeminiEmptyContents, wire.Bedrock: wire.RuleBedrockEmptyMessages,
	}
	for d, body := range bodies {
		t.Run(string(d), func(t *testing.T) {
			in, g := guarded(t, d, body, reconstructible)
			res, refs, err := g.Check(pruneguard.Guard{Budget: 1, Policy: proposeNothing})
			if err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)
			if len(res.Decisions) > 0 || len(g.Body().Messages) != 1 {
				t.Fatalf("%d decisions, %d messages left", len(res.Decisions), len(g.Body().Messages))
			}
			if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
				return r.Gate == "wire" && r.Code == rules[d] && slices.Equal(r.Indexes, []int{0})
			}) {
				t.Errorf("no wire %s refusal of message 0: %+v", rules[d], refs)
			}
		})
	}
}

// When the furthest safe prune names several units, the screen keeps
// those that may go and refuses the one that would empty the history:
// the rest is applied.
func TestCheckFurthestSafePruneKeepsLastUnit(t *testing.T) {
	long := strings.Repeat("words that cost tokens ", 20)
	body := `{"messages":[{"role":"assistant","content":"one ` + long + `"},{"role":"assistant","content":"two ` + long + `"},` +
		`{"role":"assistant","content":"three ` + long + `"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, reconstructible)
	res, refs, err := g.Check(pruneguard.Guard{Budget: 1, Policy: proposeNothing})
	if err != nil {
		t.Fatal(err)
	}
	noWorse(t, in, g)
	out := g.Body()
	if len(res.Decisions) == 0 || len(out.Messages) != 1 || !slices.Equal(out.Messages[0].Raw, in.Messages[2].Raw) {
		t.Fatalf("%d decisions, %d messages left, want the last one alone", len(res.Decisions), len(out.Messages))
	}
	if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
		return r.Gate == "wire" && r.Code == wire.RuleChatEmptyMessages && slices.Equal(r.Indexes, []int{2})
	}) {
		t.Errorf("no wire refusal of message 2: %+v", refs)
	}
}

// The hoarding rule acts before the session's policy is asked, so the
// policy's hiding of the turn the session keeps whole does not reach it:
// the session's screen refuses a hoarded result of that turn, and an
// older one goes.
func TestSessionHoardKeepsActiveTurn(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic,
		Guard:       pruneguard.Guard{Budget: 1 << 20, Hoard: pruneguard.HoardEvict},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible, HoardTokens: 50}})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(`{"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":1024},"system":"s","tools":[{"name":"f","input_schema":{"type":"object"}}]}`)))
	msgs := []string{
		`{"role":"user","content":"go"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"sig1"},{"type":"tool_use","id":"t1","name":"f","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + longText + `"}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"done","signature":"sig2"},{"type":"text","text":"ok"}]}`,
		`{"role":"user","content":"again"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"more","signature":"sig3"},{"type":"tool_use","id":"t2","name":"f","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"` + longText + `"}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"last","signature":"sig4"},{"type":"tool_use","id":"t3","name":"f","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"short"}]}`,
	}
	appendAll(t, s, msgs...)
	body, rep, err := s.Request()
	must(t, err)
	if !rep.Guarded || !slices.Contains(rep.Evicted, "m2") {
		t.Fatalf("the older hoarded result did not go: %+v", rep)
	}
	for _, m := range msgs[4:] {
		if !strings.Contains(string(body), m) {
			t.Errorf("the kept turn lost %s", m)
		}
	}
	if !slices.ContainsFunc(rep.Refusals, func(r wire.Refusal) bool { return r.Gate == "wire" && r.Code == wire.CodeActiveTurn }) {
		t.Errorf("no %s refusal: %+v", wire.CodeActiveTurn, rep.Refusals)
	}
}

// A Guarded body writes no pointer lines, so a guard that would spill is
// refused before it changes anything.
func TestGuardedCheckRefusesSpill(t *testing.T) {
	_, g := guarded(t, wire.OpenAIChat, `{"messages":[{"role":"user","content":"a long enough message to count"}]}`, reconstructible)
	before := g.Tokens()
	_, _, err := g.Check(pruneguard.Guard{Budget: 1, Spill: noSpill{}})
	var ce *pruneguard.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Guard.Spill" || !errors.Is(err, pruneguard.ErrConfig) {
		t.Fatalf("err %v, want a configuration error of Guard.Spill", err)
	}
	if g.Tokens() != before || len(g.Body().Messages) != 1 {
		t.Errorf("the body changed")
	}
}

type noSpill struct{}

func (noSpill) SpillMessages(context.Context, []pruneguard.Message) (pruneguard.Pointer, error) {
	return pruneguard.Pointer{}, errors.New("no store")
}
func (noSpill) Resolvable(pruneguard.Pointer) bool { return false }

// A session whose policy proposes nothing is pruned by the guard's
// furthest safe prune, behind the session's screen: the body the session
// writes breaks no rule its history kept, and the turn it keeps whole
// (the last user message and, with reasoning, what follows) stays.
func TestSessionFurthestSafePruneIsScreened(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1, Policy: proposeNothing},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(`{"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":1024},"system":"s","tools":[{"name":"f","input_schema":{"type":"object"}}]}`)))
	msgs := []string{
		`{"role":"user","content":"go"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"sig1"},{"type":"tool_use","id":"t1","name":"f","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + longText + `"}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"done","signature":"sig2"},{"type":"text","text":"ok"}]}`,
		`{"role":"user","content":"again"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"more","signature":"sig3"},{"type":"tool_use","id":"t2","name":"f","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"` + longText + `"}]}`,
	}
	appendAll(t, s, msgs...)
	var whole strings.Builder
	s.WriteTo(&whole)
	body, rep, err := s.Request()
	must(t, err)
	if len(rep.Evicted) == 0 || !rep.Guarded {
		t.Fatalf("nothing evicted: %+v", rep)
	}
	if nv := wire.NewViolations(validate(t, []byte(whole.String())), validate(t, body)); len(nv) > 0 {
		t.Fatalf("the session wrote a body breaking %v:\n%s", nv, body)
	}
	for _, m := range msgs[4:] {
		if !strings.Contains(string(body), m) {
			t.Errorf("the kept turn lost %s", m)
		}
	}
}

func validate(t *testing.T, body []byte) []wire.Violation {
	t.Helper()
	v, err := wire.Validate(body, wire.Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A session's furthest safe prune never empties the history either: with
// no user message to keep, the screen refuses the last unit.
func TestSessionFurthestSafePruneNeverEmpties(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1, Policy: proposeNothing},
		Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(`{"model":"m"}`)))
	long := strings.Repeat("words that cost tokens ", 20)
	appendAll(t, s, `{"role":"assistant","content":"one `+long+`"}`, `{"role":"assistant","content":"two `+long+`"}`,
		`{"role":"assistant","content":"three `+long+`"}`)
	body, rep, err := s.Request()
	must(t, err)
	b := mustRead(t, body, wire.OpenAIChat)
	if len(b.Messages) != 1 || !strings.Contains(string(b.Messages[0].Raw), "three") || len(rep.Evicted) != 2 {
		t.Fatalf("evicted %v, body %s", rep.Evicted, body)
	}
	if !slices.ContainsFunc(rep.Refusals, func(r wire.Refusal) bool { return r.Gate == "wire" && r.Code == wire.RuleChatEmptyMessages }) {
		t.Errorf("no empty-messages refusal: %+v", rep.Refusals)
	}
}

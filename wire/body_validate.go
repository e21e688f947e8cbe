package wire

import (
	"fmt"
)

// RuleViolation is one structural problem a provider would reject with HTTP
// 400 (or, for the pending-calls rules, a batch of calls still waiting for
// results).
//
// The zero RuleViolation names no rule; [Validate] returns them filled in.
type RuleViolation struct {
	// Rule is a stable code such as "anthropic/tool-use-without-result".
	Rule string
	// Index is the index of the offending message, item or content turn;
	// 0 for an empty history.
	Index int
	// Message is the provider's own error wording with ids filled in.
	Message string
}

// String formats the violation as "rule at index: message".
func (v RuleViolation) String() string {
	return fmt.Sprintf("%s at %d: %s", v.Rule, v.Index, v.Message)
}

// Violation is [RuleViolation] under its former name.
//
// Deprecated: use [RuleViolation]. The name Violation is the core's
// ([pruneguard.Violation]), a refusal of the gates, not a provider rule
// broken.
type Violation = RuleViolation

// violations collects the violations a validator finds.
type violations []RuleViolation

// add records a violation of rule at index i with the formatted wording.
func (v *violations) add(rule string, i int, format string, args ...any) {
	*v = append(*v, RuleViolation{Rule: rule, Index: i, Message: fmt.Sprintf(format, args...)})
}

// Validate reads body as dialect d (Detect when d is empty) and lists its
// violations; see Body.Validate. The error is a reading error.
func Validate(body []byte, d Dialect) ([]RuleViolation, error) {
	b, err := readBody(body, d)
	if err != nil {
		return nil, err
	}
	return b.Validate(), nil
}

// Validate lists every structural violation of the body that its provider
// would reject, ordered by index and then rule. Pending calls at the end of
// the body are reported under the "<dialect>/pending-calls" rule; callers
// that send a history ending on calls on purpose can skip those.
func (b *Body) Validate() []RuleViolation {
	if b == nil || b.top == nil {
		return nil
	}
	ms := make([]*facts, len(b.facts))
	for i := range b.facts {
		ms[i] = &b.facts[i]
	}
	return validateAll(b, ms, b.toolState())
}

// validateAll lists the violations of a body with messages ms and the
// tools state ts, ordered by index and then rule.
func validateAll(b *Body, ms []*facts, ts *toolState) []RuleViolation {
	p := b.provider()
	if len(ms) == 0 {
		return []RuleViolation{{Rule: p.emptyRule, Index: 0, Message: p.emptyWording}}
	}
	var v violations
	sc := scopeOf(b, ms, ts)
	v = validateMessages(b, ms, sc, v)
	v = append(v, validateTools(p, ms, ts)...)
	sortViolations(v)
	return v
}

// scope is what a validator needs to know beyond the messages it is
// given, so that it can check a window of the body as well as all of it.
type scope struct {
	off     int  // the index in the body of the first message given
	atStart bool // the first message given is the body's first
	atEnd   bool // the last message given is the body's last

	// Facts of the whole body.
	anyThinking bool // Anthropic: some message carries thinking
	signedBody  bool // Gemini: some call carries a thought signature
	lastUser    int  // Gemini: the index of the last real user content, or -1
	continues   bool // Responses: the input continues what the server holds
	barrier     int  // Responses: the index of the last output or user message, or -1
	tools       *toolState
}

// scopeOf is the scope of a whole body with messages ms.
func scopeOf(b *Body, ms []*facts, ts *toolState) scope {
	sc := scope{atStart: true, atEnd: true, lastUser: -1, barrier: -1, tools: ts, continues: b.continues}
	p := b.provider()
	for i, m := range ms {
		sc.anyThinking = sc.anyThinking || m.reasoning
		sc.signedBody = sc.signedBody || m.signedCall()
		if p.realUser(m) {
			sc.lastUser = i
		}
		if m.nresults > 0 || isUserMessage(m) {
			sc.barrier = i
		}
		sc.continues = sc.continues || m.typ == "item_reference"
	}
	return sc
}

// validateMessages adds to v the violations of the history rules found
// in ms.
func validateMessages(b *Body, ms []*facts, sc scope, v violations) violations {
	return b.provider().validate(b, ms, sc, v)
}

// callIDs returns the ids of the calls of m, in order.
func callIDs(m *facts) []string {
	ids := make([]string, 0, m.ncalls)
	m.eachCall(func(_ int, p *fpart) { ids = append(ids, p.id) })
	return ids
}

// missingIDs returns the ids not in have, in order, without repeats.
func missingIDs(ids []string, have map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !have[id] && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

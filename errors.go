package pruneguard

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of the gates: the three every [Context.Prune] runs (commit
// boundary, evict-or-tombstone, regenerability) and a [Guard]'s [Screen].
// A refused [Context.Prune] returns a [*PruneError] whose violations each
// match one of these with [errors.Is].
//
// The text of every error of this package is lower case and starts with
// "pruneguard: ". Do not depend on the text; use the fields.
var (
	// ErrBoundary: the plan would cut a unit, touch a streaming message or
	// a unit with a pending call, or evict a pinned message.
	ErrBoundary = errors.New("pruneguard: commit boundary")
	// ErrSchema: the plan would withdraw a tool's schema while arguments of
	// earlier calls to it stay in the prompt, and no tombstone can be used.
	ErrSchema = errors.New("pruneguard: evict-or-tombstone")
	// ErrRegen: the plan would evict content that cannot be obtained again.
	ErrRegen = errors.New("pruneguard: regenerability")
	// ErrScreen: a [Guard]'s [Screen] refused part of a decision, for a
	// rule the gates do not know (a provider's request rules).
	ErrScreen = errors.New("pruneguard: screen")
)

// States that are not violations of a plan.
var (
	// ErrDeferred: the Context is not at a commit boundary (a call is
	// pending or a message is streaming), so no prune may happen now. This
	// is a state of its own, distinct from being over budget; see
	// [*DeferredError].
	ErrDeferred = errors.New("pruneguard: prune deferred")
	// ErrCeiling: the Context is above the hard ceiling and cannot be
	// brought under it safely; see [*CeilingError].
	ErrCeiling = errors.New("pruneguard: hard ceiling exceeded")
	// ErrStaleDecision: [Context.Apply] was given a decision that events
	// since [Context.Prune] have invalidated; see [*StaleError].
	ErrStaleDecision = errors.New("pruneguard: stale decision")
)

// Input errors. Each is wrapped in an [*InputError] naming the operation
// and the offending id, and every one of them also matches ErrInvalidInput.
var (
	ErrInvalidInput     = errors.New("pruneguard: invalid input")
	ErrEmptyID          = errors.New("pruneguard: empty id")
	ErrDuplicateMessage = errors.New("pruneguard: duplicate message id")
	ErrUnknownMessage   = errors.New("pruneguard: unknown message")
	ErrNegativeTokens   = errors.New("pruneguard: negative token count")
	ErrUnknownCall      = errors.New("pruneguard: result for a call the context never saw")
	ErrPrunedCall       = errors.New("pruneguard: result for a call that was pruned")
	ErrDuplicateCall    = errors.New("pruneguard: call id already pending")
	ErrDuplicateResult  = errors.New("pruneguard: second result for one call")
	ErrClosedMessage    = errors.New("pruneguard: message is not open")
	ErrUnknownTool      = errors.New("pruneguard: unknown tool")
	ErrUnknownStep      = errors.New("pruneguard: unknown step")
	ErrBadSchema        = errors.New("pruneguard: schema is not valid JSON")
	ErrNotResult        = errors.New("pruneguard: only tool results can be stubbed")
	ErrForeignDecision  = errors.New("pruneguard: decision belongs to another context or was already applied")
	// ErrOpenMessage: the message is still streaming, so its content is
	// not final: it cannot be spilled, nor its call abandoned.
	ErrOpenMessage = errors.New("pruneguard: message is still streaming")
	// ErrAbandonedCall: a result for a call the runtime abandoned
	// ([Context.Abandon]), or a call abandoned twice.
	ErrAbandonedCall = errors.New("pruneguard: call was abandoned")
	// ErrAnsweredCall: [Context.Abandon] named a call that already has a
	// closed result, or that the provider ran in its own message.
	ErrAnsweredCall = errors.New("pruneguard: call already has a result")
	// ErrTokenOverflow: token counts that cannot be summed. The event
	// (or decision) would take what the Context holds
	// ([Context.Tokens]) past the largest int, where it would wrap round
	// to a negative total that a guard reads as under budget.
	ErrTokenOverflow = errors.New("pruneguard: token counts overflow the context's total")
)

// InputError reports an event or plan that the Context refused as
// malformed. The Context is unchanged.
//
// The zero InputError, with no Err, is not a valid error; the package never
// returns one.
type InputError struct {
	Op  string // the method or plan field, e.g. "append", "plan.evict"
	ID  string // the offending message, call, tool or step id
	Err error  // one of the input sentinels, e.g. ErrDuplicateResult
}

func inputErr(op, id string, err error) *InputError { return &InputError{Op: op, ID: id, Err: err} }

// Error returns the error's text: lower case, prefixed with the package name.
func (e *InputError) Error() string {
	what := strings.TrimPrefix(e.Err.Error(), "pruneguard: ")
	if e.ID == "" {
		return fmt.Sprintf("pruneguard: %s: %s", e.Op, what)
	}
	return fmt.Sprintf("pruneguard: %s %q: %s", e.Op, e.ID, what)
}

// Unwrap returns the specific sentinel.
func (e *InputError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrInvalidInput]; the specific sentinel is
// matched through Unwrap.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// Gate names what refused part of a plan: one of the three gates
// [Context.Prune] runs, or a [Guard]'s [Screen].
//
// The zero Gate names no gate.
type Gate int

// The gates, in the order Prune reports them.
const (
	GateBoundary Gate = iota + 1 // commit boundary
	GateSchema                   // evict-or-tombstone
	GateRegen                    // regenerability oracle
	GateScreen                   // a Guard's Screen: rules beyond the gates
)

// String returns the name of the gate.
func (g Gate) String() string {
	switch g {
	case GateBoundary:
		return "boundary"
	case GateSchema:
		return "schema"
	case GateRegen:
		return "regen"
	case GateScreen:
		return "screen"
	}
	return fmt.Sprintf("gate(%d)", int(g))
}

func (g Gate) sentinel() error {
	switch g {
	case GateBoundary:
		return ErrBoundary
	case GateSchema:
		return ErrSchema
	case GateScreen:
		return ErrScreen
	}
	return ErrRegen
}

// Code says why a gate objected. The set is closed; new codes may be added.
//
// The zero Code, empty, is no reason of any gate.
type Code string

// Reasons of the commit-boundary gate.
const (
	CodeOpen    Code = "open-message" // a message of the unit is still streaming
	CodePending Code = "pending-call" // a call of the unit has no complete result
	CodeSplit   Code = "split-unit"   // the plan names only part of a unit
	CodePinned  Code = "pinned"       // the unit holds a pinned message
	// CodeUnread: a message of the unit came after the model's last
	// message ([Context.Unread]). No request has shown it to the model
	// yet: the unit is as much in flight as one waiting for a result,
	// and stays until the model's next message follows it.
	CodeUnread Code = "unread"
	CodeGap    Code = "summary-gap" // a message that stays sits inside a summary's run
)

// Reasons of the evict-or-tombstone gate.
const (
	// CodeGhostTool: a mutation tool's schema would leave while arguments of
	// its earlier calls stay, and no tombstone may be inserted for it.
	CodeGhostTool Code = "ghost-tool"
	// CodeRequiredTool: a message that requires a tool's schema
	// ([Message.Requires]) would stay, or stays, while the schema is
	// withdrawn or compressed with losses. Tombstones do not help: the
	// provider refuses the message without the schema.
	CodeRequiredTool Code = "required-tool"
)

// Reasons of the regenerability gate.
const (
	CodeNegative       Code = "negative-result"      // records that a check came out negative
	CodeTransient      Code = "transient-state"      // an observation of state that no longer exists
	CodeSecret         Code = "one-time-secret"      // a credential, nonce or token seen once
	CodeUserConstraint Code = "sole-user-constraint" // the only record of a user's constraint
	CodeReferenced     Code = "referenced"           // a planned step names the message as input
	CodeIrreducible    Code = "irreducible"          // its class is irreducible (tool or oracle)
	CodePointerLost    Code = "pointer-unresolvable" // durable class without a resolvable pointer
	// CodeMissingFact: a summary drops facts of a message it replaces
	// (listed in [Violation.Facts]), and carries no pointer to it.
	CodeMissingFact Code = "missing-fact"
	// CodeSummaryGrows: a summary holds as many tokens as the messages it
	// replaces, or more.
	CodeSummaryGrows Code = "summary-not-smaller"
)

// Violation is one objection of one gate to a plan. It matches the gate's
// sentinel ([ErrBoundary], [ErrSchema] or [ErrRegen]) with [errors.Is].
// An objection to evicting a unit names the unit and every message of it
// that the objection holds: the regenerability gate makes one per unit
// and code, and a [Guard]'s sweep one per run of units next to each other
// that one code alone holds, naming each unit and its messages held, in
// order.
//
// The zero Violation names no gate; the package returns violations filled
// in, and a [Screen] fills in its own (Gate GateScreen, a Code, and what it
// refuses).
type Violation struct {
	Gate     Gate
	Code     Code
	Units    []UnitID
	Messages []MessageID
	Tools    []string
	Calls    []CallID
	Steps    []StepID // planned steps holding the messages (CodeReferenced)
	Facts    []Fact   // the facts a summary drops (CodeMissingFact)
	pos      uint64   // transcript position of the first message, for ordering
	seen     seenAt   // the unit as Prune saw it, for the guard's memory
	one      bool     // pos is the place of its first message, as seen saw it
	us       []int32  // the units named, as a sweep saw them (seen.comp), for a violation naming several
}

// Error returns the error's text: lower case, prefixed with the package name.
func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pruneguard: %s gate: %s", v.Gate, v.Code)
	if len(v.Units) > 0 {
		fmt.Fprintf(&b, " unit %s", joinIDs(v.Units))
	}
	if len(v.Messages) > 0 {
		fmt.Fprintf(&b, " messages %s", joinIDs(v.Messages))
	}
	if len(v.Calls) > 0 {
		fmt.Fprintf(&b, " calls %s", joinIDs(v.Calls))
	}
	if len(v.Tools) > 0 {
		fmt.Fprintf(&b, " tools %s", joinIDs(v.Tools))
	}
	if len(v.Steps) > 0 {
		fmt.Fprintf(&b, " steps %s", joinIDs(v.Steps))
	}
	return b.String()
}

// Unwrap returns the gate's sentinel.
func (v *Violation) Unwrap() error { return v.Gate.sentinel() }

// same reports whether v and w make the same objection.
func (v *Violation) same(w *Violation) bool {
	return v.Gate == w.Gate && v.Code == w.Code && slices.Equal(v.Units, w.Units) &&
		slices.Equal(v.Messages, w.Messages) && slices.Equal(v.Tools, w.Tools)
}

func joinIDs[T ~string](ids []T) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ",")
}

// PruneError is what [Context.Prune] returns when any gate refuses the
// plan. It holds every violation of the plan, ordered by gate, then by
// position in the transcript, then by code. errors.Is and errors.As see
// each violation, so errors.Is(err, ErrRegen) reports whether the
// regenerability gate was among those that refused.
//
// The zero PruneError holds no violation; the package never returns one.
type PruneError struct {
	Violations []*Violation
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *PruneError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = strings.TrimPrefix(v.Error(), "pruneguard: ")
	}
	noun := "violations"
	if len(e.Violations) == 1 {
		noun = "violation"
	}
	return fmt.Sprintf("pruneguard: prune refused (%d %s): %s", len(e.Violations), noun, strings.Join(parts, "; "))
}

// Unwrap returns the violations.
func (e *PruneError) Unwrap() []error {
	out := make([]error, len(e.Violations))
	for i, v := range e.Violations {
		out[i] = v
	}
	return out
}

// sortViolations orders vs by gate, transcript position and code,
// keeping the order of ties. Input already in order costs one pass.
func sortViolations(vs []*Violation) {
	if !slices.IsSortedFunc(vs, violationOrder) {
		slices.SortStableFunc(vs, violationOrder)
	}
}

func violationOrder(a, b *Violation) int {
	if a.Gate != b.Gate {
		return int(a.Gate) - int(b.Gate)
	}
	if d := cmp.Compare(a.pos, b.pos); d != 0 {
		return d
	}
	return strings.Compare(string(a.Code), string(b.Code))
}

// DeferredError reports that the Context is not at a commit boundary.
// It matches [ErrDeferred].
//
// The zero DeferredError names nothing in flight; the package returns it
// filled in.
type DeferredError struct {
	Pending []CallID    // calls waiting for a complete result
	Open    []MessageID // messages still streaming
	Units   []UnitID    // units the plan named that are in flight (relaxed mode)
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *DeferredError) Error() string {
	var b strings.Builder
	b.WriteString("pruneguard: prune deferred:")
	if len(e.Pending) > 0 {
		fmt.Fprintf(&b, " pending calls %s", joinIDs(e.Pending))
	}
	if len(e.Open) > 0 {
		fmt.Fprintf(&b, " open messages %s", joinIDs(e.Open))
	}
	if len(e.Units) > 0 {
		fmt.Fprintf(&b, " units in flight %s", joinIDs(e.Units))
	}
	return b.String()
}

// Unwrap returns [ErrDeferred].
func (e *DeferredError) Unwrap() error { return ErrDeferred }

// CeilingError reports that the Context holds more tokens than the hard
// ceiling allows and no safe prune brings it under. It matches
// [ErrCeiling], and [ErrDeferred] too when deferral was the cause. From
// [Guard.Check] it may come after decisions were applied: the Result's
// Outcome is then Pruned and its Decisions lists them.
//
// The zero CeilingError reports a ceiling of zero and no cause; the package
// returns it filled in.
type CeilingError struct {
	Tokens  int // tokens held after the furthest safe prune
	Ceiling int
	// Cause is the *DeferredError or *PruneError that stood in the way,
	// or nil when the policy proposed nothing more.
	Cause error
	// Held says what fills the prompt that no prune could touch (see
	// [Held]); the text lists it, largest first.
	Held Held
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *CeilingError) Error() string {
	s := fmt.Sprintf("pruneguard: hard ceiling exceeded: %d tokens, ceiling %d", e.Tokens, e.Ceiling)
	if !e.Held.IsZero() {
		s += " (held: " + e.Held.String() + ")"
	}
	if e.Cause != nil {
		s += ": " + strings.TrimPrefix(e.Cause.Error(), "pruneguard: ")
	}
	return s
}

// Unwrap returns [ErrCeiling] and the cause.
func (e *CeilingError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrCeiling}
	}
	return []error{ErrCeiling, e.Cause}
}

// StaleError reports why [Context.Apply] refused a decision: events since
// [Context.Prune] changed units it names (a stream kept writing, a result
// arrived, units were coupled) or the tools and steps it consulted, or a
// spill pointer that let a message go no longer resolves. It matches
// [ErrStaleDecision].
//
// The zero StaleError names no unit and no reason; the package returns it
// filled in.
type StaleError struct {
	Units  []UnitID
	Reason string
	// Messages names the evicted or stubbed messages whose pointer no
	// longer resolves, when that is why the decision is stale.
	Messages []MessageID
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *StaleError) Error() string {
	s := "pruneguard: stale decision: " + e.Reason
	if len(e.Units) > 0 {
		s += ": units " + joinIDs(e.Units)
	}
	if len(e.Messages) > 0 {
		s += ": messages " + joinIDs(e.Messages)
	}
	return s
}

// Unwrap returns [ErrStaleDecision].
func (e *StaleError) Unwrap() error { return ErrStaleDecision }

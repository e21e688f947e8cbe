package policytest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// The requirements. A policy that breaks one is wrong: the gates or the
// guard would refuse or drop what its plan names, it proposes what it
// says it keeps, or the guard cannot rely on it.
var (
	// ErrUnknown: the plan names a message, tool or schema the Context
	// does not hold, or is otherwise malformed: Prune answers it with a
	// [*pruneguard.InputError], and so does [pruneguard.Guard.Check].
	ErrUnknown = errors.New("policytest: names what the Context does not hold")
	// ErrNotResult: the plan stubs a message that answers no call.
	ErrNotResult = errors.New("policytest: stubs a message that is not a tool result")
	// ErrStubbed: the plan stubs a result already stubbed, which frees
	// nothing; a guard applies such a plan round after round.
	ErrStubbed = errors.New("policytest: stubs a result already stubbed")
	// ErrPinned: the plan names a message of a unit holding a pinned
	// message ([pruneguard.Unit.Pinned]). In a snapshot, Entry.Pinned
	// and Entry.Open describe the message alone: look at every entry of
	// a unit.
	ErrPinned = errors.New("policytest: names a pinned unit")
	// ErrInFlight: the plan names a message of a unit with a pending call
	// or a streaming message ([pruneguard.Unit.Pending],
	// [pruneguard.Unit.Open]).
	ErrInFlight = errors.New("policytest: names a unit in flight")
	// ErrUnread: the plan names a message of a unit the model has not
	// read yet ([pruneguard.Unit.Unread]).
	ErrUnread = errors.New("policytest: names a unit the model has not read")
	// ErrHidden: the plan evicts a unit the View hides
	// ([pruneguard.View.Hidden]: hidden through [pruneguard.View.Hide],
	// as a guard hides the units the gates refused in a check, or
	// remembered as refused eviction at an earlier check), or stubs a
	// result in a unit hidden through Hide or, behind a guard, one whose
	// stub the guard refused earlier in the check. The View's walks and
	// its snapshot pass over hidden units, and the walks of whole and
	// largest results over refused stubs.
	ErrHidden = errors.New("policytest: names what the View hides")
	// ErrKept: a policy that is a [pruneguard.Keeper] names the message
	// its Kept returns or a later one, or evicts a unit holding one; or
	// Kept names a message the Context does not hold.
	ErrKept = errors.New("policytest: names what the policy keeps")
	// ErrUnstable: the same Context and need gave different plans, from
	// one policy asked twice or from two policies newPolicy made.
	ErrUnstable = errors.New("policytest: the same Context and need give different plans")
	// ErrPanic: Propose or Kept panicked.
	ErrPanic = errors.New("policytest: panics")
	// ErrStalls: behind a [pruneguard.Guard] the check ended over a
	// budget the guard reaches on its own (with a policy that proposes
	// nothing), though the policy hid nothing through its View: its
	// plans spent the check's rounds, or deferred it, without making
	// room.
	ErrStalls = errors.New("policytest: keeps a guard from its budget")
)

// The warnings. A plan that draws one is safe, and the guard copes with
// it, but the policy may be doing less well than it could; some
// policies do so on purpose.
var (
	// ErrIdle: asked for a positive need, the policy proposed nothing
	// while the View offered a unit that may go, holding a whole tool
	// result, before anything the policy keeps. The guard then goes on
	// with its own furthest safe prune. A policy that takes only some
	// kinds of content (results over a size, say) draws it on purpose.
	ErrIdle = errors.New("policytest: proposes nothing while something may go")
	// ErrOvershoot: the plan would free the need without its largest
	// proposal: it went on proposing once it had proposed enough. A
	// proposal is a unit it evicts (its tokens) or a result it stubs (its
	// tokens less a default stub's). [pruneguard.KeepLastToolUses]
	// ignores the need by design, and draws it.
	ErrOvershoot = errors.New("policytest: proposes more than asked")
	// ErrCost: on a Context of 100,000 messages and a need a few units
	// fill, Propose allocated, for each message it proposed, more than
	// ten times what it did on a Context of 1,000: it reads the whole
	// Context, as a [pruneguard.PolicyFunc] does by design.
	ErrCost = errors.New("policytest: costs in proportion to the Context")
	// ErrStubRefused: the plan stubs a result a guard remembers as
	// refused a stub ([pruneguard.Context.Refusals]). The guard takes it
	// out of the plan before the gates see it, and a plan left empty
	// ends the policy's part of the check. The View's walks of whole and
	// largest results pass over such results; a snapshot cannot tell
	// them from others, hence a warning.
	ErrStubRefused = errors.New("policytest: stubs a result refused a stub")
)

// A Finding is one way a policy fell short: a requirement its plans
// broke, or a warning. It matches its check with errors.Is. It is a
// plain value.
type Finding struct {
	// Case names the Context the policy was asked about.
	Case string
	// Need is the number of tokens the policy was asked for.
	Need int
	// Err is the check: one of this package's Err values.
	Err error
	// Warning says the check is a warning, not a requirement.
	Warning bool
	// Messages are the messages at fault, as the plan named them.
	Messages []pruneguard.MessageID
	// Detail says what went wrong.
	Detail string
}

// Error describes the finding.
func (f *Finding) Error() string {
	var b strings.Builder
	b.WriteString(f.Err.Error())
	if f.Warning {
		b.WriteString(" (warning)")
	}
	fmt.Fprintf(&b, ": case %q, need %d", f.Case, f.Need)
	if f.Detail != "" {
		b.WriteString(": ")
		b.WriteString(f.Detail)
	}
	if n := len(f.Messages); n > 0 {
		const shown = 8
		ids := make([]string, min(n, shown))
		for i := range ids {
			ids[i] = string(f.Messages[i])
		}
		fmt.Fprintf(&b, ": %s", strings.Join(ids, " "))
		if n > shown {
			fmt.Fprintf(&b, " and %d more", n-shown)
		}
	}
	return b.String()
}

// Unwrap returns f.Err.
func (f *Finding) Unwrap() error { return f.Err }

// A check is one part of the suite: the asks of one Context, or the
// cost.
type check struct {
	name string
	run  func(newPolicy func() pruneguard.Policy) []*Finding
}

func checks() []check {
	out := make([]check, 0, len(scenarios)+1)
	for _, sc := range scenarios {
		out = append(out, check{name: sc.name, run: sc.run})
	}
	return append(out, check{name: "many units", run: costs})
}

// Findings runs every check, each ask of a policy on a new one from
// newPolicy, and returns what it found, requirements and warnings, in
// the order of the checks.
//
// Findings, [TestPolicy] and [Run] may be called from several goroutines
// at once. The check of cost counts what every goroutine allocates while
// the policy proposes, so that heavy allocation elsewhere meanwhile may
// raise [ErrCost] falsely.
func Findings(newPolicy func() pruneguard.Policy) []*Finding {
	var out []*Finding
	for _, c := range checks() {
		out = append(out, c.run(newPolicy)...)
	}
	return out
}

// TestPolicy runs every check and returns nil when the policy's plans
// meet every requirement, or an error joining a [*Finding] for each
// requirement broken, one per line. Warnings are left out: see
// [Findings] and [Run].
func TestPolicy(newPolicy func() pruneguard.Policy) error {
	var errs []error
	for _, f := range Findings(newPolicy) {
		if !f.Warning {
			errs = append(errs, f)
		}
	}
	return errors.Join(errs...)
}

// Run runs every check as a subtest of t, named after its Context: a
// broken requirement fails the subtest, a warning is logged.
func Run(t *testing.T, newPolicy func(t *testing.T) pruneguard.Policy) {
	t.Helper()
	for _, c := range checks() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			for _, f := range c.run(func() pruneguard.Policy { return newPolicy(t) }) {
				if f.Warning {
					t.Log(f)
				} else {
					t.Error(f)
				}
			}
		})
	}
}

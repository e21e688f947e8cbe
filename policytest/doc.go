// Package policytest checks that a [pruneguard.Policy] keeps the policy
// contract, in the manner of testing/slogtest: [TestPolicy] returns an
// error joining every failure, [Run] reports each Context as a subtest,
// and [Findings] returns the warnings too.
//
// Call it from a test of your policy:
//
//	func TestMyPolicy(t *testing.T) {
//		policytest.Run(t, func(*testing.T) pruneguard.Policy { return MyPolicy{} })
//	}
//
// or from anywhere, with TestPolicy. The suite makes a new policy with
// newPolicy for each Context and need, and for each guard's check, so
// that a policy with state starts afresh; it asks the same policy again
// to see that the plan does not change, and a guard asks it round after
// round.
//
// # The Contexts
//
// The policy is asked, for a need of one token, an eighth of the
// Context and more than it holds, about: an empty Context and the zero
// View; a conversation without tools; a long run of tool calls with
// results of many sizes; parallel batches answered out of order; pinned
// units, the oldest and the one with the largest result among them;
// units in flight (a pending call, a batch answered in part, a result
// and the model's last message streaming), in the relaxed mode, where a
// guard asks its policy while calls are in flight; results and a user
// message after the model's last message; stubbed results; units hidden
// through the View, as a guard hides those the gates refused in a check;
// refusals a guard remembered from an earlier check (units refused
// eviction, results refused a stub); units coupled across the
// transcript; and a Context of 100,000 messages.
//
// # Requirements
//
// A plan must:
//
//   - name only messages, tools and schemas the Context holds, and stub
//     only tool results not yet stubbed ([ErrUnknown], [ErrNotResult],
//     [ErrStubbed]);
//   - name no message of a unit that is pinned, in flight or unread
//     ([ErrPinned], [ErrInFlight], [ErrUnread]);
//   - evict no unit the View hides, and stub no result in a unit hidden
//     through [pruneguard.View.Hide] nor one whose stub the guard refused
//     earlier in the check ([ErrHidden]);
//   - if the policy is a [pruneguard.Keeper], name neither the message
//     Kept returns nor a later one, nor evict a unit holding one
//     ([ErrKept]);
//   - be the same for the same Context and need, from the same policy
//     asked again or a new one (as sets: the order of names does not
//     count) ([ErrUnstable]); and Propose and Kept must not panic
//     ([ErrPanic]).
//
// Behind a [pruneguard.Guard] whose budget asks for a quarter of each
// Context, and whose Screen refuses the first unit of its first decision
// once (so that the guard asks again however much the first plan frees),
// every plan the guard asks for is checked as the first was, against a
// View that now hides what the gates refused in the check; and
// the check must reach the budget whenever the guard reaches it with a
// policy that proposes nothing, unless the policy hid units through its
// View ([ErrStalls]).
//
// What the first three rules forbid, the gates refuse, or the guard
// takes out of the plan before the gates see it; a conforming policy does
// not lean on them. A plan naming a pinned, in-flight or unread unit
// costs the check a prune and puts refusals the runtime did not cause in
// Result.Refused and the log (and, for a pinned unit, in the Context's
// memory). In the relaxed mode a plan naming only units in flight defers
// the whole check, as the strict reading would, so that the guard's
// furthest safe prune never runs; a plan of stubs of stubbed results is
// applied, freeing nothing, round after round until the rounds are
// spent (both show as [ErrStalls] too); and a plan whose every name the
// guard takes out is left empty, which ends the policy's part of the
// check. A Keeper's Kept is what the guard's hoarding rule, compaction
// and furthest safe prune spare or reach last; a policy that proposes
// what it says it keeps contradicts itself.
//
// # Warnings
//
// Warnings mark a policy that is safe but may do less well than it
// could; a policy may draw one on purpose, so they do not fail
// TestPolicy, and Run logs them:
//
//   - [ErrIdle]: an empty plan for a positive need while the View offers
//     a unit that may go, holding a whole tool result, before anything
//     the policy keeps. A policy that takes only some kinds of content
//     leaves the rest to the guard's furthest safe prune.
//   - [ErrOvershoot]: a plan that would free the need without its largest
//     proposal, so that the policy went on proposing after it had
//     proposed enough. A policy that clears in bulk on purpose, as
//     [pruneguard.KeepLastToolUses] does, draws it.
//   - [ErrStubRefused]: a stub of a result a guard remembers as refused a
//     stub. The guard takes it out of the plan unseen; a plan left empty
//     ends the policy's part of the check. The View's walks of whole and
//     largest results pass over such results, but a snapshot cannot tell
//     them from others.
//   - [ErrCost]: on the Context of 100,000 messages and a need a few units
//     fill, Propose allocated, for each message it proposed, more than
//     ten times what it allocated on one of 1,000: it reads the whole
//     Context instead of walking the View and stopping once it has
//     enough. A [pruneguard.PolicyFunc] does so by design. The suite
//     measures allocated bytes, which every step of a View's walks and
//     every message of a snapshot cost, rather than time, which a busy
//     machine changes.
//
// The suite does not check that a policy is safe for concurrent use,
// that the schemas it compresses are any good, nor that the message Kept
// returns is the oldest the policy keeps: only that it proposes nothing
// from there on.
package policytest

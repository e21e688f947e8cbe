// Package pruneguard guards an LLM agent runtime's context window against
// unsafe pruning. A salience policy proposes what to evict; the guard
// disposes: it returns either the closed set that may safely go, or a
// typed error saying which gate refused and why.
//
// The package does no I/O, reads no clock and draws no random numbers.
// Stores, loggers and provider wire formats live at the edges, behind the
// small [Resolver] and [Oracle] interfaces or in other packages (see
// package wire for provider request bodies).
//
// # Tour
//
// A [Context] is the live transcript of one session. The runtime feeds it
// the events that really happen:
//
//	c := pruneguard.NewContext(pruneguard.Config{})
//	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
//	c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: closed})
//	c.RegisterTool(pruneguard.Tool{Name: "grep", Annotations: closed})
//	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 900, Pinned: true})
//	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 60,
//		Calls: []pruneguard.Call{{ID: "c1", Tool: "read_file"}, {ID: "c2", Tool: "grep"}}})
//	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 4000, Answers: []pruneguard.CallID{"c1"}})
//	c.Open(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c2"}})
//	c.Write("r2", chunk, 120) // results stream in, from any goroutine
//	c.Close("r2")
//
// Messages are grouped into units without being told: a call and its
// results are one unit, and every call of one assistant message, with all
// their results, is one unit. [Context.Couple] adds other ties (a
// reasoning item and the calls after it). Before each model call the
// runtime asks whether to prune:
//
//	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
//	if err == nil {
//		err = c.Apply(d) // d.Evict is {"a1", "r1", "r2"}: the whole unit
//	}
//
// [Context.Prune] changes nothing; [Context.Apply] carries a decision out
// atomically, and refuses one that events since have made stale. The
// [Guard] helper wraps the loop: check the budget in constant time, ask a
// [Policy], prune, apply, and answer under budget, pruned, deferred, or a
// [*CeilingError]:
//
//	g := pruneguard.Guard{Budget: 32000, Policy: pruneguard.OldestFirst{}}
//	res, err := g.Check(c) // before each model call
//
// # Policies
//
// A [Policy] proposes; it never decides. It gets a [View] of the Context:
// walks over the units oldest first ([View.Units]), the messages newest
// first ([View.Newest]), the tool results newest first ([View.Results],
// [View.WholeResults]) and largest first ([View.Largest]), each kept in
// an index as messages arrive, are stubbed or leave, so that a policy
// that stops once it has proposed enough costs what it proposes, however
// long the session. The built-in [OldestFirst], [LargestResultsFirst]
// and [KeepLastToolUses] do so. [PolicyFunc] takes the simple way, a
// snapshot of every message; [ViewFunc] combines walks and policies:
//
//	pol := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
//		p := pruneguard.LargestResultsFirst{Stub: true}.Propose(v, need)
//		if p.Empty() {
//			p = pruneguard.OldestFirst{}.Propose(v, need)
//		}
//		return p
//	})
//
// # The gates
//
// Commit boundary ([ErrBoundary], [ErrDeferred]). Nothing is pruned while a
// call is pending or a message is streaming ([BoundaryStrict], the
// default), or, in [BoundaryRelaxed], no unit that is in flight is pruned.
// A plan naming part of a unit grows to the whole unit, shrinks to leave
// it out, or is refused, as [Plan.Split] says. Pinned messages stay.
// Deferral is a state of its own, reported as a [*DeferredError]; past the
// hard ceiling ([Config.Ceiling], or a [Guard]'s) it becomes a
// [*CeilingError].
//
// Evict-or-tombstone ([ErrSchema]). A tool's schema may leave the prompt
// only when no arguments of earlier calls to the tool stay, or behind a
// one-line [Tombstone] that tells the model to ask for the schema back.
// The gate runs after message eviction is settled, so a plan that evicts
// a tool's last arguments may drop its schema in the same plan. A
// compression that loses required fields, enum members or types counts as
// dropping the schema. A mutation tool that cannot be tombstoned keeps its
// schema. [Context.RequestTool] records the model asking for a tombstoned
// tool, the signal that pruning is too aggressive.
//
// Regenerability ([ErrRegen]). Only reconstructible content may go, or
// content spilled to a durable store behind a pointer the configured
// [Resolver] resolves, or content no step of a sealed plan needs. Text a
// person or the model wrote (user and system messages, assistant prose,
// reasoning) is irreducible unless tagged otherwise: by [Message.Class], an
// [Oracle], or [Config.TextClass] for a runtime that accepts losing text.
// Unless a tool's [Tool.Output] says otherwise, only a pure tool's results
// are reconstructible: read-only and closed-world by its MCP
// [Annotations]; a mutating tool's results, even an idempotent one's, and
// an open-world tool's are irreducible. A read-only tool's result goes
// stale, and irreducible, once a mutating call whose [Tool.Scope]
// overlaps its tool's (equal scopes, or either empty) is made after it or
// in its parallel batch. An assistant message of calls with no
// Content of its own takes the most conservative class of what it calls,
// so a unit of pure calls and their results goes whole; a [Call.Server]
// call, run by the provider with its result in the same message, adds its
// tool's class to its message. [Facts] (negative results, transient
// observations, one-time secrets, the sole record of a user's constraint)
// make any message irreducible; a message a pending planned step names
// ([Context.PlanStep]) never goes. An [Oracle] or a [Message.Class]
// decides a message's class in place of that derivation, but never lifts
// Facts, planned-step references, the resolvable pointer a [Durable] class
// needs, or anything of the commit boundary.
//
// Calls that will never be answered (an orphan deep in the history, a
// cancelled stream, a result the runtime lost) are given up with
// [Context.Abandon]: their unit closes and is judged like any other, and
// a late result for one is refused. A message still streaming cannot be
// spilled, and [Context.Apply] asks the Resolver again about every pointer
// its decision relies on, refusing with a [*StaleError] when one stopped
// resolving.
//
// # Diagnostics
//
// Every [Decision] keeps [Decision.Records], an audit line per evicted
// or stubbed message with the class it had. [ToolState] counts what
// pruning made the model redo: re-expansion requests for tombstoned
// schemas, ghost calls to tools whose schema was withdrawn, and refetches
// of results that were pruned (irreducible refetches mean a gate was
// bypassed). Package spill provides durable stores and a [Resolver] that
// lets irreducible content leave the prompt behind a verified pointer.
//
// # Errors
//
// A refused plan returns a [*PruneError] holding every [*Violation], in a
// stable order (gate, then transcript position, then code). Each
// violation matches its gate's sentinel with errors.Is and carries the
// unit, message, call and tool ids. Malformed events and plans return an
// [*InputError] matching [ErrInvalidInput] and a specific sentinel, and
// leave the Context unchanged.
//
// # Cost
//
// A [Context] is safe for concurrent use. [Context.Tokens] and
// [Guard.Check] under budget take constant time and do not allocate.
// [Context.Prune] costs time in proportion to the plan and the units it
// touches, and [Guard.Check] over budget in proportion to what its policy
// walks, proposes and prunes, not to the length of the Context (beside a
// logarithm for the indexes). A Context keeps a few dozen bytes per
// message beyond the ids, contents and arguments it was given, and
// reclaims the memory of the messages that leave.
package pruneguard

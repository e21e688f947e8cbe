// Package wire reads, checks and edits LLM provider request bodies, so that
// a pruned conversation history can be verified before it is sent.
//
// It understands five wire dialects: OpenAI Chat Completions, OpenAI
// Responses, Anthropic Messages, Google Gemini generateContent and AWS
// Bedrock Converse. The reference for each (what its messages hold, the
// rules Validate checks with the provider's own wording, how a stub, a
// tombstone, a pointer or a summary is written) is docs/wire.md in the
// repository; this page says what a caller needs.
//
// # Reading and checking
//
// [Read] parses a request body into a [Body]: every message (or Responses
// item) as its raw JSON with the facts read from it (role, tool calls,
// the call ids its results answer, reasoning, server tool use, tool
// references, text). Fields the package does not model are never lost:
// [Body.Marshal] writes an untouched body back byte for byte. A Body's
// messages are slices of the body read, so the body must not change
// while the Body is in use.
//
// A body is a JSON object in UTF-8. Bytes that are not UTF-8, a leading
// byte order mark, a top-level key given twice and nesting deeper than
// encoding/json allows are refused; errors wrap a [*TextError] with the
// offset where one applies. Numbers are written back as they were read.
// MCP annotations are read by their exact keys; a key given twice or a
// hint that is not a boolean is refused with an [*AnnotationError].
// Every error is one line.
//
// [Validate] lists what a provider would reject with HTTP 400, each as a
// [RuleViolation] with a stable rule code, the message index and the
// provider's wording. Calls still waiting for their results at the end
// of a body are reported under their own "<dialect>/pending-calls" rule,
// since live agent histories end that way. Pairing follows each
// provider's adjacency rules, never a global id map, because real agents
// reuse call ids.
//
// [Body.Remove] and [Body.Stub] are the two edits a pruner needs: drop
// whole messages, or replace a tool result's content with a short
// placeholder while its envelope and its call stay. [Unwrap] gets a
// request body out of the recorded transcript envelopes under
// testdata/transcripts.
//
// # Guarding a body
//
// [Bind] (or [Body.Bind]) builds a [Guarded]: a pruneguard.Context with
// one message per body message (id [ID](index)), calls paired and units
// shaped as the provider requires, and the tools array registered. The
// model's messages get the model's role, so what the model has not read
// is never pruned. Calls of the trailing batch without results are
// pending; a call left without a result anywhere else is abandoned, and
// listed by [Guarded.Unpaired].
//
// A budget covers the whole request body: the history, the system
// prompt, tools and settings, which is what a provider bills. Tokens are
// counted with Config.Counter (nil means pruneguard.ApproxCounter).
// [Guarded.Tokens] equals [Tokens] of the body written.
//
// [Guarded.Prune], [Guarded.Check] and [Guarded.Apply] go through the
// core's gates and a screen of this package: a decision that would leave
// the body breaking a provider rule the input kept, empty a tools array,
// or stub a result whose stub would not be smaller is shrunk, and what
// it leaves out is reported as a [Refusal] with gate "wire". A decision
// the screen cannot split is refused whole ([CodeScreenUnsplit]). The
// screen costs in proportion to what a decision edits, not to the length
// of the body. [Guarded.WriteTo] writes the result.
//
// Tombstone lines, and one line per spilled pointer, go into the system
// prompt the body already has; a Chat, Gemini or Bedrock body without one
// gets none. With [Options].Spiller set, [Guarded.Check] spills what only
// a spill lets go, each message stored as the body held it. A check that
// would end over its budget only because the pointer lines it added
// describe their segments writes those lines shorter, with part of the
// description or none (a *spill.Spiller's, see
// spill.Spiller.PointerTextUpTo); a line keeps its text once written, and
// a [Session] saves it. The pointer text tells the model to call the
// recall tool, which this package never adds to a body: declare it with
// [RecallTool] and answer it with spill.Spiller.HandleRecall. The spills
// are a check's only I/O; the methods with a context make them with it.
//
// # Summaries
//
// A guard with a Summarizer (pruneguard.Guard.Summarizer) compacts before
// it evicts. Every path of this package ([Guarded], a [Session], [Render])
// writes the summary in the place of the run's first message, as a
// message of the user's side, so that the provider takes it and the model
// does not read it as its own words. The bytes before it stay, so the
// provider's prompt cache keeps the prefix. The screen refuses a summary
// that would break a provider rule, and the guard evicts instead.
//
// # Rendering a Context
//
// [Render] writes the request body of a dialect for a Context a runtime
// built with events, with the Context's decisions carried out. A body
// that would break a provider rule is not returned: the error is a
// [*RuleError].
//
// # A live session
//
// A [Session] is the live history of one conversation, guarded before
// every model call. Feed it provider JSON ([Session.Append]), events
// ([Session.AppendMessage]), streamed deltas ([Session.Open],
// [Session.WriteText], [Session.WriteCall], [Session.Close]) or a whole
// request body that continues the history ([Session.Sync]). Before each
// call, [Session.Request] answers with the body; messages fed as JSON are
// written back byte for byte unless a decision edits them.
//
// The budget, trigger, minimum to clear and ceiling of a [SessionConfig]
// count the whole body. At or under the trigger a request is sent as the
// last prune left it, so the provider's prompt cache keeps working; over
// it the guard prunes down to the budget. The turn in progress is kept
// from eviction ([CodeActiveTurn]). A request costs in proportion to what it adds,
// repairs and prunes, not to the length of the history. A Session is safe
// for concurrent use.
//
// A call fed to a session stays pending until its result arrives, or
// until a message fed as provider JSON ends the block or turn it waited
// in (Chat, Anthropic, Gemini, Bedrock). A Responses call, and a call of
// an event message, wait for [Session.Abandon].
//
// # Conversations
//
// [Conversations] keeps a [Session] per conversation for callers that see
// whole request bodies, as SDK middleware does. A request that breaks a
// provider rule is refused with a [*RuleError]. A request belongs to the
// conversation [WithConversation] names, or else to the one whose history
// it continues. [Conversations.Middleware] guards HTTP requests and
// answers one it refuses, unsent, with status 400 and
// "x-should-retry: false".
//
// # Saving a session, and a fleet of replicas
//
// [Session.Save] writes a session's state: what it was given since its
// history began (messages byte for byte, evicted ones included; events,
// streams, calls abandoned; the request's other fields), what the guard's
// decisions did to the history, and its Context's own saved state, with
// a SHA-256 digest. [RestoreSession], given the same configuration,
// rebuilds a session that renders the same body, keeps the same prompt
// prefix and makes the same decisions as one that never stopped; state
// truncated, altered or inconsistent is refused with an error matching
// pruneguard.ErrBadState, and no session.
//
// With ConversationsConfig.Sessions set (a sessions.Store: Memory, Dir,
// or the Redis and PostgreSQL stores), each request of a named
// conversation loads its session from the store, is guarded, and saves
// it back with the version it loaded; a replica that lost the race loads
// again and redoes its work, so two replicas send the bodies one process
// would. Ids are sessions.ID(tenant, name) ([WithTenant]). A store that
// fails refuses the request with a [*StoreError] ([ErrSessionStore]),
// unless PassUnguarded lets the body through unguarded.
//
// Reading and validating use only the standard library; the guarding
// part imports the pruneguard core, which never imports this package.
// Every reader, Validate and Body.Bind are total: no input, however
// malformed, makes them panic (FuzzRead, FuzzUnwrap, FuzzContext and
// FuzzPrune check it).
package wire

// The files, by role. A body's codec, what a tool reads, checks and
// writes bodies with, is body.go and body_*.go (reading, the JSON
// scanner and views, tools declarations, the rules, stubs, the system
// prompt's lines, Render, Unwrap, token counts). The guarded prune is
// guard.go and guard_*.go (Bind and Body.Context, pairing, the edit
// state, the rule screen, Prune and Check, spilling, the output); the
// long-lived session, the one user of net/http, is session.go and
// session_*.go, built on the guard's machinery. What each provider does
// is in its table, chat.go, responses.go, anthropic.go, gemini.go and
// bedrock.go, with its rules in <provider>_rules.go; provider.go says
// what a table holds, and dialect.go is the one place that picks a
// table for a dialect.

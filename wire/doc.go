// Package wire reads, checks and edits LLM provider request bodies, so that
// a pruned conversation history can be verified before it is sent.
//
// It understands five wire dialects: OpenAI Chat Completions, OpenAI
// Responses, Anthropic Messages, Google Gemini generateContent and AWS
// Bedrock Converse. [Read] parses a request body into a [Body]: every
// message (or Responses item) is kept as its raw JSON together with the
// structural facts extracted from it (role, tool calls, the call ids its
// tool results answer, reasoning, server-side tool use, tool references
// and text). Fields the package does not model are never lost:
// [Body.Marshal] writes the original top-level object back and only
// replaces the message array (and the tools array and system prompt of a
// guarded body) when it was edited, so an untouched body comes back byte
// for byte.
//
// A body is read in one pass: the JSON is checked as it is split into its
// messages, each message's facts are read from slices of the body (its
// Raw is one too, so the body must not change while the Body is in use),
// and an error is worded, with its place, only when reading fails.
// [Bind] reads a body straight into a [Guarded] without making the
// Messages at all, for a body read only to be pruned.
//
// # Input
//
// A body is a JSON object in UTF-8. Read (and [Detect], [Unwrap],
// [ReadManifest]) refuses bytes that are not UTF-8 and a leading byte
// order mark, with an error wrapping a [*TextError] that gives the
// offset: RFC 8259 rules both out, providers reject them, and an edit
// that re-encodes a string would silently replace the bad bytes. A
// top-level key given twice is refused too: providers differ on which
// value counts, and an edit would rewrite only one. Any number the JSON
// grammar allows is accepted and written back as it was read (1e400,
// -0, 30-digit integers). Nesting deeper than encoding/json allows
// (10,000 levels) is a read error. Every error is one line.
//
// MCP annotations, in a tools array or a manifest, are read as MCP
// clients read them: by their exact keys ("readonlyhint" is no hint). A
// key given twice, a hint that is not a boolean, a tool a manifest lists
// twice or a body declares twice with other annotations are bad input,
// refused with an [*AnnotationError] naming the tool and the key by
// [Body.Bind], [Bind], [ReadManifest], [NewSession] and
// [Session.SetRequest] ([Body.Tools] lists such a tool without them).
//
// # What each dialect's messages hold
//
// Calls and results are what Read pairs and what a prune keeps together:
//
//   - OpenAI Chat: an assistant message's tool_calls (function or custom)
//     are answered by tool messages (tool_call_id, or SWE-agent's
//     tool_call_ids list). Legacy function calling, which real clients
//     still send, is read too: an assistant message's function_call is a
//     call without an id, answered by the role "function" message right
//     after it; the request's functions array declares tools and its
//     function_call field names one, as tool_choice does.
//   - OpenAI Responses: client-executed call items and the output items
//     that answer them, matched by kind and id: function_call and
//     custom_tool_call, computer_call, shell_call and apply_patch_call
//     (each by call_id), local_shell_call (its output gives the call's
//     call_id as id), a tool_search_call run by the client, and an MCP
//     approval request (answered by an mcp_approval_response's
//     approval_request_id; a request may stay unanswered). Items run by
//     the provider (web_search_call, file_search_call,
//     code_interpreter_call, image_generation_call, mcp_call,
//     mcp_list_tools, server tool search) carry their own outcome. An
//     item with only an id is an item_reference.
//   - Anthropic: tool_use blocks are answered by tool_result blocks of the
//     next user turn. server_tool_use and mcp_tool_use blocks are answered
//     by their *_tool_result block in the same assistant turn. A
//     tool_reference block (tool search, inside a tool search result or a
//     tool_result) names a tool the request must declare: it is listed
//     in [Message].References.
//   - Gemini: functionCall parts are answered by the functionResponse
//     parts of the next turn, by id when both sides carry ids, by
//     position otherwise. executableCode and codeExecutionResult parts are
//     the provider's code execution tool.
//   - Bedrock: toolUse blocks are answered by toolResult blocks of the
//     next user message.
//
// # What Validate checks
//
// [Validate] (and [Body.Validate]) lists the structural problems a
// provider would reject with HTTP 400, each as a [RuleViolation] with a
// stable rule code, the message index and the provider's wording. A body that
// ends on tool calls still waiting for their results is reported with the
// separate "<dialect>/pending-calls" rule, because live agent histories
// legitimately end that way. Wordings are the providers' own where one is
// on record (listed in each rule's documentation); the others follow the
// provider's pattern and are named below.
//
// In every dialect the history must not be empty: an empty messages,
// input or contents array is reported under "<dialect>/empty-messages"
// ("openai-responses/empty-input", "gemini/empty-contents") and nothing
// else is checked. The Responses and Bedrock wordings are this package's,
// as no provider error for an empty history in those dialects is on
// record (Responses may accept one that continues a previous_response_id;
// it is reported all the same, since a pruned history should never be
// empty).
//
// Pairing follows each provider's own adjacency rules, never a global id
// map, because real agents reuse call ids (tau-bench's gpt-4o does):
//
//   - OpenAI Chat: after an assistant message with tool_calls only tool
//     messages may follow until every id is answered ("An assistant
//     message with 'tool_calls' must be followed by tool messages
//     responding to each 'tool_call_id'."); a tool message must sit in
//     such a block ("messages with role 'tool' must be a response to a
//     preceeding message with 'tool_calls'") and answer one of its ids,
//     and no other tool message of the block may answer the same id; a
//     legacy function message needs a name ("messages with role
//     'function' must have a 'name'"). A legacy function_call and its
//     function message are paired for pruning but not validated: no
//     provider error for their pairing is on record.
//   - OpenAI Responses: every client call item needs a later output of its
//     kind with its id ("No tool output found for function call <id>.")
//     and every output an earlier call ("No tool call found for function
//     call output with call_id <id>."; the other kinds follow the same
//     pattern with their own names); an unanswered MCP approval request is
//     not reported. With previous_response_id, a conversation or an
//     item_reference in the input, an output without its call in the
//     input answers a call the server holds and is not reported. A
//     reasoning item must be followed by an item that is neither
//     reasoning nor a user message ("Item '<id>' of type 'reasoning' was
//     provided without its required following item."); item ids are
//     unique ("Duplicate item found with id <id>."); with "store": false
//     reasoning items need encrypted_content ("Items are not persisted
//     when `store` is set to false.").
//   - Anthropic: consecutive same-role messages are merged first, as the
//     API does. The turn after an assistant turn with tool_use must be a
//     user turn starting with a tool_result for every id ("`tool_use` ids
//     were found without `tool_result` blocks immediately after"); each
//     tool_result answers a tool_use of the previous turn ("unexpected
//     `tool_use_id` found in `tool_result` blocks"), once ("each tool_use
//     must have a single result"); tool_use ids are unique within a turn;
//     tool_result only in user turns; no empty message except a final
//     assistant one ("all messages must have non-empty content except for
//     the optional final assistant message"); no blank text ("text content
//     blocks must be non-empty"); the first message is a user message;
//     thinking blocks come first in their turn; with thinking enabled the
//     assistant turn of an active tool loop starts with thinking (checked
//     only when the body carries thinking at all); with thinking off the
//     final assistant message holds none ("When thinking is disabled, an
//     `assistant` message in the final position cannot contain
//     `thinking`."); server tool results follow their server_tool_use in
//     the same turn ("Each `<type>` block must have a corresponding
//     `server_tool_use` block before it.").
//   - Gemini: a functionCall turn follows a user or functionResponse turn
//     and is never first ("Please ensure that function call turn comes
//     immediately after a user turn or after a function response turn.");
//     a functionResponse turn directly follows its call turn ("...function
//     response turn comes immediately after a function call turn.") with
//     as many response parts as call parts, and the same ids when both
//     sides carry ids ("...the number of function response parts is equal
//     to the number of function call parts of the function call turn.");
//     the first content is a user turn (this package's wording). Thought
//     signatures: when any functionCall in the body carries a
//     thoughtSignature (a thinking model), every call step after the last
//     real user turn must carry one on its first functionCall part
//     ("Function call is missing a thought_signature in functionCall
//     parts."). Earlier steps are not checked, as the API does not check
//     them.
//   - Bedrock: strict alternation starting with a user message (nothing is
//     merged: "A conversation must alternate between user and assistant
//     roles.", "A conversation must start with a user message."); the
//     message after toolUse blocks holds a toolResult for each id
//     ("Expected toolResult blocks at messages.<i>.content for the
//     following Ids") and no more results than there were uses ("The
//     number of toolResult blocks ... exceeds the number of toolUse blocks
//     of previous turn."); toolConfig is present when tool blocks are
//     ("The toolConfig field must be defined when using toolUse and
//     toolResult content blocks."); no blank text ("... is blank. Add text
//     to the text field, and try again."). A toolResult id that matches no
//     toolUse of the previous turn is reported in this package's wording.
//
// Tools arrays, tool choices and tool references, which a prune touches
// when it withdraws schemas: OpenAI Chat rejects an empty tools or
// functions array ("Invalid 'tools': empty array. Expected an array with
// minimum length 1, but got an empty array instead.", the API's pattern
// for empty arrays) and a tool_choice or function_call without tools; a
// tool choice (Chat tool_choice and legacy function_call, Responses
// tool_choice, Anthropic tool_choice of type tool, Gemini allowed function
// names, Bedrock toolConfig.toolChoice) must name a declared tool; Bedrock
// rejects an empty toolConfig.tools ("Member must have length greater than
// or equal to 1"); Anthropic rejects tool_use and tool_result blocks when
// the tools array is empty ("Requests which include `tool_use` or
// `tool_result` blocks must define tools.") and a tool_reference naming a
// tool the tools array does not declare ("Tool reference '<name>' not
// found in available tools"). A body with no tools field at all is not
// reported in Anthropic, since recorded histories (Claude Code session
// logs) leave it out. The Chat tool-choice-without-tools wording is the
// API's as remembered, not on record here; the function_call wordings, the
// unknown-tool-choice wordings of every dialect and the Bedrock unknown
// tool choice wording are this package's.
//
// Not checked, because they depend on the model or on server-side state
// that a request body does not show: Anthropic assistant prefill on newer
// models, signature validity and unchanged thinking (T2-T4, including
// preserved-thinking models that reject any edit before a thinking
// block), Responses links between a server-id item and its reasoning item
// (R4; a prune keeps them in one unit), encrypted-content validity and
// previous_response_id chains, Bedrock's per-model ban on text beside
// tool results (B5) and the Anthropic rules Claude applies on Bedrock
// (B7), DeepSeek-style reasoning_content round trips in Chat, and repeated
// ids inside one Chat tool_calls block (no provider error for it is on
// record).
//
// # Editing
//
// [Body.Remove] and [Body.Stub] are the two editing operations a pruner
// needs: drop whole messages, or replace tool-result content with a short
// placeholder while keeping the result's envelope (block or item, ids,
// name, error flag or status, cache control) and the call. Per result
// type, Stub writes text where the API takes it: Chat content, Responses
// function, custom tool, local shell and apply patch outputs (an array
// output becomes one input_text part), a Responses shell call output as
// one chunk with the text as stdout and its first outcome, Anthropic
// tool_result content (images and documents go, tool_reference blocks
// stay), Gemini functionResponse response ({"result": text}, multimodal
// parts go) and Bedrock toolResult content ([{"text": text}]). A Responses
// computer call output (a screenshot), client tool search output (a tool
// list) or MCP approval response cannot be stubbed.
//
// [Unwrap] gets a request body out of the recorded transcript envelopes kept
// under testdata/transcripts (tau-bench, OpenHands, SWE-agent, NeMo Gym,
// pydantic-ai cassettes and Claude Code session logs).
//
// # Guarding a body
//
// [Body.Bind] builds a pruneguard.Context from a body (one core message
// per body message, id [ID](index), tokens from Config.Counter, counted
// once), with calls and results paired by the rules above, units shaped
// to each dialect's atomic structure, the tools array registered, and
// classes the Context cannot see for itself: the calls of tools the
// provider runs (Anthropic server_tool_use and mcp_tool_use blocks,
// Gemini executableCode parts, the Responses server items) are calls of
// the message with [pruneguard.Call].Server set and their arguments
// (the input, the code, a search's action), so that the Context's refetch
// alerts see them; they and their results are of their tool's class,
// irreducible unless the body or a manifest annotates that tool (web
// search is open-world), whatever [Options].Unannotated says; results
// that pair with no call in the body take the class of an unannotated
// tool; compaction blocks and items are irreducible. An assistant
// message that makes calls (a client's or the provider's) and holds text
// gives the Context that text as its Content. A message's
// tool_reference blocks (in a tool search result or a tool_result)
// require their tools (pruneguard.Message.Requires), so the core's schema
// gate keeps those schemas while the message stays. A result an error
// marker flags ([Message].IsError: Anthropic is_error, Bedrock status
// "error", a Gemini response with an "error" key, a Responses mcp_call
// with an error) is IsError in the Context, with the JSON of what it
// reports as its Content, which the ghost-tool detector reads for the
// fields a validation error names. The pairing, the units, the pins and
// the classes come from one reader that takes the history a message at a
// time, the one a [Session] feeds as messages arrive.
//
// The model's messages (assistant and model turns, call items, reasoning
// items, the Responses items the provider ran in the model's turn) are
// given a role of the model's, so that the Context knows what the model
// has read: the results and turns after its last message are unread and
// never pruned (pruneguard.Context.Unread), which keeps the trailing
// results of every body as they are.
//
// Calls of the trailing batch still waiting for their results are
// pending: under the strict boundary they defer every prune. A call
// without a result anywhere else (its block or turn ended, or in
// Responses an output or a user message came after it) can never be
// answered in that body, and every provider rejects the body for it as
// it stands; the call stays among its message's calls, is listed by
// [Guarded.Unpaired], and is abandoned (pruneguard.Context.Abandon) as
// its message is appended. Its unit then closes and is judged like any
// other: a message of such calls alone takes the class of its calls as
// any message of calls does, and the call's arguments count for the
// schema gate (withdrawing its tool's schema needs a tombstone, or the
// call's eviction) while the message stays. Evicting the orphan's unit
// takes the body's violation away with it; the screen still refuses what
// would break a rule the body kept.
//
// Tokens are counted with Config.Counter (nil means
// pruneguard.ApproxCounter, a quarter of the compact JSON): each message
// once, as its JSON, and the rest of the body when it changes; the
// Context is given the same Counter and counts the tool schemas it holds
// and the tombstones that stand. A budget covers the whole request body,
// the history and the system prompt, tools and settings, which is what a
// provider bills: [Guarded.Check] and a [Session] take off what the
// Context does not count ([Guarded.Overhead]) before its guard runs, so
// that nothing counts twice, and [Guarded.Tokens] and [Report].After
// equal [Tokens] of the body written.
//
// The returned [Guarded] prunes through the core's gates plus a last one
// of its own, the screen: a decision that would leave the body breaking a
// provider rule the input did not break, emptying a tools array (some
// OpenAI-compatible servers, vLLM among them, reject an empty one, as
// OpenAI Chat and Bedrock do), stubbing a result whose stub would not be
// smaller or cannot be made, or withdrawing a schema behind a tombstone
// that costs more than the schema, is shrunk, and what it leaves out is
// reported as a [Refusal] with gate "wire" and the rule or [CodeEmptyTools],
// [CodeStubNotSmaller], [CodeStubUnsupported] or [CodeSchemaNotSmaller] as
// its code. The screen renders the decision's schema edits and
// tombstones too, and it judges every decision against the body as the
// decisions already applied left it, so that rounds of one
// [Guarded.Check] that are each fine cannot together empty a history or a
// tools array. Every path that applies a decision passes it:
// [Guarded.Prune] prunes and screens again until a decision passes whole;
// [Guarded.Check] makes the screen the guard's [pruneguard.Screen], which
// the guard asks about every decision before it applies it, whether the
// policy, the furthest safe prune, spill-then-evict or the hoarding rule
// made it, and what the screen refuses is taken out and the rest pruned
// again; [Guarded.Apply] screens any decision it did not make and refuses
// one that fails with a [*ScreenError]. A whole decision the screen
// finds breaking a rule without finding a unit or stub to blame is
// refused whole, with [CodeScreenUnsplit].
//
// The screen costs in proportion to what a decision edits, not to the
// length of the body: the rules about a message and its neighbours are
// checked again over a window around each edited run (the block of tool
// messages, or the turns, around it), the same window before and after
// the edit; Responses calls and outputs, and item ids, for the kinds and
// ids the edit touches; the rules of the tools arrays from the top-level
// fields when schemas are edited. Violations are counted by key as
// [NewViolations] compares them, for the input and for the body as the
// applied decisions left it, so the verdict is the one
// NewViolations(input, Validate(edited body)) would give. Only an edit
// that changes a fact of the whole body (the last real user content of a
// Gemini body, the last output or user message of a Responses input, the
// only thinking or tool block left) has the whole body checked again.
// [Guarded.WriteTo] writes the result by splicing the kept messages' bytes
// between the body's own, and [Guarded.Tokens] is kept up to date as
// decisions are applied.
//
// Tombstone lines go into the system prompt the body already has:
// Anthropic system, Responses instructions, a Chat system or developer
// message, a Gemini systemInstruction, a Bedrock system list; one per
// line, after the prompt's own text (a blank line apart), as a text
// block or part where the prompt is a list of them. A Chat,
// Gemini or Bedrock body without one gets none, since some models and
// servers reject a system prompt; the Context is then configured with
// NoTombstones, so a tool whose calls stay keeps its schema if it may
// change state and loses it untombstoned if it is read-only.
// [Guarded.Body] is the body with the applied decisions carried out.
//
// With [Options].Spiller set, [Guarded.Check] spills what only a spill
// lets go (irreducible content of closed units, results to stub): each
// message is stored as the body held it, its provider JSON byte for
// byte, and once the store has it the guard prunes it. Spilled messages
// that are evicted leave one line per pointer in the system prompt (the
// Spiller's own text, [spill.Spiller.PointerText], which says what the
// segment holds; [spill.PointerText] for another Spiller), after the tombstone lines, where tombstone lines
// go; the eviction is refused (code "pointer-not-smaller") when the line
// would cost as much as what leaves with it. A stubbed spilled result
// carries its pointer's text instead of the stub text. A body with no
// system prompt to carry a line spills only tool results, for their
// stubs (a spill for an eviction fails with [ErrNoPointerPlace]). The
// Context counts those lines and texts with Config.PointerTokens, which
// a Spiller sets when it is zero (see [Options].Spiller), so the guard's
// rounds see them; the overhead counts the rest, never them twice. The
// pointer's text tells the model to call the recall tool, which this
// package never adds to a body: the runtime declares it among the
// request's tools ([RecallTool] writes its declaration in each dialect)
// and answers its calls with [spill.Spiller.HandleRecall]. With a
// *spill.Spiller, a session or a Guarded gives the tool of that name the
// annotations of [spill.RecallTool] unless something else annotates it:
// its answers are reconstructible, and never spilled again. The spills are a check's only I/O:
// [Guarded.CheckContext], [Session.RequestContext],
// [Session.CheckContext] and [Session.SyncContext] make them with the
// context given, the methods without one with context.Background().
//
// # Summaries
//
// A guard with a Summarizer (pruneguard.Guard.Summarizer) compacts
// before it evicts: it replaces a run of whole units with one summary
// message, a decision whose Summary the gates judged. Every path of this
// package writes it ([Guarded.Check] and [Guarded.Apply], a [Session]'s
// requests, [Render]) in the place of the run's first message, as a
// message of the user's side holding the Summarizer's text, so that the
// provider takes it and the model does not read it as its own words
// (pruneguard.Digest's text starts with a bracketed line saying it is a
// summary written to save context):
//
//   - OpenAI Chat: {"role": "user", "content": text}.
//   - OpenAI Responses: a message item {"type": "message", "role":
//     "user", "content": [{"type": "input_text", "text": text}]}.
//   - Anthropic: {"role": "user", "content": [{"type": "text", "text":
//     text}]}. The API merges it with a user message before it, its text
//     after that message's blocks, so tool_result blocks still come
//     first; no turn of tool results follows it, since a run of whole
//     units ends before an assistant turn.
//   - Gemini: a user turn {"role": "user", "parts": [{"text": text}]},
//     which a functionCall turn may follow.
//   - Bedrock: roles must alternate and nothing is merged, and a run of
//     whole units starts with an assistant message: after a user
//     message (the kept message right before the run), the text joins
//     it as a text block after its own blocks (after its toolResult
//     blocks, which Claude models want first; models that take no text
//     beside a toolResult are not told apart, B5); with no message
//     before it, it stands as the first message, {"role": "user",
//     "content": [{"text": text}]}. Should that neighbour go later, the
//     text joins the user message then before it, or stands alone.
//
// The system prompt and every byte before the summary stay as they
// were, so that the provider's prompt cache keeps the prefix (in
// Bedrock, the bytes of the neighbour up to the end of its blocks). The
// pointers of spilled messages the summary replaced are carried in its
// text, not in pointer lines: a summary decision adds none to the system
// prompt, and [Render] writes none for a pointer a summary of the
// Context carries. The screen vets the body with the summary in place,
// by the same provider rules as an eviction, and refuses a summary that
// would break one (then the guard evicts instead); a summary is written,
// and its tokens counted, as it is sent. A later compaction may replace
// a summary with the rest of its run: the new one takes the place of the
// old. The facts a summary must carry are read from each message's text
// as the model reads it: text blocks and the content of tool results,
// not the envelope's keys and ids (a Guarded and a Session set
// Config.Text so; the calls' arguments the Context holds itself).
//
// # Rendering a Context
//
// [Render] writes the request body of a dialect for the history of a
// Context a runtime built with events, with the Context's own decisions
// carried out: evicted messages are gone, a stubbed result carries the
// stub text or, when it was spilled, the pointer text; the tools
// declaration lists the registered tools whose schema is resident (the
// compressed schema when compressed), sorted by name, and is left out
// rather than written empty; tombstone lines, then one line per spilled
// pointer, go into the system prompt. Each dialect gets its own shapes
// (roles, tool calls, results, where the system prompt goes, turns of
// one role merged in Anthropic, Gemini and Bedrock). Reasoning messages
// are not written, since providers take reasoning back only with a
// signature a Context does not hold, and neither are messages with
// nothing to say in the dialects that reject them. A body that would
// break a provider rule (other than calls still waiting for their
// results at the end) is not returned: the error is a [*RuleError]. A
// field given in [RenderOptions].Fields that Render writes from the
// Context is an error. Top-level keys are written in sorted order.
//
// # A live session
//
// A [Session] is the live history of one conversation in a provider's
// format, guarded before every model call. It is fed what a runtime
// already has: provider JSON ([Session.Append]), events
// ([Session.AppendMessage]), streamed deltas ([Session.Open],
// [Session.WriteText], [Session.WriteCall], [Session.Close]: once
// closed, a message streamed is the same message appended whole, in the
// Context and in the body) and the request's other fields
// ([Session.SetRequest]); [Session.Sync] takes a
// whole request body whose history continues the one held, as SDK
// middleware sees it, and starts over when it does not. Before each model
// call [Session.Request] (or [Session.Check], then [Session.WriteTo])
// answers with the body: messages fed as JSON are written back byte for
// byte unless a decision edits them, so a body synced and written back
// without a prune is JSON-equal to it; every dialect a session reads, it
// writes from events too. Ids are the provider's own where it has them.
//
// The budget, the trigger, the minimum to clear and the ceiling of a
// [SessionConfig] count the whole body. At or under the trigger a
// request is sent as the last prune left it, so that consecutive
// requests share their pruned prefix and the provider's prompt cache
// keeps working; over it, the guard prunes down to the budget, freeing
// at least MinClear (the core guard's Trigger and MinClear, given the
// whole body's counts less what the Context does not count). Its Screen
// is the one a [Guarded] uses, asked about every decision the guard
// applies, the furthest safe prune's and those after a spill included:
// units, stubs and schema edits that would break a provider rule the
// body as it stands keeps, leave no tool declared, or stub a result that
// cannot be stubbed or would not shrink, are left out and reported as
// refusals with gate "wire"; so are units of the turn the session keeps
// ([CodeActiveTurn]): whole (the last real user message's, which its
// policy never sees) or, once reasoning or signed calls are in the
// history, from eviction alone (every unit after that message, whose
// results a policy may stub). With a
// [SessionConfig].Spiller, the guard spills before it evicts. Before guarding, tools the Context reports
// unsound (the model called one after its schema was withdrawn, or tool
// search named it again) are repaired: a tombstone line for the calls
// left, or the schema back ([Report].Restored) when a message requires
// it or no tombstone may stand. A request costs in proportion to what it
// adds, repairs and prunes, not to the length of the history: the body's
// token count is kept message by message, and a decision is screened
// over the messages it edits and those around them (a history that is
// not written message by message, as while a message streams, is counted
// and screened from the body written whole); writing the body is linear
// in its bytes. A Session is safe for concurrent use.
//
// A call fed to a session stays pending until its result arrives, except
// that a message fed as provider JSON that ends the block or turn the
// call waited in (Chat, Anthropic, Gemini, Bedrock), where no later
// message may answer it, abandons it then; a Responses call, which any
// later output may answer, and a call of an event message wait for the
// runtime's [Session.Abandon].
//
// # Conversations
//
// [Conversations] keeps a [Session] per conversation for callers that
// see whole request bodies, as SDK middleware does. Each request is
// checked with [Validate] first and refused with a [*RuleError] when it
// breaks a provider rule, calls left waiting at its end included; a
// Responses request that continues a stored response (previous_response_id
// or conversation) is checked and passed on as it is. A request belongs to
// the conversation [WithConversation] names, or else to the one whose
// history it continues; at most Max conversations are kept, the least
// recently used forgotten first. [Conversations.Middleware] guards the
// requests whose method and path [RequestDialect] recognizes, and answers
// one it refuses, unsent, with status 400 and "x-should-retry: false".
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

// Package wire reads, checks and edits LLM provider request bodies, so that
// a pruned conversation history can be verified before it is sent.
//
// It understands five wire dialects: OpenAI Chat Completions, OpenAI
// Responses, Anthropic Messages, Google Gemini generateContent and AWS
// Bedrock Converse. [Read] parses a request body into a [Body]: every
// message (or Responses item) is kept as its raw JSON together with the
// structural facts extracted from it (role, tool calls, the call ids its
// tool results answer, reasoning, server-side tool use and text). Fields the
// package does not model are never lost: [Body.Marshal] writes the original
// top-level object back and only replaces the message array (and the tools
// array and system prompt of a guarded body) when it was edited, so an
// untouched body comes back byte for byte.
//
// [Validate] (and [Body.Validate]) lists the structural problems a provider
// would reject with HTTP 400, each as a [Violation] with a stable rule code,
// the message index and the provider's own error wording. A body that ends
// on tool calls still waiting for their results is reported with the
// separate "<dialect>/pending-calls" rule, because live agent histories
// legitimately end that way.
//
// # What Validate checks
//
// In every dialect the history must not be empty: an empty messages,
// input or contents array is reported under "<dialect>/empty-messages"
// ("openai-responses/empty-input", "gemini/empty-contents") and nothing
// else is checked. The OpenAI Chat, Anthropic and Gemini wording is the
// providers' own; the Responses and Bedrock wording is this package's, as
// no provider error for an empty history in those dialects is on record
// (Responses may accept one that continues a previous_response_id; it is
// reported all the same, since a pruned history should never be empty).
//
// Pairing follows each provider's own adjacency rules, never a global id
// map, because real agents reuse call ids (tau-bench's gpt-4o does):
//
//   - OpenAI Chat: after an assistant message with tool_calls only tool
//     messages may follow until every id is answered; a tool message must
//     sit in such a block and answer one of its ids, and no other tool
//     message of the block may answer the same id; a legacy function
//     message needs a name.
//   - OpenAI Responses: every call item (function_call, custom_tool_call,
//     computer_call) needs a later output with its call_id and every output
//     an earlier call; a reasoning item must be followed by an item that is
//     neither reasoning nor a user message; item ids are unique; with
//     "store": false reasoning items need encrypted_content.
//   - Anthropic: consecutive same-role messages are merged first, as the
//     API does. The turn after an assistant turn with tool_use must be a
//     user turn starting with a tool_result for every id; each tool_result
//     answers a tool_use of the previous turn, once; tool_use ids are unique
//     within a turn; tool_result only in user turns; no empty message
//     except a final assistant one; no blank text; the first message is a
//     user message; thinking blocks come first in their turn; with thinking
//     enabled the assistant turn of an active tool loop starts with
//     thinking (checked only when the body carries thinking at all); with
//     thinking off the final assistant message holds none; server tool
//     results follow their server_tool_use in the same turn.
//   - Gemini: a functionCall turn follows a user or functionResponse turn
//     and is never first; a functionResponse turn directly follows its call
//     turn with as many response parts as call parts (and the same ids when
//     both sides carry ids); the first content is a user turn. Thought
//     signatures: when any functionCall in the body carries a
//     thoughtSignature (a thinking model), every call step after the last
//     real user turn must carry one on its first functionCall part. Earlier
//     steps are not checked, as the API does not check them.
//   - Bedrock: strict alternation starting with a user message (nothing is
//     merged); the message after toolUse blocks holds a toolResult for each
//     id and no more results than there were uses; toolConfig is present
//     when tool blocks are; no blank text.
//
// Tools arrays and tool choices, which a prune touches when it withdraws
// schemas: OpenAI Chat rejects an empty tools array and a tool_choice
// without tools; a tool choice (Chat and Responses tool_choice, Anthropic
// tool_choice of type tool, Gemini allowed function names, Bedrock
// toolConfig.toolChoice) must name a declared tool; Bedrock rejects an
// empty toolConfig.tools; Anthropic rejects tool_use and tool_result
// blocks when the tools array is empty ("Requests which include
// `tool_use` or `tool_result` blocks must define tools.", the API's
// wording). A body with no tools field at all is not reported in
// Anthropic, since recorded histories (Claude Code session logs) leave
// it out. The Chat empty-tools wording follows the API's pattern for
// empty arrays; the Chat tool-choice-without-tools wording is the API's
// as remembered, not on record here; the unknown-tool-choice wordings of
// every dialect and the Bedrock empty-tools wording are this package's.
//
// Not checked, because they depend on the model or on server-side state
// that a request body does not show: Anthropic assistant prefill on newer
// models, signature validity and unchanged thinking (T2-T4), Responses
// links between a server-id item and its reasoning item (R4),
// encrypted-content validity and previous_response_id chains, Bedrock's
// per-model ban on text beside tool results (B5) and the Anthropic rules
// Claude applies on Bedrock (B7), and DeepSeek-style reasoning_content
// round trips in Chat, and repeated ids inside one Chat tool_calls block
// (no provider error for it is on record). Wording not seen verbatim in provider errors: the
// Gemini first-not-user message, the Bedrock unexpected-tool-result
// message and the Responses and Bedrock empty-history messages.
//
// [Body.Remove] and [Body.Stub] are the two editing operations a pruner
// needs: drop whole messages, or replace tool-result content with a short
// placeholder while keeping the result block, its ids and the call.
//
// [Unwrap] gets a request body out of the recorded transcript envelopes kept
// under testdata/transcripts (tau-bench, OpenHands, SWE-agent, NeMo Gym,
// pydantic-ai cassettes and Claude Code session logs).
//
// # Guarding a body
//
// [Body.Context] builds a pruneguard.Context from a body (one core message
// per body message, id [ID](index), tokens from a [Tokenizer]), with
// calls and results paired by the same adjacency rules, units shaped to
// each dialect's atomic structure, and the tools array registered. The
// returned [Guarded] prunes through the core's gates plus a last one of
// its own: a decision that would leave the body breaking a provider rule
// the input did not break is shrunk, and what it leaves out is reported
// as a [Refusal] with gate "wire". The screen renders the decision's
// schema edits and tombstones too: a withdrawal that would break a tool
// rule is refused with that rule as its code, and one whose tombstone
// would not make the body smaller with [CodeSchemaNotSmaller].
// [Guarded.Body] is the body with the
// applied decisions carried out: evicted messages removed, stubbed results
// replaced with the stub text, withdrawn schemas removed from the tools
// array and tombstone lines appended to the system prompt.
//
// Reading and validating use only the standard library; the guarding
// part imports the pruneguard core, which never imports this package.
package wire

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
// top-level object back and only replaces the message array when it was
// edited, so an untouched body comes back byte for byte.
//
// [Validate] (and [Body.Validate]) lists the structural problems a provider
// would reject with HTTP 400, each as a [Violation] with a stable rule code,
// the message index and the provider's own error wording. A body that ends
// on tool calls still waiting for their results is reported with the
// separate "<dialect>/pending-calls" rule, because live agent histories
// legitimately end that way.
//
// [Body.Remove] and [Body.Stub] are the two editing operations a pruner
// needs: drop whole messages, or replace tool-result content with a short
// placeholder while keeping the result block, its ids and the call.
//
// [Unwrap] gets a request body out of the recorded transcript envelopes kept
// under testdata/transcripts (tau-bench, OpenHands, SWE-agent, NeMo Gym,
// pydantic-ai cassettes and Claude Code session logs).
//
// The package uses only the standard library and imports nothing of the
// pruneguard core, so it can read and validate bodies on its own; the glue
// to the core's context type lives elsewhere.
package wire

// Package wiretest is a fake LLM provider for tests and offline
// examples, in the manner of net/http/httptest: [NewProvider] starts a
// local HTTP server that speaks the request formats package wire reads
// (OpenAI Chat Completions and Responses, Anthropic Messages, Gemini
// generateContent, Bedrock Converse).
//
// For each request the provider finds the dialect from the method and
// path ([wire.RequestDialect]), checks the body as the real provider
// would ([wire.Validate]) and records it, then answers in the dialect's
// own response format: a tool call when the request declares tools and
// its last turn carries no tool result, text otherwise ([DefaultReply]),
// or whatever a [Config.Reply] of your own chooses. A body the provider
// would reject is answered with status 400 in the dialect's error format
// and reported as a failure, to a [Reporter] (a *testing.T) or, without
// one, kept for [Provider.Err].
//
// The package also holds what tests of an SDK middleware repeat: keeping
// what the middleware reports ([Reports]), counting the requests that
// break the provider's prompt cache ([Provider.CacheBreaks]), a session
// store that is down ([DownStore]), and the check that replicas sharing a
// session store send what one middleware sends ([Fleet]).
//
// The provider does not stream: every answer is one JSON response.
package wiretest

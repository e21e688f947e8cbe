// Package anthropic guards the requests the official Anthropic Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2) sends, as request middleware.
//
// Every Messages request is checked before it
// leaves: a body a provider would reject (a tool_result without its
// tool_use, tool_use blocks left without results, a tool_reference to an undeclared tool, ...) is not
// sent, and the call returns a *wire.RuleError naming the rule (match it
// with errors.As; the SDK does not retry it). A body over budget is
// pruned under pruneguard's gates, the provider-rule screen of package
// wire, and the cache-friendly trigger: within one conversation,
// consecutive requests keep the pruned prefix of the last prune until the
// request crosses the trigger again, and each prune frees at least
// MinClear tokens, so the provider's prompt cache is not broken on every
// turn.
//
//	import (
//		anthropic "github.com/anthropics/anthropic-sdk-go/v2"
//		anthropicguard "github.com/pruneguard/pruneguard/middleware/anthropic"
//	)
//
//	mw, err := anthropicguard.New(anthropicguard.Config{Session: wire.SessionConfig{
//		Guard:   pruneguard.Guard{Budget: 100_000},
//		Trigger: 120_000, MinClear: 20_000,
//	}})
//	client := anthropic.NewClient(mw.Option())
//
// The SDK sends the whole history with each request. The middleware keeps
// one [wire.Session] per conversation: the one named with
// [WithConversation] on the request's context, or else the one whose
// history the request continues. Only the new messages of each request
// are fed to it; the prefix it has seen is recognised by a hash of each
// message.
//
// The package is named after the SDK it wraps: import it under an alias
// (anthropicguard, as above) so that both keep a name. This package lives in
// a module of its own, so that the SDK stays out of the library's
// dependencies.
package anthropic

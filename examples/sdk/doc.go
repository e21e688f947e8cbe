// Package sdk holds tests that build request bodies with the official
// OpenAI and Anthropic Go SDKs, read them with pruneguard's wire package,
// prune them and check that the pruned bodies unmarshal back into the SDK
// types without loss. It lives in a module of its own so that the SDKs
// stay out of the library's dependencies.
package sdk

module github.com/pruneguard/pruneguard/middleware/openai

// openai-go v3.98.0 declares go 1.26.0, so this module needs it; the
// library itself stays at go 1.24 and does not depend on the SDK.
go 1.26.0

replace github.com/pruneguard/pruneguard => ../..

require (
	github.com/openai/openai-go/v3 v3.98.0
	github.com/pruneguard/pruneguard v0.0.0-00010101000000-000000000000
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)

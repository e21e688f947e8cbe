module github.com/pruneguard/pruneguard/examples/fleet

// go-redis v9.23.0 declares go 1.26.0, so this module needs it; the
// library itself stays at go 1.24.
go 1.26.0

replace (
	github.com/pruneguard/pruneguard => ../..
	github.com/pruneguard/pruneguard/stores/redis => ../../stores/redis
)

require (
	github.com/pruneguard/pruneguard v0.0.0-00010101000000-000000000000
	github.com/pruneguard/pruneguard/stores/redis v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

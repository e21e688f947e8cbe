module github.com/pruneguard/pruneguard/stores/redis

// go-redis v9.23.0 declares go 1.26.0, so this module needs it; the
// library itself stays at go 1.24 and does not depend on Redis.
go 1.26.0

replace github.com/pruneguard/pruneguard => ../..

require (
	github.com/pruneguard/pruneguard v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

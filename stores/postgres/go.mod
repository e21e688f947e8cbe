module github.com/pruneguard/pruneguard/stores/postgres

// pgx v5.12.0 declares go 1.25.0, so this module needs it; the library
// itself stays at go 1.24 and does not depend on PostgreSQL.
go 1.25.0

replace github.com/pruneguard/pruneguard => ../..

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/pruneguard/pruneguard v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/sessions/storetest"
	"github.com/pruneguard/pruneguard/stores/postgres"
)

// Two tenants on one PostgreSQL database, sharing one session table and
// one spill table (as a fleet does), stay apart by their ids and
// namespaces alone: neither loads the other's session nor recalls,
// verifies or finds by searching the other's segments, even with their
// keys.
func TestTenancy(t *testing.T) {
	db := pool(t)
	s := &postgres.Sessions{DB: db, Table: sessionTable(t, db)}
	sp := &postgres.Store{DB: db, Table: table(t, db)}
	require.NoError(t, storetest.Tenancy(t.Context(), s, sp))
}

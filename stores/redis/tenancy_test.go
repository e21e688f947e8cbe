package redis_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard/sessions/storetest"
	spillredis "github.com/pruneguard/pruneguard/stores/redis"
)

// Two tenants on one Redis, sharing one prefix for sessions and one for
// spilled content (as a fleet does), stay apart by their ids and
// namespaces alone: neither loads the other's session nor recalls,
// verifies or finds by searching the other's segments, even with their
// keys.
func TestTenancy(t *testing.T) {
	c := client(t)
	p := prefix()
	err := storetest.Tenancy(t.Context(), spillredis.Sessions{Client: c, Prefix: p + "session:"}, spillredis.Store{Client: c, Prefix: p + "spill:"})
	require.NoError(t, err)
}

package sessions_test

import (
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
	"github.com/pruneguard/pruneguard/spill"
)

// Two tenants sharing the embedded stores stay apart.
func TestTenancy(t *testing.T) {
	if err := storetest.Tenancy(t.Context(), &sessions.Memory{}, &spill.Memory{}); err != nil {
		t.Error("memory:", err)
	}
	if err := storetest.Tenancy(t.Context(), sessions.Dir(t.TempDir()), spill.Dir(t.TempDir())); err != nil {
		t.Error("directory:", err)
	}
}

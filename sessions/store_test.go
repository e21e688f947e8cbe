package sessions_test

import (
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) sessions.Store { return &sessions.Memory{} })
}

func TestDirConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) sessions.Store { return sessions.Dir(t.TempDir() + "/sessions") })
}

// The lock of systems without flock, run here.
func TestDirConformanceExclLocks(t *testing.T) {
	defer sessions.UseExclLocks()()
	storetest.Run(t, func(t *testing.T) sessions.Store { return sessions.Dir(t.TempDir()) })
}

// Stores share one directory, as processes do.
func TestDirConformanceSharedDir(t *testing.T) {
	dir := sessions.Dir(t.TempDir())
	storetest.Run(t, func(*testing.T) sessions.Store { return dir })
}

package sessions_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
)

// loadTurns is the turns each replica takes on each session in the
// stress tests: PRUNEGUARD_TEST_LOAD_TURNS, or def.
func loadTurns(t *testing.T, def int) int {
	s := os.Getenv("PRUNEGUARD_TEST_LOAD_TURNS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("PRUNEGUARD_TEST_LOAD_TURNS: %v", err)
	}
	return n
}

// Two replicas on one directory, as two processes of one machine: 64
// sessions, zero lost updates.
func TestDirStress(t *testing.T) {
	dir := sessions.Dir(t.TempDir())
	r, err := storetest.Stress(t.Context(), []sessions.Store{dir, dir}, storetest.StressConfig{Sessions: 64, Turns: loadTurns(t, 5)})
	t.Log(r)
	if err != nil {
		t.Fatal(err)
	}
}

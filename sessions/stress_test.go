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

// Two replicas on one directory whose state is a runtime's Context: zero
// lost updates. PRUNEGUARD_TEST_LOAD_FULL runs 64 conversations of 200
// turns per replica.
func TestDirStressContext(t *testing.T) {
	dir := sessions.Dir(t.TempDir())
	cfg := storetest.ContextLoad(os.Getenv("PRUNEGUARD_TEST_LOAD_FULL") != "")
	r, err := storetest.Stress(t.Context(), []sessions.Store{dir, dir}, cfg)
	t.Log(r)
	if err != nil {
		t.Fatal(err)
	}
}

package sessions_test

import (
	"os"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
)

// TestDirCrashChild is the child of TestDirCrash.
func TestDirCrashChild(t *testing.T) {
	storetest.CrashChild(t, func(dir string) sessions.Store { return sessions.Dir(dir) })
}

// TestDirCrash kills two processes saving one session in a Dir with
// SIGKILL, mid-save, many times over: the session always loads, whole,
// and no update is lost; a kill leaves at most one stray temporary file
// per process.
func TestDirCrash(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	dir := t.TempDir()
	n := storetest.Crash(t, sessions.Dir(dir), storetest.CrashConfig{Child: "TestDirCrashChild", Arg: dir, Rounds: rounds})
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	temps := 0
	for _, f := range files {
		switch name := f.Name(); {
		case strings.HasPrefix(name, ".tmp-"):
			temps++
		case strings.HasPrefix(name, "session-"), strings.HasPrefix(name, "lock-"):
		default:
			t.Errorf("unexpected file %q", name)
		}
	}
	if temps > 2*rounds {
		t.Errorf("%d stray temporary files after %d rounds of two kills", temps, rounds)
	}
	t.Logf("%d rounds, counter at %d, %d stray temporary files", rounds, n, temps)
}

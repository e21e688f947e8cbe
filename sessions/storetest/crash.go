package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pruneguard/pruneguard/internal/storecheck"
	"github.com/pruneguard/pruneguard/sessions"
)

// Environment of a child process Crash starts.
const (
	crashIDEnv  = "PRUNEGUARD_SESSIONS_CRASH_ID"
	crashArgEnv = "PRUNEGUARD_SESSIONS_CRASH_ARG"
)

// CrashConfig configures a [Crash] run.
type CrashConfig struct {
	// Child names the test function of the same test binary that calls
	// [CrashChild]; Crash runs it in child processes.
	Child string
	// Arg is handed to the child's newStore, to make a store on what the
	// parent's store keeps its sessions in (a directory, a key prefix).
	Arg string
	// Rounds is how many times two children are started and killed;
	// default 20.
	Rounds int
}

// Crash kills processes mid-save and checks that the session they save
// is always the last state saved or the one being saved, whole and
// loadable. Each round it starts two child processes, which increment a
// counter in one session by load-modify-save (the state is the counter
// and up to a few hundred kilobytes derived from it) and report every
// Save that returned; it lets them save a few times, then kills both
// with SIGKILL at random moments. After each round the session must
// load through s (a store on what the children save into) and hold a
// state a child wrote whole; the counter must have gone up by at least
// the Saves the children reported and at most two more (a Save each may
// have completed unreported), and no value may have been reported
// twice (two Saves that both succeeded from one version: a lost update).
// It returns the counter's final value.
func Crash(t *testing.T, s sessions.Store, cfg CrashConfig) int {
	t.Helper()
	if cfg.Rounds <= 0 {
		cfg.Rounds = 20
	}
	id := "crash-" + storecheck.RandomHex(6)
	seen := map[int]bool{}
	last := 0
	for round := range cfg.Rounds {
		reported := crashRound(t, cfg, id)
		n, _, err := readCounter(t.Context(), s, id)
		if errors.Is(err, sessions.ErrNotFound) && last == 0 && len(reported) == 0 {
			continue // killed before the first Save
		}
		if err != nil {
			t.Fatalf("round %d: after SIGKILL the session does not load: %v", round, err)
		}
		for _, r := range reported {
			if seen[r] {
				t.Fatalf("round %d: two Saves both wrote counter %d: an update was lost", round, r)
			}
			seen[r] = true
			if r <= last || r > n {
				t.Fatalf("round %d: a child reported saving %d, the counter went from %d to %d", round, r, last, n)
			}
		}
		if n-last < len(reported) || n-last > len(reported)+2 {
			t.Fatalf("round %d: the counter went from %d to %d, the children reported %d Saves", round, last, n, len(reported))
		}
		last = n
	}
	return last
}

// crashRound starts two children, kills them mid-save, and returns the
// counters they reported saving.
func crashRound(t *testing.T, cfg CrashConfig, id string) []int {
	var (
		mu       sync.Mutex
		reported []int
		wg       sync.WaitGroup
	)
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^"+cfg.Child+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashIDEnv+"="+id, crashArgEnv+"="+cfg.Arg)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(out)
		if line, err := lines.ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not start: %q %v\n%s", line, err, stderr.String())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			saves := readSaves(lines, mrand.IntN(4))
			time.Sleep(time.Duration(mrand.IntN(10_000)) * time.Microsecond)
			cmd.Process.Kill()
			saves = append(saves, readSaves(lines, -1)...)
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Exited() {
				t.Errorf("child ended before it was killed (%v):\n%s", err, stderr.String())
			}
			mu.Lock()
			reported = append(reported, saves...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return reported
}

// readSaves reads up to n (all, if n < 0) "saved N" lines of a child.
func readSaves(r *bufio.Reader, n int) []int {
	var saves []int
	for n < 0 || len(saves) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			if n >= 0 {
				go io.Copy(io.Discard, r)
			}
			return saves
		}
		var v int
		if _, err := fmt.Sscanf(line, "saved %d\n", &v); err == nil {
			saves = append(saves, v)
		}
	}
	return saves
}

// CrashChild is the child process of [Crash]: call it from the test
// function CrashConfig.Child names, which it skips unless Crash started
// the process. newStore makes the child's store from CrashConfig.Arg.
// It increments the counter until it is killed, or for 20 seconds.
func CrashChild(t *testing.T, newStore func(arg string) sessions.Store) {
	id := os.Getenv(crashIDEnv)
	if id == "" {
		t.Skip("run by storetest.Crash")
	}
	s := newStore(os.Getenv(crashArgEnv))
	fmt.Println("ready")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, err := bump(t.Context(), s, id)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("saved %d\n", n) // one write: whole or not at all
	}
}

// bump adds one to the counter Crash keeps under id, creating it at
// 1, retrying on conflicts, and returns the value it saved.
func bump(ctx context.Context, s sessions.Store, id string) (int, error) {
	for {
		n, v, err := readCounter(ctx, s, id)
		if errors.Is(err, sessions.ErrNotFound) {
			n, v, err = 0, sessions.Absent, nil
		}
		if err != nil {
			return 0, err
		}
		_, err = s.Save(ctx, id, counterState(n+1), v)
		if errors.Is(err, sessions.ErrConflict) {
			continue
		}
		return n + 1, err
	}
}

// counterState is the state of counter n: n on a line, then 64 to 320
// KiB of bytes derived from n.
func counterState(n int) []byte {
	size := (1 + n%5) << 16
	b := make([]byte, 0, 24+size)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\n')
	r := mrand.New(mrand.NewPCG(uint64(n), 0x5e55))
	for range size / 8 {
		b = binary.LittleEndian.AppendUint64(b, r.Uint64())
	}
	return b
}

// readCounter loads the counter under id, checking that its state is
// the whole state of its value.
func readCounter(ctx context.Context, s sessions.Store, id string) (int, sessions.Version, error) {
	state, v, err := s.Load(ctx, id)
	if err != nil {
		return 0, v, err
	}
	line, _, _ := bytes.Cut(state, []byte("\n"))
	n, err := strconv.Atoi(string(line))
	if err != nil || n <= 0 {
		return 0, v, fmt.Errorf("session %q holds %s, not a counter's state", id, describe(state))
	}
	if !bytes.Equal(state, counterState(n)) {
		return 0, v, fmt.Errorf("session %q holds %s, not the whole state of counter %d", id, describe(state), n)
	}
	return n, v, nil
}

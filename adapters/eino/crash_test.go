package einoguard_test

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/spill"
)

// crashDirEnv names the directory a replica of TestCrashedReplica keeps
// its sessions and spills in; set only in the child processes.
const crashDirEnv = "EINOGUARD_CRASH_DIR"

// crashTurns is the length of the conversation TestCrashedReplica serves.
const crashTurns = 30

// TestCrashChild is a replica process of TestCrashedReplica: it reads
// the index of a list of the script on each line of its input, guards
// that list through a session on the directory store, and answers
// "sent K HASH" with the SHA-256 of the list it would send.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashedReplica")
	}
	m := fleetModes[3] // stubs showing pointers: spills, descriptions, the note
	s := mustNew(t, fleetConfig(m, spill.Dir(filepath.Join(dir, "spill")), sessions.Dir(filepath.Join(dir, "sessions"))))
	script := fleetScript(crashTurns)
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	for in.Scan() {
		k, err := strconv.Atoi(in.Text())
		if err != nil || k < 0 || k >= len(script) {
			t.Fatalf("bad request %q", in.Text())
		}
		out, _, err := s.Prune(t.Context(), cloneList(script[k]))
		if err != nil {
			fmt.Printf("error %d %v\n", k, err)
			continue
		}
		fmt.Printf("sent %d %x\n", k, sha256.Sum256([]byte(sentJSON(t, out))))
	}
}

// A replica killed with SIGKILL in the middle of its passes (and so, at
// times, in the middle of a save) leaves the conversation's state
// loadable, and a replica started after it, given the request whose
// answer never came, continues the conversation sending exactly what
// one session that never stopped sends.
func TestCrashedReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	script := fleetScript(crashTurns)
	want := reference(t, fleetModes[3], script)
	dir := t.TempDir()
	store := sessions.Dir(filepath.Join(dir, "sessions"))
	id := sessions.ID("acme", "conv-1")
	kills, landed := 0, 0 // replicas killed, and those whose pass was saved
	for k := 0; k < len(script); {
		c := startReplica(t, dir)
		for k < len(script) {
			if kills < 12 && mrand.IntN(3) == 0 {
				_, before, _ := store.Load(t.Context(), id)
				c.send(t, k)
				time.Sleep(time.Duration(mrand.IntN(4000)) * time.Microsecond)
				c.kill(t)
				kills++
				if _, after, err := store.Load(t.Context(), id); err == nil && after != before {
					landed++
				} else if err != nil && k > 0 {
					t.Fatalf("after a kill the conversation does not load: %v", err)
				}
				break
			}
			c.send(t, k)
			got := c.reply(t)
			if wantLine := fmt.Sprintf("sent %d %x", k, sha256.Sum256([]byte(want[k]))); got != wantLine {
				t.Fatalf("after %d kills, list %d: the replica answered %q, one session would send %q", kills, k, got, wantLine)
			}
			k++
		}
		if k == len(script) {
			c.kill(t)
		}
	}
	if kills == 0 {
		t.Fatal("no replica was killed")
	}
	temps, _ := filepath.Glob(filepath.Join(dir, "sessions", ".tmp-*"))
	t.Logf("%d lists served by replicas killed %d times: %d after their pass was saved, %d saves cut off mid-write", len(script), kills, landed, len(temps))
}

// replica is a child process of TestCrashedReplica.
type replica struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
}

func startReplica(t *testing.T, dir string) *replica {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: new(strings.Builder)}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line := r.reply(t); line != "ready" {
		r.kill(t)
		t.Fatalf("replica did not start: %q\n%s", line, r.stderr)
	}
	return r
}

func (r *replica) send(t *testing.T, k int) {
	t.Helper()
	if _, err := fmt.Fprintf(r.in, "%d\n", k); err != nil {
		t.Fatalf("replica: %v\n%s", err, r.stderr)
	}
}

func (r *replica) reply(t *testing.T) string {
	t.Helper()
	line, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatalf("replica: %v\n%s", err, r.stderr)
	}
	return strings.TrimSuffix(line, "\n")
}

// kill ends the replica with SIGKILL and waits for it.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	r.cmd.Process.Kill()
	go io.Copy(io.Discard, r.out)
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Exited() {
		t.Fatalf("replica ended before it was killed (%v):\n%s", err, r.stderr)
	}
}

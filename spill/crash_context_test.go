package spill_test

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// sessionDirEnv tells a re-executed test binary to act as the session
// crash test's child, in the directory it names.
const sessionDirEnv = "PRUNEGUARD_SESSION_CRASH_DIR"

// sessionFile is the child's saved session: the Context's state and the
// pointers of every message its applied decisions took out of the
// prompt, written whole or not at all.
type sessionFile struct {
	Next    int                    `json:"next"` // the number of the next message
	Notes   []pruneguard.SpillNote `json:"notes"`
	Context json.RawMessage        `json:"context"`
}

// sessionContent is what message n holds: derived from n alone, so that
// the parent knows what any message must read back as.
func sessionContent(n int) []byte {
	r := mrand.New(mrand.NewPCG(uint64(n), 17))
	b := make([]byte, 200+r.IntN(2000))
	for i := range b {
		b[i] = 'a' + byte(r.IntN(26))
	}
	return b
}

func sessionNumber(id pruneguard.MessageID) (int, bool) {
	s, ok := strings.CutPrefix(string(id), "m-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// loadSession restores the saved session in dir over the store, or
// starts one.
func loadSession(dir string, sp *spill.Spiller) (*pruneguard.Context, sessionFile, error) {
	cfg := pruneguard.Config{Resolver: sp}
	b, err := os.ReadFile(filepath.Join(dir, "session"))
	if errors.Is(err, os.ErrNotExist) {
		c := pruneguard.NewContext(cfg)
		err := c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 20, Pinned: true, Content: []byte("system")})
		return c, sessionFile{}, err
	}
	if err != nil {
		return nil, sessionFile{}, err
	}
	var f sessionFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, f, err
	}
	c, err := pruneguard.Restore(bytes.NewReader(f.Context), cfg)
	return c, f, err
}

// saveSession writes the session atomically: a temporary file, synced,
// renamed over the last one, and the directory synced.
func saveSession(dir string, c *pruneguard.Context, f sessionFile) error {
	var state bytes.Buffer
	if err := c.Save(&state); err != nil {
		return err
	}
	f.Context = state.Bytes()
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".session-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "session")); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// TestCrashSessionChild is the child of TestCrashSession: it resumes the
// saved session, then adds turns and lets a spilling Guard hold the
// Context under a small budget, saving the session after every decision
// applied, until it is killed or has run for a while.
func TestCrashSessionChild(t *testing.T) {
	dir := os.Getenv(sessionDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashSession")
	}
	sp := &spill.Spiller{Store: spill.Dir(filepath.Join(dir, "store"))}
	c, f, err := loadSession(dir, sp)
	if err != nil {
		t.Fatal(err)
	}
	// One decision per check, so that the session is saved after each.
	g := pruneguard.Guard{Budget: 3000, Spill: sp, Rounds: 1}
	fmt.Println("ready")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n := f.Next
		f.Next++
		id := pruneguard.MessageID("m-" + strconv.Itoa(n))
		content := sessionContent(n)
		m := pruneguard.Message{ID: id, Role: pruneguard.RoleUser, Tokens: len(content) / 4, Content: content}
		if n%3 == 1 {
			// A call and its result, of a tool nobody described: its
			// output cannot be had again.
			m = pruneguard.Message{ID: id, Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{{ID: pruneguard.CallID("k" + strconv.Itoa(n)), Tool: "probe", Args: []byte(`{}`)}}}
		}
		if n%3 == 2 {
			m = pruneguard.Message{ID: id, Role: pruneguard.RoleTool, Tokens: len(content) / 4, Content: content, Answers: []pruneguard.CallID{pruneguard.CallID("k" + strconv.Itoa(n-1))}}
		}
		if err := c.Append(m); err != nil {
			t.Fatal(err)
		}
		for {
			res, err := g.Check(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range res.Decisions {
				f.Notes = append(f.Notes, d.Pointers...)
			}
			if err := saveSession(dir, c, f); err != nil {
				t.Fatal(err)
			}
			fmt.Println("saved")
			if len(res.Decisions) == 0 {
				break
			}
		}
	}
}

// TestCrashSession kills a child process running a spilling Guard over a
// directory store at random moments, many times. After each kill a fresh
// process's view (a new Spiller over the same store and the Context
// restored from the last saved session) must hold: every message an
// applied decision took out of the prompt behind a pointer, and every
// message the Context holds with a pointer, resolves, and reads back
// exactly what was written; the messages the Context holds are what was
// written too. The next child resumes from that session.
func TestCrashSession(t *testing.T) {
	ctx := t.Context()
	if os.Getenv(sessionDirEnv) != "" {
		t.Skip("in the child")
	}
	kills := 30
	if testing.Short() {
		kills = 8
	}
	dir := t.TempDir()
	store := spill.Dir(filepath.Join(dir, "store"))
	start := time.Now()
	checked, spilled := 0, 0
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSessionChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), sessionDirEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		lines := bufio.NewReader(out)
		line, err := lines.ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Wait()
			t.Fatalf("child did not start: %q %v\n%s", line, err, stderr.String())
		}
		saves := mrand.IntN(12)
		for range saves {
			line, err := lines.ReadString('\n')
			if err != nil || line != "saved\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child stopped: %q %v\n%s", line, err, stderr.String())
			}
		}
		go io.Copy(io.Discard, lines)
		time.Sleep(time.Duration(mrand.IntN(5_000)) * time.Microsecond)
		require.NoError(t, cmd.Process.Kill(), "SIGKILL")
		err = cmd.Wait()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit) && !exit.Exited(), "child %d must die by the signal, not exit: %v\n%s", i, err, stderr.String())

		fresh := &spill.Spiller{Store: store}
		c, f, err := loadSession(dir, fresh)
		require.NoError(t, err, "kill %d: the last saved session must restore", i)
		// readsBack checks that p resolves and holds message id as written.
		// The pointers the restored Context holds resolve as Restore left
		// them; the others are verified first.
		readsBack := func(id pruneguard.MessageID, p pruneguard.Pointer, verify bool) {
			if verify {
				require.NoError(t, fresh.Verify(ctx, p), "kill %d: %s was taken out behind %v", i, id, p)
			}
			require.True(t, fresh.Resolvable(p), "kill %d: %s was taken out behind %v, which does not resolve", i, id, p)
			ms, err := fresh.Recall(ctx, p)
			require.NoError(t, err)
			n, ok := sessionNumber(id)
			require.True(t, ok, id)
			for _, m := range ms {
				if m.ID == id {
					if n%3 != 1 {
						require.Equal(t, sessionContent(n), m.Content, "kill %d: %s does not read back as written", i, id)
					}
					checked++
					return
				}
			}
			t.Fatalf("kill %d: the segment %v does not hold %s", i, p, id)
		}
		for _, m := range c.Messages() {
			if !m.Pointer.IsZero() {
				readsBack(m.ID, m.Pointer, false)
			}
			if n, ok := sessionNumber(m.ID); ok && n%3 != 1 {
				e := entry(c, m.ID)
				if !e.Stubbed {
					require.Equal(t, sessionContent(n), m.Content, "kill %d: %s in the restored context", i, m.ID)
				} else {
					require.False(t, m.Pointer.IsZero(), "kill %d: %s was stubbed, but it cannot be had again and has no pointer", i, m.ID)
				}
			}
		}
		for _, note := range f.Notes {
			readsBack(note.Message, note.Pointer, true)
		}
		spilled = len(f.Notes)
	}
	t.Logf("%d kills in %v; %d messages taken out behind pointers, %d read-backs checked", kills, time.Since(start).Round(time.Millisecond), spilled, checked)
	require.Positive(t, spilled, "the children must have spilled")
}

func entry(c *pruneguard.Context, id pruneguard.MessageID) pruneguard.Entry {
	for _, e := range c.Snapshot() {
		if e.ID == id {
			return e
		}
	}
	return pruneguard.Entry{}
}

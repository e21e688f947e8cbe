package spill_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// crashDirEnv tells a re-executed test binary to act as the crash test's
// child, spilling into the directory it names.
const crashDirEnv = "PRUNEGUARD_SPILL_CRASH_DIR"

// crashMessages are the messages the child spills in its spill number
// seq: one to four, of up to 16 KiB each, all derived from seq so that
// the parent can tell what any segment should hold.
func crashMessages(seq uint64) []pruneguard.Message {
	r := mrand.New(mrand.NewPCG(seq, seq>>7))
	ms := make([]pruneguard.Message, 1+r.IntN(4))
	for i := range ms {
		var content []byte // empty content is recalled nil
		for range r.IntN(16 << 10) {
			content = append(content, byte(r.Uint32()))
		}
		ms[i] = pruneguard.Message{
			ID:      pruneguard.MessageID(fmt.Sprintf("m-%d-%d", seq, i)),
			Role:    pruneguard.RoleTool,
			Tokens:  len(content) / 4,
			Content: content,
			Facts:   pruneguard.TransientState,
		}
	}
	return ms
}

// TestCrashChild is the child of TestCrashSpill: it spills in a loop and
// records each pointer it was handed in a journal, until it is killed or
// has run for a while.
func TestCrashChild(t *testing.T) {
	ctx := t.Context()
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashSpill")
	}
	journal, err := os.OpenFile(filepath.Join(dir, "journal"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s := &spill.Spiller{Store: spill.Dir(filepath.Join(dir, "store"))}
	fmt.Println("ready")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var b [8]byte
		rand.Read(b[:])
		seq := binary.LittleEndian.Uint64(b[:]) >> 1
		p, err := s.SpillMessages(ctx, crashMessages(seq))
		if err != nil {
			t.Fatal(err)
		}
		// One write: a kill leaves at most a torn last line.
		if _, err := journal.WriteString(p.Key + " " + strconv.FormatUint(seq, 10) + "\n"); err != nil {
			t.Fatal(err)
		}
		fmt.Println("spilled")
	}
}

// TestCrashSpill kills a spilling child process at random moments and
// checks after each restart that every pointer the child was handed
// resolves, in a fresh Spiller, to exactly what was spilled, and that
// whatever the store holds is either a whole segment of what the child
// wrote or refused by Get as corrupt.
func TestCrashSpill(t *testing.T) {
	ctx := t.Context()
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	kills := 50
	if testing.Short() {
		kills = 10
	}
	dir := t.TempDir()
	store := spill.Dir(filepath.Join(dir, "store"))
	checked := map[string]bool{} // segment files already checked
	journaled := 0
	atLeast := 0 // spills the children reported done
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
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
		// Let the child finish a few spills, then kill it a random moment
		// into the next one, however fast this machine runs it.
		spills := mrand.IntN(4)
		for range spills {
			line, err := lines.ReadString('\n')
			if err != nil || line != "spilled\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child stopped: %q %v\n%s", line, err, stderr.String())
			}
		}
		atLeast += spills
		go io.Copy(io.Discard, lines)
		time.Sleep(time.Duration(mrand.IntN(10_000)) * time.Microsecond)
		require.NoError(t, cmd.Process.Kill(), "SIGKILL")
		err = cmd.Wait()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit) && !exit.Exited(), "child %d must die by the signal, not exit: %v\n%s", i, err, stderr.String())

		// A fresh Spiller, as a restarted process has.
		fresh := &spill.Spiller{Store: store}
		entries := readJournal(t, filepath.Join(dir, "journal"))
		for _, e := range entries[journaled:] {
			p := pruneguard.Pointer{Store: spill.DefaultName, Key: e.key}
			require.False(t, fresh.Resolvable(p), "kill %d: pointer %s resolves before it was verified", i, e.key)
			require.NoError(t, fresh.Verify(ctx, p), "kill %d: pointer %s was handed out and must resolve", i, e.key)
			require.True(t, fresh.Resolvable(p), "kill %d: pointer %s resolves once verified", i, e.key)
			got, err := fresh.Recall(ctx, p)
			require.NoError(t, err)
			if !assert.ObjectsAreEqual(crashMessages(e.seq), got) {
				t.Fatalf("kill %d: segment %s does not hold what was spilled", i, e.key)
			}
		}
		journaled = len(entries)

		files, err := os.ReadDir(string(store))
		if !errors.Is(err, os.ErrNotExist) { // killed before its first spill made the directory
			require.NoError(t, err)
		}
		temps, segments := 0, 0
		for _, f := range files {
			key, ok := strings.CutPrefix(f.Name(), "spill-")
			if !ok {
				require.True(t, strings.HasPrefix(f.Name(), ".tmp-"), f.Name())
				temps++
				continue
			}
			segments++
			if checked[key] {
				continue
			}
			checked[key] = true
			// Every segment on disk, journaled or not, is whole: the child
			// only ever wrote whole ones.
			ms, err := fresh.Recall(ctx, pruneguard.Pointer{Store: spill.DefaultName, Key: key})
			require.NoError(t, err, "kill %d: segment %s is on disk but does not read back", i, key)
			var seq uint64
			_, err = fmt.Sscanf(string(ms[0].ID), "m-%d-0", &seq)
			require.NoError(t, err)
			if !assert.ObjectsAreEqual(crashMessages(seq), ms) {
				t.Fatalf("kill %d: segment %s does not hold what was spilled", i, key)
			}
		}
		require.LessOrEqual(t, temps, i+1, "at most one stray temporary file per kill")
		require.LessOrEqual(t, segments-journaled, i+1, "at most one segment without a journal line per kill")
	}
	t.Logf("%d kills, %d pointers handed out, %d segments on disk", kills, journaled, len(checked))
	require.GreaterOrEqual(t, journaled, atLeast, "every spill a child reported is journaled")
}

type journalEntry struct {
	key string
	seq uint64
}

// readJournal reads the whole lines of the child's journal; a torn last
// line is the write a kill interrupted.
func readJournal(t *testing.T, path string) []journalEntry {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var es []journalEntry
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			break
		}
		b = rest
		key, seq, ok := strings.Cut(string(line), " ")
		require.True(t, ok, "journal line %q", line)
		n, err := strconv.ParseUint(seq, 10, 64)
		require.NoError(t, err)
		es = append(es, journalEntry{key, n})
	}
	return es
}

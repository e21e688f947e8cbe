package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A spill directory that cannot be written does not pass silently: the
// report says which spills failed and why, the messages stay in the
// output, and the exit code is that of the budget (3 here).
func TestPruneSpillUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "", "prune", "--budget", "4000", "--spill", file, body)
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, errs)
	}
	rep := report(t, errs)
	if len(rep.Spilled) != 0 || len(rep.SpillFailed) == 0 {
		t.Fatalf("spilled %v, spill_failed %v", rep.Spilled, rep.SpillFailed)
	}
	for _, f := range rep.SpillFailed {
		if len(f.Indexes) == 0 || !strings.Contains(f.Error, "not a directory") {
			t.Errorf("spill_failed entry %+v", f)
		}
	}
	if !strings.Contains(rep.Description, "failed (see spill_failed)") {
		t.Errorf("summary %q", rep.Description)
	}
	if strings.Contains(out, "recall") {
		t.Error("the output points at content that was never stored")
	}
	// Within reach of a writable directory, no failure is reported.
	code, _, errs = runCmd(t, "", "prune", "--budget", "4000", "--spill", filepath.Join(t.TempDir(), "s"), body)
	if rep := report(t, errs); code != 0 || len(rep.SpillFailed) != 0 || strings.Contains(errs, "spill_failed") {
		t.Errorf("exit %d, %s", code, errs)
	}
}

// A key whose entry was deleted after the prune exits 2 with one line.
func TestRecallDeletedEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	code, _, errs := runCmd(t, "", "prune", "--budget", "4000", "--spill", dir, body)
	rep := report(t, errs)
	if code != 0 || len(rep.Spilled) == 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	key := rep.Spilled[0].Key
	if err := os.Remove(filepath.Join(dir, "spill-"+key)); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "", "recall", "--spill", dir, key)
	if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

const transcriptDir = "../../testdata/transcripts"

func transcripts(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(transcriptDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "SOURCES.md" {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	return files
}

// TestTranscriptSweep prunes every recorded transcript at 25%, 50% and 75%
// of its input tokens with each policy and both assumptions about
// unannotated tools. The output must validate no worse than the input,
// read back and write back unchanged, and never hold more tokens than the
// input.
func TestTranscriptSweep(t *testing.T) {
	var runs, reached, exit3, pruned int
	var ms []float64
	for _, path := range transcripts(t) {
		name, _ := filepath.Rel(transcriptDir, path)
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		body, d, err := wire.Unwrap(file, path)
		if err != nil {
			t.Fatalf("%s: Unwrap: %v", name, err)
		}
		in, err := wire.Read(body, d)
		if err != nil {
			t.Fatalf("%s: Read: %v", name, err)
		}
		inV := in.Validate()
		total := wire.Tokens(in, nil)
		for _, pct := range []int{25, 50, 75} {
			for _, pol := range []string{"oldest", "largest", "keep-last-tools"} {
				for _, un := range []wire.Unannotated{wire.UnannotatedIrreducible, wire.UnannotatedRegenerable} {
					o := pruneOpts{budget: total * pct / 100, policy: pol, keep: 3, unannotated: un, boundary: pruneguard.BoundaryRelaxed}
					g, rep, code, err := prune(body, d, o)
					runs++
					if err != nil {
						t.Errorf("%s %d%% %s %s: %v", name, pct, pol, un, err)
						continue
					}
					var buf bytes.Buffer
					if _, err := g.WriteTo(&buf); err != nil {
						t.Fatal(err)
					}
					out := buf.Bytes()
					ms = append(ms, rep.PruneMS)
					switch code {
					case 0:
						reached++
					case 3:
						exit3++
					default:
						t.Errorf("%s %d%% %s %s: exit %d", name, pct, pol, un, code)
					}
					if rep.Outcome == "pruned" {
						pruned++
					}
					ob, err := wire.Read(out, d)
					if err != nil {
						t.Errorf("%s %d%% %s %s: output does not read: %v", name, pct, pol, un, err)
						continue
					}
					if nv := wire.NewViolations(inV, ob.Validate()); len(nv) > 0 {
						t.Errorf("%s %d%% %s %s: output worse than input: %v", name, pct, pol, un, nv)
					}
					back, err := ob.Marshal()
					if err != nil || !bytes.Equal(back, out) {
						t.Errorf("%s %d%% %s %s: output does not round trip (%v)", name, pct, pol, un, err)
					}
					if rep.OutputTokens > rep.InputTokens || rep.InputTokens != total {
						t.Errorf("%s %d%% %s %s: tokens %d -> %d (input %d)", name, pct, pol, un, rep.InputTokens, rep.OutputTokens, total)
					}
					if code == 0 && rep.OutputTokens > o.budget {
						t.Errorf("%s %d%% %s %s: exit 0 over budget", name, pct, pol, un)
					}
					if code == 3 && rep.OutputTokens <= o.budget {
						t.Errorf("%s %d%% %s %s: exit 3 within budget", name, pct, pol, un)
					}
					if rep.WithinBudget != (code == 0) || rep.OutputTokens != wire.Tokens(ob, nil) {
						t.Errorf("%s %d%% %s %s: within_budget %v, exit %d, output tokens %d, report %d", name, pct, pol, un, rep.WithinBudget, code, wire.Tokens(ob, nil), rep.OutputTokens)
					}
				}
			}
		}
	}
	slices.Sort(ms)
	t.Logf("%d runs: %d reached the budget, %d exit 3, %d pruned; prune_ms median %.3f, p90 %.3f, max %.3f",
		runs, reached, exit3, pruned, ms[len(ms)/2], ms[len(ms)*9/10], ms[len(ms)-1])
}

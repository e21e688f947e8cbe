// Command facts measures how many of the facts a later turn uses survive
// a prune of the turns before it.
//
// Each session (the recorded transcripts, and generated sessions with
// planted facts) is cut at several points: the messages before the cut
// are the past, what the model was sent for the turn at the cut. The
// facts a later assistant turn uses are the facts extracted from the past
// (internal/facts) whose first appearance after the cut is in an
// assistant message. Each mode prunes the past to a budget, a fraction of
// the past's tokens, and each used fact is counted as kept (the body
// sent carries it), recallable (a spilled segment carries it whose key
// the body shows, or a segment reached so shows, as a model follows the
// pointers) or lost. The table gives, per mode and budget, the
// facts used; the share kept, recallable and lost; the share usable,
// kept or recallable in an output both within the budget and valid; and
// how many outputs were within the budget and valid (breaking no
// provider rule the past kept); and, over the runs whose output is within
// the budget and valid, the share of their facts usable and the share
// kept in the prompt itself; and the same share over those of these runs
// whose budget can hold the used facts at all: beside what the output
// kept of the past as it was (its system prompt, the messages it left
// untouched), room for each used fact that part does not show, written
// once, counting nothing for a summary's header or a pointer's key.
//
// Usage:
//
//	go run ./bench/facts [-transcripts DIR] [-generated N] [-cuts 0.5,0.75] [-budgets 0.25,0.5,0.75] [-v]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("facts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("transcripts", "testdata/transcripts", "the recorded transcripts' directory")
	gen := fs.Int("generated", 8, "how many sessions with planted facts to generate")
	cuts := fs.String("cuts", "0.5,0.75", "where to cut each session, as fractions of its messages")
	budgets := fs.String("budgets", "0.25,0.5,0.75", "budgets, as fractions of the past's tokens")
	verbose := fs.Bool("v", false, "print each run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c := config{modes: modes}
	var err error
	if c.cuts, err = fractions(*cuts); err == nil {
		c.budgets, err = fractions(*budgets)
	}
	if err != nil {
		fmt.Fprintln(stderr, "facts:", err)
		return 2
	}
	if c.tmp, err = os.MkdirTemp("", "facts-bench-"); err != nil {
		fmt.Fprintln(stderr, "facts:", err)
		return 1
	}
	defer os.RemoveAll(c.tmp)

	start := time.Now()
	sets := []struct {
		title    string
		sessions []*session
	}{}
	if *dir != "" {
		ts, err := loadTranscripts(*dir)
		if err != nil {
			fmt.Fprintln(stderr, "facts:", err)
			return 1
		}
		sets = append(sets, struct {
			title    string
			sessions []*session
		}{fmt.Sprintf("Recorded transcripts (%d sessions)", len(ts)), ts})
	}
	if *gen > 0 {
		gs := generated(*gen)
		sets = append(sets, struct {
			title    string
			sessions []*session
		}{fmt.Sprintf("Generated sessions with planted facts (%d sessions)", len(gs)), gs})
	}
	fmt.Fprintf(stdout, "cuts %s of each session's messages; budgets %s of the past's tokens\n", *cuts, *budgets)
	for _, m := range c.modes {
		fmt.Fprintf(stdout, "- %s: %s\n", m.name, m.note)
	}
	failed := false
	for _, set := range sets {
		var rs []result
		for _, s := range set.sessions {
			rs = append(rs, measureSession(s, c)...)
		}
		for _, r := range rs {
			if r.err != nil {
				failed = true
				fmt.Fprintf(stderr, "facts: %s cut %d budget %.2f %s: %v\n", r.session, r.cut, r.budget, r.mode, r.err)
			}
			if *verbose {
				fmt.Fprintf(stdout, "%s cut=%d budget=%.2f %s used=%d kept=%d recallable=%d lost=%d within=%v valid=%v\n",
					r.session, r.cut, r.budget, r.mode, r.used, r.kept, r.recallable, r.lost, r.within, r.valid)
			}
		}
		printTable(stdout, set.title, summarize(rs, c))
	}
	fmt.Fprintf(stdout, "\n%.1fs\n", time.Since(start).Seconds())
	if failed {
		return 1
	}
	return 0
}

// fractions parses a comma-separated list of numbers in (0, 1].
func fractions(s string) ([]float64, error) {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 1 {
			return nil, fmt.Errorf("%q is not a fraction in (0, 1]", p)
		}
		out = append(out, f)
	}
	return out, nil
}

package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	prunedLine = regexp.MustCompile(`^request +\d+: +(\d+) tokens, over the trigger: pruned to (\d+), (evicted m\d+( m\d+)*, )?stubbed m\d+`)
	asIsLine   = regexp.MustCompile(`^request +\d+: +(\d+) tokens, under the trigger: sent as the history stands$`)
)

// TestRun runs the example and checks what it prints: prunes that stub
// old tool results and free at least the minimum, the requests between
// them under the trigger and sent as they stand, the broken history
// refused last, and the same output on every run.
func TestRun(t *testing.T) {
	var a, b bytes.Buffer
	if err := run(&a); err != nil {
		t.Fatal(err)
	}
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("output differs between runs:\n%s\n---\n%s", a.String(), b.String())
	}
	lines := strings.Split(strings.TrimSpace(a.String()), "\n")
	if len(lines) != 14 {
		t.Fatalf("%d lines, want a header and 13 requests:\n%s", len(lines), a.String())
	}
	prunes := 0
	for _, line := range lines[1:13] {
		if m := prunedLine.FindStringSubmatch(line); m != nil {
			prunes++
			before, _ := strconv.Atoi(m[1])
			after, _ := strconv.Atoi(m[2])
			if before <= 3500 || before-after < 800 {
				t.Errorf("prune from %d to %d: want over the trigger 3500, and 800 freed", before, after)
			}
			continue
		}
		m := asIsLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unexpected line %q", line)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n > 3500 {
			t.Errorf("%q: over the trigger, sent as is", line)
		}
	}
	if prunes < 2 {
		t.Errorf("%d prunes, want a few:\n%s", prunes, a.String())
	}
	if !strings.HasPrefix(lines[13], "request 13: refused, not sent: openai-chat/orphan-tool-message") {
		t.Errorf("last line %q, want the refusal", lines[13])
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A shorter session keeps every bound, and the summary carries the
// user's ticket through every compaction.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), &out, 1500); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{"finds INC-70312 in its prompt", "summaries in the prompt at once: at most 1", "OK"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// findTicket reads the id and stops at its last digit.
func TestFindTicket(t *testing.T) {
	for text, want := range map[string]string{
		"ticket INC-70312; ok":                          "INC-70312",
		`{"content":"My support ticket is INC-70312."}`: "INC-70312",
		"no ticket here":                                "",
	} {
		if got := findTicket(text); got != want {
			t.Errorf("findTicket(%q) = %q, want %q", text, got, want)
		}
	}
}

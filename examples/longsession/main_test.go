package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A shorter session keeps every bound; the summary carries the user's
// ticket through every compaction, and recall finds what the summaries
// dropped.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), &out, 1500); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{
		"the ticket: found in the prompt: INC-70312.",
		`where ORD-100002 was left: not in the prompt; found by recall {"query":"ORD-100002"}: "with the neighbour behind the blue door"`,
		"summaries in the prompt at once: at most 1", "OK"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// findDropOff reads the courier's words of the early order only, in a
// result as the tool wrote it or as a recall answer quotes it.
func TestFindDropOff(t *testing.T) {
	const w = "with the neighbour behind the blue door"
	for text, want := range map[string]string{
		`{"order":"ORD-100002","left_with":"` + w + `"}`:                                                         w,
		`"args":"{\"order\":\"ORD-100002\"}" "content":"{\"order\":\"ORD-100002\",\"left_with\":\"` + w + `\"}"`: w,
		`{"order":"ORD-100003","left_with":"at the post office"}`:                                                "",
		`{"order":"ORD-100002"} {"left_with":"at the post office"}`:                                              "",
		"Other facts: ORD-100002; JD000007000026":                                                                "",
	} {
		if got := findDropOff(text); got != want {
			t.Errorf("findDropOff(%q) = %q, want %q", text, got, want)
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

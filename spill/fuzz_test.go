package spill

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// Whatever bytes a store gives back, decoding a segment never panics,
// and what it accepts holds messages that a segment of their own holds
// alike.
func FuzzDecodeSegment(f *testing.F) {
	ms := []pruneguard.Message{{ID: "a1", Role: "assistant", Calls: []pruneguard.Call{{ID: "k", Tool: "t", Args: []byte(`{"x":1}`), Server: true}}},
		{ID: "r1", Content: []byte{0xff, 0}, Answers: []pruneguard.CallID{"k"}, Class: 9, Requires: []string{"t"}, IsError: true}}
	body, _ := encodeMessages(ms)
	seg, _ := encodeSegment("seg-k", len(ms), describe(ms), body)
	f.Add(seg)
	f.Add([]byte(`{"format":"pruneguard-spill-segment/1","key":"seg-k","count":1,"sha256":"","messages":[{"id":"m"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeSegment("seg-k", b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		body, err := encodeMessages(got.ms)
		if err != nil {
			t.Fatalf("decoded messages do not encode: %v", err)
		}
		again, err := decodeSegment("seg-k", mustSegment(t, body, len(got.ms), got.desc))
		if err != nil || !sameMessages(again.ms, got.ms) {
			t.Fatalf("messages do not round trip: %v", err)
		}
	})
}

func mustSegment(t *testing.T, body []byte, n int, desc string) []byte {
	b, err := encodeSegment("seg-k", n, desc, body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Whatever a model sends as recall arguments, the answer is an error or
// JSON within the bound.
func FuzzHandleRecall(f *testing.F) {
	ctx := context.Background()
	s := &Spiller{Store: &Memory{}, Namespace: "fuzz", MaxRecallBytes: MinRecallBytes}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{
		{ID: "r1", Content: []byte("ticket INC-4711 \"quoted\" \u2028 " + string(make([]byte, 3000)))},
		{ID: "r2", Content: []byte{0xff, 0xfe}, Calls: []pruneguard.Call{{ID: "k", Tool: "t", Args: []byte(`{"q":"INC-4711"}`)}}},
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range []string{`{"key":"` + p.Key + `"}`, `{"key":"` + p.Key + `","page":2}`, `{"query":"INC-4711"}`,
		`{"query":"ticket","page":1}`, `{"key":"spill:` + p.Key + `"}`, `{"query":"\u0000 \" \\"}`} {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		out, err := s.HandleRecall(ctx, args)
		if err != nil {
			return
		}
		if len(out) > MinRecallBytes {
			t.Fatalf("answer of %d bytes over the bound", len(out))
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("answer is not JSON: %q", out)
		}
	})
}

package sdk_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// mustJSON marshals v or fails the test.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return b
}

// decode parses JSON into plain Go values, numbers kept as json.Number.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// jsonEqual fails the test unless want and got hold the same JSON value.
func jsonEqual(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if !reflect.DeepEqual(decode(t, want), decode(t, got)) {
		t.Errorf("%s differs\nwant: %s\n got: %s", what, want, got)
	}
}

// topLevel returns the top-level object of a body, field by field.
func topLevel(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("top level of %s: %v", body, err)
	}
	return m
}

// array returns the elements of a top-level array field of a body.
func array(t *testing.T, body []byte, key string) []json.RawMessage {
	t.Helper()
	var a []json.RawMessage
	if err := json.Unmarshal(topLevel(t, body)[key], &a); err != nil {
		t.Fatalf("%s of %s: %v", key, body, err)
	}
	return a
}

// sameExcept checks that every top-level field of got but those named in
// skip equals the one in want, and that neither has a field the other
// lacks.
func sameExcept(t *testing.T, want, got []byte, skip ...string) {
	t.Helper()
	w, g := topLevel(t, want), topLevel(t, got)
	for k, wv := range w {
		if slices.Contains(skip, k) {
			continue
		}
		gv, ok := g[k]
		if !ok {
			t.Errorf("top-level field %q lost", k)
			continue
		}
		jsonEqual(t, "top-level field "+k, wv, gv)
	}
	for k := range g {
		if _, ok := w[k]; !ok && !slices.Contains(skip, k) {
			t.Errorf("top-level field %q appeared", k)
		}
	}
}

// survivors checks that the messages of the pruned body are exactly the
// messages of the input at the given indexes, unchanged, in order.
func survivors(t *testing.T, in, out []json.RawMessage, keep []int) {
	t.Helper()
	if len(out) != len(keep) {
		t.Fatalf("pruned body holds %d messages, want %d (input indexes %v)", len(out), len(keep), keep)
	}
	for j, i := range keep {
		jsonEqual(t, "surviving message "+string(wire.ID(i)), in[i], out[j])
	}
}

// noViolations fails the test if the body breaks any provider rule,
// pending calls included.
func noViolations(t *testing.T, body []byte, d wire.Dialect) {
	t.Helper()
	vs, err := wire.Validate(body, d)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	for _, v := range vs {
		t.Errorf("violation: %v", v)
	}
}

// readUnpruned reads body, checks that an untouched body and an untouched
// Guarded both write it back byte for byte, and returns the Guarded.
func readUnpruned(t *testing.T, body []byte, d wire.Dialect) *wire.Guarded {
	t.Helper()
	got, err := wire.Detect(body)
	if err != nil || got != d {
		t.Errorf("Detect = %q, %v; want %q", got, err, d)
	}
	b, err := wire.Read(body, d)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	out, err := b.Marshal()
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !bytes.Equal(out, body) {
		t.Errorf("unpruned round trip is not byte for byte\nwant: %s\n got: %s", body, out)
	}
	jsonEqual(t, "unpruned round trip", body, out)
	if vs := b.Validate(); len(vs) != 0 {
		t.Fatalf("input breaks provider rules: %v", vs)
	}
	// The round trips prune whole turns, reasoning and prose included: the
	// text may go.
	g, err := b.Bind(wire.Options{Unannotated: wire.UnannotatedRegenerable,
		Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	if err != nil {
		t.Fatalf("context: %v", err)
	}
	if u := g.Unpaired(); len(u) != 0 {
		t.Errorf("unpaired calls or results in the input: %v", u)
	}
	out, err = g.Body().Marshal()
	if err != nil {
		t.Fatalf("marshal guarded: %v", err)
	}
	if !bytes.Equal(out, body) {
		t.Errorf("guarded body before any decision differs\nwant: %s\n got: %s", body, out)
	}
	return g
}

// prune asks for plan p, applies the decision and returns it with the
// pruned body.
func prune(t *testing.T, g *wire.Guarded, p pruneguard.Plan) (*pruneguard.Decision, []byte) {
	t.Helper()
	d, refused, err := g.Prune(p)
	if err != nil {
		t.Fatalf("prune %+v: %v", p, err)
	}
	for _, r := range refused {
		if r.Gate == "wire" {
			t.Errorf("wire refusal: %+v", r)
		} else {
			t.Logf("refusal: %+v", r)
		}
	}
	if err := g.Apply(d); err != nil {
		t.Fatalf("apply: %v", err)
	}
	out, err := g.Body().Marshal()
	if err != nil {
		t.Fatalf("marshal pruned: %v", err)
	}
	return d, out
}

// ids returns wire.ID of each index.
func ids(is ...int) []pruneguard.MessageID {
	out := make([]pruneguard.MessageID, len(is))
	for j, i := range is {
		out[j] = wire.ID(i)
	}
	return out
}

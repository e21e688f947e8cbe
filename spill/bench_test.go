package spill_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Resolvable is asked by the gates under the Context's lock, for every
// candidate with a pointer: it allocates nothing, with a namespace too.
func TestResolvableAllocatesNothing(t *testing.T) {
	ctx := t.Context()
	for _, ns := range []string{"", "sess-1", spill.Namespace("acme", "a long session id of another shape")} {
		s := &spill.Spiller{Store: &spill.Memory{}, Namespace: ns}
		p, err := s.SpillMessages(ctx, ticketMessages("x"))
		if err != nil {
			t.Fatal(err)
		}
		other := pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-elsewhere_0123456789abcdef01234567"}
		if n := testing.AllocsPerRun(100, func() { s.Resolvable(p); s.Resolvable(other) }); n != 0 {
			t.Errorf("namespace %q: %v allocations", ns, n)
		}
	}
}

func benchMessages(n, size int) []pruneguard.Message {
	ms := make([]pruneguard.Message, n)
	for i := range ms {
		ms[i] = pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool,
			Content: []byte(fmt.Sprintf("build %d: INC-%d failed at settle.go:%d; ", i, 4000+i, i) + strings.Repeat("log line ", size/9))}
	}
	return ms
}

// A spill of 8 messages of 4 KB, to a Spiller that has not seen them.
func BenchmarkSpillMessages(b *testing.B) {
	ctx := b.Context()
	ms := benchMessages(8, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (&spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-1"}).SpillMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
}

// A query for an id over 100 segments of 8 messages of 1 KB.
func BenchmarkQuery(b *testing.B) {
	ctx := b.Context()
	s := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-1"}
	for i := range 100 {
		ms := benchMessages(8, 1024)
		for j := range ms {
			ms[j].ID = pruneguard.MessageID(fmt.Sprint("s", i, "r", j))
		}
		if _, err := s.SpillMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	args := json.RawMessage(`{"query":"INC-4005"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.HandleRecall(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

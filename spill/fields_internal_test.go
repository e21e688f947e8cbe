package spill

import (
	"reflect"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// The read-back check compares every field a segment keeps: a message
// that differs from the spilled one in any field but Pointer is not the
// same message.
func TestSameMessagesComparesEveryField(t *testing.T) {
	full := func() pruneguard.Message {
		return pruneguard.Message{
			ID: "m", Role: "tool", Tokens: 3, Content: []byte("c"), Answers: []pruneguard.CallID{"k0"},
			Pinned: true, Class: pruneguard.Irreducible, Facts: pruneguard.NegativeResult,
			NeededBy: []pruneguard.StepID{"s"}, Requires: []string{"t"}, IsError: true,
			Pointer: pruneguard.Pointer{Store: "spill", Key: "seg-old"},
			Calls:   []pruneguard.Call{{ID: "k", Tool: "t", Args: []byte("{}"), Server: true}},
		}
	}
	want := []pruneguard.Message{full()}
	if !sameMessages([]pruneguard.Message{full()}, want) {
		t.Fatal("equal messages compare unequal")
	}
	typ := reflect.TypeOf(pruneguard.Message{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		m := full()
		v := reflect.ValueOf(&m).Elem().Field(i)
		if v.IsZero() {
			t.Fatalf("full() leaves %s unset", name)
		}
		v.SetZero()
		if got := sameMessages([]pruneguard.Message{m}, want); got != (name == "Pointer") {
			t.Errorf("a message without its %s: sameMessages = %v", name, got)
		}
	}
	ctyp := reflect.TypeOf(pruneguard.Call{})
	for i := range ctyp.NumField() {
		m := full()
		v := reflect.ValueOf(&m.Calls[0]).Elem().Field(i)
		if v.IsZero() {
			t.Fatalf("full() leaves Call.%s unset", ctyp.Field(i).Name)
		}
		v.SetZero()
		if sameMessages([]pruneguard.Message{m}, want) {
			t.Errorf("a call without its %s compares equal", ctyp.Field(i).Name)
		}
	}
}

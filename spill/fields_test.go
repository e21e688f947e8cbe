package spill_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// fill sets every field of the struct v points to, but those named in
// skip, to a value other than its zero value, and fails the test for a
// field of a kind it does not know: a field added to Message or Call
// must be kept by segments, and this test then says so.
func fill(t *testing.T, v reflect.Value, skip ...string) {
	t.Helper()
	typ := v.Type()
	for i := range typ.NumField() {
		f, fv := typ.Field(i), v.Field(i)
		if skipped(f.Name, skip) {
			continue
		}
		switch {
		case f.Type == reflect.TypeOf(pruneguard.Class(0)):
			fv.SetUint(uint64(pruneguard.Irreducible) + 4) // beyond Irreducible
		case f.Type == reflect.TypeOf(pruneguard.Facts(0)):
			fv.SetUint(0xff)
		case f.Type == reflect.TypeOf([]pruneguard.Call(nil)):
			calls := make([]pruneguard.Call, 2)
			for j := range calls {
				fill(t, reflect.ValueOf(&calls[j]).Elem())
			}
			calls[1].ID = "second"
			fv.Set(reflect.ValueOf(calls))
		case f.Type.Kind() == reflect.String:
			fv.SetString("v-" + f.Name)
		case f.Type.Kind() == reflect.Bool:
			fv.SetBool(true)
		case f.Type.Kind() == reflect.Int:
			fv.SetInt(17)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Uint8:
			fv.SetBytes([]byte(`{"field":"` + f.Name + `"}`))
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
			s := reflect.MakeSlice(f.Type, 2, 2)
			s.Index(0).SetString("a-" + f.Name)
			s.Index(1).SetString("b-" + f.Name)
			fv.Set(s)
		default:
			t.Fatalf("%s.%s: no value for a field of type %s; teach fill, and segments, about it", typ.Name(), f.Name, f.Type)
		}
	}
}

func skipped(name string, skip []string) bool {
	for _, s := range skip {
		if s == name {
			return true
		}
	}
	return false
}

// A recalled message has every field it was spilled with (but Pointer,
// which a segment does not keep): IsError, Requires, each call's Server,
// a class beyond Irreducible, and whatever Message gains later.
func TestRecallKeepsEveryField(t *testing.T) {
	ctx := t.Context()
	var m pruneguard.Message
	fill(t, reflect.ValueOf(&m).Elem(), "Pointer")
	require.True(t, m.IsError)
	require.True(t, m.Calls[0].Server)
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := &spill.Spiller{Store: store}
			p, err := s.SpillMessages(ctx, []pruneguard.Message{m, {ID: "plain"}})
			require.NoError(t, err)
			for _, r := range []*spill.Spiller{s, {Store: store}} {
				back, err := r.Recall(ctx, p)
				require.NoError(t, err)
				assert.Equal(t, []pruneguard.Message{m, {ID: "plain"}}, back)
			}
			out, err := s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
			require.NoError(t, err)
			for _, want := range []string{`"is_error":true`, `"requires":["a-Requires","b-Requires"]`, `"server":true`} {
				assert.Contains(t, out, want, "the model reads it too")
			}
		})
	}
}

// A class beyond Irreducible counts as Irreducible: such a message can be
// spilled, and a guard lets it go once it is.
func TestSpillClassBeyondIrreducible(t *testing.T) {
	ctx := t.Context()
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp})
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 10, Pinned: true}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "note", Role: pruneguard.RoleUser, Tokens: 500,
		Content: []byte("measured once: 41.7 ms"), Class: pruneguard.Irreducible + 3}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "read", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("noted")}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "last", Role: pruneguard.RoleUser, Tokens: 10}))

	res, err := pruneguard.Guard{Budget: 100, Spill: sp}.CheckContext(ctx, c)
	require.NoError(t, err)
	assert.Empty(t, res.SpillErrors)
	assert.Equal(t, pruneguard.Pruned, res.Outcome, "%v", res.Reason)
	require.Len(t, res.Spills, 1)
	back, err := sp.Recall(ctx, res.Spills[0].Pointer)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Irreducible+3, back[0].Class)
}

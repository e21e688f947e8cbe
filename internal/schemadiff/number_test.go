package schemadiff

import (
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustDec(t *testing.T, s string) dec {
	t.Helper()
	d, ok := parseDec(s)
	require.True(t, ok, s)
	return d
}

func TestParseDec(t *testing.T) {
	for s, want := range map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "0e5": "0",
		"1": "1e0", "1.0": "1e0", "10": "1e1", "100e-2": "1e0", "1E+2": "1e2",
		"-2.50": "-25e-1", "0.001": "1e-3", "123456789012345678901234567890": "12345678901234567890123456789e1",
		"1e999999999999999999999": "1e999999999999999999999",
	} {
		assert.Equal(t, want, mustDec(t, s).canon(), s)
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "1 ", "NaN", "1.5.2"} {
		_, ok := parseDec(s)
		assert.False(t, ok, s)
	}
}

func TestCmpDec(t *testing.T) {
	ordered := []string{"-1e400", "-10", "-2.5", "-1", "-0.5", "0", "1e-400", "0.5", "1", "1.5", "2", "10", "99.9", "100", "1e400"}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			assert.Equal(t, want, cmpDec(mustDec(t, a), mustDec(t, b)), "%s vs %s", a, b)
		}
	}
	assert.Equal(t, 0, cmpDec(mustDec(t, "1.50"), mustDec(t, "15e-1")))
}

func TestMultiple(t *testing.T) {
	for _, tt := range []struct {
		v, m string
		want bool
	}{
		{"10", "5", true}, {"10", "3", false}, {"0", "7", true}, {"7.5", "2.5", true},
		{"7.5", "0.2", false}, {"1", "0.1", true}, {"0.3", "0.1", true}, {"1e400", "3", false},
		{"3e400", "3", true}, {"1e400", "2", true}, {"1e-400", "1", false}, {"4", "1e-400", true},
		{"-6", "3", true}, {"12", "4.8", false}, {"2e-9", "1e-9", true},
	} {
		assert.Equal(t, tt.want, multiple(mustDec(t, tt.v), mustDec(t, tt.m)), "%s / %s", tt.v, tt.m)
	}
	// Against exact rational arithmetic where that is affordable.
	for _, v := range []string{"0", "1", "2.5", "-3.75", "12", "100", "0.125", "7e3"} {
		for _, m := range []string{"0.5", "0.25", "3", "1.5", "0.125", "2e2", "7"} {
			q := new(big.Rat).Quo(ratOf(t, v), ratOf(t, m))
			assert.Equal(t, q.IsInt(), multiple(mustDec(t, v), mustDec(t, m)), "%s / %s", v, m)
		}
	}
}

func ratOf(t *testing.T, s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	require.True(t, ok)
	return r
}

func TestCanonEquality(t *testing.T) {
	eq := func(a, b string) bool {
		x, _ := decode([]byte(a))
		y, _ := decode([]byte(b))
		return canon(x) == canon(y)
	}
	assert.True(t, eq(`1`, `1.0`))
	assert.True(t, eq(`{"a":[1,{"b":2e0}],"c":null}`, `{"c":null,"a":[1.00,{"b":2}]}`))
	assert.False(t, eq(`[1,2]`, `[2,1]`))
	assert.False(t, eq(`"1"`, `1`))
	assert.False(t, eq(`{"a":1}`, `{"a":1,"b":1}`))
}

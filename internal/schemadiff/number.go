package schemadiff

import (
	"encoding/json"
	"math/big"
	"strings"
)

// dec is an exact JSON number: ±digits × 10^exp, digits without leading or
// trailing zeros ("" for zero). Exponents are big so that 1e999999999 costs
// no more than 1e9: numbers are compared without being expanded.
type dec struct {
	neg    bool
	digits string
	exp    *big.Int
}

// parseDec reads JSON number text. It reports false for anything else.
func parseDec(s string) (dec, bool) {
	d := dec{exp: new(big.Int)}
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[start:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return dec{}, false
	}
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
		if frac == "" {
			return dec{}, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		es := i
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		ds := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if ds == i {
			return dec{}, false
		}
		if _, ok := d.exp.SetString(s[es:i], 10); !ok {
			return dec{}, false
		}
	}
	if i != len(s) {
		return dec{}, false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	d.exp.Sub(d.exp, big.NewInt(int64(len(frac))))
	trimmed := strings.TrimRight(digits, "0")
	d.exp.Add(d.exp, big.NewInt(int64(len(digits)-len(trimmed))))
	d.digits = trimmed
	if d.digits == "" {
		d.neg = false
		d.exp.SetInt64(0)
	}
	return d, true
}

// decInt is the dec of n.
func decInt(n int) dec {
	d, _ := parseDec(big.NewInt(int64(n)).String())
	return d
}

// number reads a decoded JSON value as a number.
func number(v any) (dec, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return dec{}, false
	}
	return parseDec(string(n))
}

// zero says whether d is 0.
func (d dec) zero() bool { return d.digits == "" }

// integer reports whether d has no fractional part.
func (d dec) integer() bool { return d.zero() || d.exp.Sign() >= 0 }

// canon is a text that equal numbers, and only they, share.
func (d dec) canon() string {
	if d.zero() {
		return "0"
	}
	s := d.digits + "e" + d.exp.String()
	if d.neg {
		return "-" + s
	}
	return s
}

// cmpDec orders two numbers: -1, 0 or +1.
func cmpDec(a, b dec) int {
	sa, sb := sign(a), sign(b)
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	m := cmpMag(a, b)
	if sa < 0 {
		return -m
	}
	return m
}

// sign is -1, 0 or +1.
func sign(d dec) int {
	switch {
	case d.zero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpMag compares |a| and |b|, both non-zero.
func cmpMag(a, b dec) int {
	// The order of magnitude is len(digits)+exp.
	oa := new(big.Int).Add(a.exp, big.NewInt(int64(len(a.digits))))
	ob := new(big.Int).Add(b.exp, big.NewInt(int64(len(b.digits))))
	if c := oa.Cmp(ob); c != 0 {
		return c
	}
	// Same magnitude: compare the digit strings, the shorter padded.
	x, y := a.digits, b.digits
	for i := 0; i < len(x) || i < len(y); i++ {
		cx, cy := byte('0'), byte('0')
		if i < len(x) {
			cx = x[i]
		}
		if i < len(y) {
			cy = y[i]
		}
		if cx != cy {
			if cx < cy {
				return -1
			}
			return 1
		}
	}
	return 0
}

// multiple says whether v is an integer multiple of m (m > 0). It works on
// the digits only, so huge exponents cost nothing.
func multiple(v, m dec) bool {
	if v.zero() {
		return true
	}
	dv, _ := new(big.Int).SetString(v.digits, 10)
	dm, _ := new(big.Int).SetString(m.digits, 10)
	k := new(big.Int).Sub(v.exp, m.exp)
	ten := big.NewInt(10)
	if k.Sign() >= 0 {
		// dm | dv·10^k. Beyond the powers of 2 and 5 in dm, more tens
		// change nothing, so k is capped there.
		limit := int64(twosAndFives(dm))
		if k.Cmp(big.NewInt(limit)) > 0 {
			k.SetInt64(limit)
		}
		dv.Mul(dv, new(big.Int).Exp(ten, k, nil))
		return new(big.Int).Mod(dv, dm).Sign() == 0
	}
	// dm·10^-k | dv: impossible once 10^-k alone exceeds dv.
	k.Neg(k)
	if k.Cmp(big.NewInt(int64(len(v.digits)))) > 0 {
		return false
	}
	dm.Mul(dm, new(big.Int).Exp(ten, k, nil))
	return new(big.Int).Mod(dv, dm).Sign() == 0
}

// twosAndFives is the larger of the powers of 2 and of 5 dividing n > 0.
func twosAndFives(n *big.Int) int {
	count := func(p int64) int {
		x, q, quo, r := new(big.Int).Set(n), big.NewInt(p), new(big.Int), new(big.Int)
		c := 0
		for {
			quo.QuoRem(x, q, r)
			if r.Sign() != 0 {
				return c
			}
			x.Set(quo)
			c++
		}
	}
	return max(count(2), count(5))
}

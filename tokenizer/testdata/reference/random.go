package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
)

// alphabet mixes runes of every class the pre-tokenizers tell apart, so
// that random strings of it meet their edge cases often.
var alphabet = []rune(" \t\n\r\u000b\u00a0\u3000\u2028\u0085" + // white space
	"aezAEZ'sStTlLdDmMvVrR\u017f\u212a" + // letters of contractions, long s, Kelvin
	"\u01c5\u02b0\u00aa\u00df\u0131\u0130" + // Lt, Lm, Lo, Ll
	"\u0301\u0903\u20dd" + // Mn, Mc, Me
	"09\u0663\u2164\u00bd\U0001d7d9" + // Nd, Nl, No, astral Nd
	"!?.,-/\\\"#$%&*+<=>@[]^_`{|}~\u2019\u2014\u20ac" + // punctuation, symbols
	"\u6211\u30ab\uac00\u0645\u05d0\u0e01\u0915" + // CJK, kana, hangul, arabic, hebrew, thai, devanagari
	"\U0001f600\U0001f1eb\u200d\ufe0f\U0001d4d0\U00020000\ufffd\x00\x7f")

func randomText(r *rand.Rand) string {
	n := r.Intn(24)
	out := make([]rune, n)
	for i := range out {
		out[i] = alphabet[r.Intn(len(alphabet))]
	}
	return string(out)
}

// writeRandom writes n random texts as [{name, text}] for js/encode.js.
func writeRandom(path string, n int) error {
	r := rand.New(rand.NewSource(1))
	type c struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	cs := make([]c, n)
	for i := range cs {
		cs[i] = c{fmt.Sprint(i), randomText(r)}
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

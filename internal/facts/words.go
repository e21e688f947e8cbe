package facts

import "strings"

// word is a run of non-space bytes of a text: t[from:to].
type word struct{ from, to int }

// words adds the facts found in the words of t (every kind but errors,
// negative results and quotes): URLs, key=value settings, and the atoms
// each other word splits into.
func (s *scanner) words(t string, base int, exact bool) {
	var prev [2]word // the two words before, for keywords and currency codes
	for i := 0; i < len(t); {
		for i < len(t) && isSpace(t[i]) {
			i++
		}
		j := i
		for j < len(t) && !isSpace(t[j]) {
			j++
		}
		if j > i {
			w := word{i, j}
			s.word(t, w, prev, base, exact)
			prev[0], prev[1] = prev[1], w
		}
		i = j
	}
}

// word adds the facts of one word.
func (s *scanner) word(t string, w word, prev [2]word, base int, exact bool) {
	ws := t[w.from:w.to]
	scheme, eq := -1, false
	for i := 0; i < len(ws); i++ {
		switch ws[i] {
		case ':':
			if scheme < 0 && i > 0 && i+2 < len(ws) && ws[i+1] == '/' && ws[i+2] == '/' {
				scheme = i
			}
		case '=':
			eq = true
		}
	}
	if scheme > 0 {
		if from, to, ok := urlAt(ws, scheme); ok {
			s.c.add(KindURL, ws[from:to], s.off(base, w.from+from, exact), s.key)
			return
		}
	}
	if eq && s.setting(t, w, base, exact) {
		return
	}
	for i := w.from; i < w.to; {
		j := i
		for j < w.to && !(isDelim(t[j]) && !thousands(t, j)) {
			j++
		}
		if j > i {
			s.atom(t, i, j, w, prev, base, exact)
		}
		i = j + 1
	}
}

// isDelim reports whether c splits a word into atoms.
func isDelim(c byte) bool {
	switch c {
	case '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', '|', '=':
		return true
	}
	return false
}

// thousands reports whether t[i] is a comma between digits, as in
// 1,234, which does not split a word.
func thousands(t string, i int) bool {
	return t[i] == ',' && i > 0 && i+1 < len(t) && isDigit(t[i-1]) && isDigit(t[i+1])
}

// urlAt returns the bounds of the URL whose "://" is at k in w.
func urlAt(w string, k int) (int, int, bool) {
	from := k
	for from > 0 && (isWordByte(w[from-1]) || w[from-1] == '+' || w[from-1] == '.' || w[from-1] == '-') {
		from--
	}
	if k-from < 2 || !isLetter(w[from]) {
		return 0, 0, false
	}
	to := k + 3
	for to < len(w) && !strings.ContainsRune("\"'`<>", rune(w[to])) {
		to++
	}
	for to > k+3 && strings.IndexByte(".,;:!?)]}", w[to-1]) >= 0 {
		to--
	}
	return from, to, to > k+3
}

// setting adds the fact of a key=value word and reports whether the word
// was one: the value's own fact, with the key, when the value is one;
// otherwise the whole word as a KindKV fact when the value is a plain
// word.
func (s *scanner) setting(t string, w word, base int, exact bool) bool {
	from, to := w.from, w.to
	for from < to && strings.IndexByte("([{\"'`", t[from]) >= 0 {
		from++
	}
	eq := strings.IndexByte(t[from:to], '=')
	if eq <= 0 {
		return false
	}
	eq += from
	if eq+1 >= to || t[eq+1] == '=' || strings.IndexByte("=!<>", t[eq-1]) >= 0 {
		return false
	}
	key := t[from:eq]
	if !isKey(key) {
		return false
	}
	vto := to
	for vto > eq+1 && strings.IndexByte(".,;:!?)]}", t[vto-1]) >= 0 {
		vto--
	}
	if vto == eq+1 {
		return false
	}
	v := t[eq+1 : vto]
	if k, vf, vt := classify(v); k != 0 {
		s.c.add(k, v[vf:vt], s.off(base, eq+1+vf, exact), key)
		return true
	}
	if isPlainWord(v) {
		s.c.add(KindKV, t[from:vto], s.off(base, from, exact), key)
		return true
	}
	return false
}

// isKey reports whether k is a setting's key: up to two dashes, then a
// letter or '_', then letters, digits, '_', '.' and '-', at most 64 bytes.
func isKey(k string) bool {
	if len(k) > 64 {
		return false
	}
	k = strings.TrimPrefix(strings.TrimPrefix(k, "-"), "-")
	if k == "" || !(isLetter(k[0]) || k[0] == '_') {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !(isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// isPlainWord reports whether v is 1 to 64 letters, digits, '_', '.',
// '-', '/' or ':' holding a letter or digit.
func isPlainWord(v string) bool {
	if len(v) > 64 {
		return false
	}
	alnum := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isLetter(c) || isDigit(c):
			alnum = true
		case c == '_' || c == '.' || c == '-' || c == '/' || c == ':':
		default:
			return false
		}
	}
	return alnum
}

// atom adds the fact of t[i:j], an atom of word w, if it is one.
func (s *scanner) atom(t string, i, j int, w word, prev [2]word, base int, exact bool) {
	a := t[i:j]
	k, from, to := classify(a)
	if k == 0 {
		if from, to, ok := shortNumber(a); ok {
			s.keyedNumber(t, i+from, i+to, w, prev, base, exact)
		}
		return
	}
	from, to = i+from, i+to
	key := s.key
	if k == KindNumber {
		if kw, _, ok := keywordBefore(t, w, prev); ok && from == w.from {
			key = kw
		}
		from, to = currency(t, from, to, w, prev)
	}
	s.c.add(k, t[from:to], s.off(base, from, exact), key)
}

// keyedNumber adds a number of one or two digits, t[from:to], when a
// keyword comes before its word: the span from the keyword (or the
// keyword before it, as in "exit code 1") to the number.
func (s *scanner) keyedNumber(t string, from, to int, w word, prev [2]word, base int, exact bool) {
	if from != w.from {
		return
	}
	kw, start, ok := keywordBefore(t, w, prev)
	if !ok {
		return
	}
	s.c.add(KindNumber, t[start:to], s.off(base, start, exact), kw)
}

// numberKeywords are the words that make the number after them a fact.
var numberKeywords = map[string]bool{
	"exit": true, "code": true, "status": true, "port": true, "pid": true,
	"errno": true, "signal": true, "http": true, "returned": true, "line": true,
	"limit": true, "ulimit": true, "attempt": true, "retries": true, "rc": true,
}

// keywordBefore returns the keyword of the word before w (in lower case,
// without a closing ':', '=' or '#') and where the span of a keyed number
// starts: at that word, or at the one before it when it is a keyword
// too. Words must be one space apart.
func keywordBefore(t string, w word, prev [2]word) (string, int, bool) {
	kw, ok := keyword(t, prev[1], w)
	if !ok {
		return "", 0, false
	}
	start := prev[1].from
	if _, ok := keyword(t, prev[0], prev[1]); ok {
		start = prev[0].from
	}
	return kw, start, true
}

// keyword returns the keyword p is, when p is one and ends one space
// before next.
func keyword(t string, p, next word) (string, bool) {
	if p.to == p.from || p.to+1 != next.from || t[p.to] != ' ' || p.to-p.from > 12 {
		return "", false
	}
	k := strings.ToLower(strings.TrimRight(t[p.from:p.to], ":=#"))
	return k, numberKeywords[k]
}

// currencyCodes are the ISO 4217 codes an amount may be written with.
var currencyCodes = map[string]bool{
	"USD": true, "EUR": true, "GBP": true, "JPY": true, "CNY": true, "INR": true,
	"CAD": true, "AUD": true, "CHF": true, "SEK": true, "NOK": true, "DKK": true,
	"BRL": true, "MXN": true, "KRW": true, "SGD": true, "HKD": true, "NZD": true,
	"ZAR": true, "PLN": true, "TRY": true,
}

// currency widens the number t[from:to] of word w to take in a currency
// code one space before or after it ("USD 12.50", "12.50 USD").
func currency(t string, from, to int, w word, prev [2]word) (int, int) {
	if p := prev[1]; from == w.from && p.to+1 == from && t[p.to] == ' ' && currencyCodes[t[p.from:p.to]] {
		return p.from, to
	}
	if to == w.to && to+4 <= len(t) && t[to] == ' ' && currencyCodes[t[to+1:to+4]] && (to+4 == len(t) || !isWordByte(t[to+4])) {
		return from, to + 4
	}
	return from, to
}

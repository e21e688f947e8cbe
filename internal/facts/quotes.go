package facts

import "strings"

// quotes adds the quoted values of t: the text between two double quotes,
// or two single backquotes, on one line, at most MaxLen bytes, holding a
// letter or digit, without the white space at its ends. A run of two or
// more backquotes is not a quote. Each byte is looked at a bounded number
// of times: a quote that finds no partner within MaxLen bytes on its line
// gives up there.
func (s *scanner) quotes(t string, base int, exact bool) {
	for i := 0; i < len(t) && !s.c.full(KindQuoted); {
		q := t[i]
		if q != '"' && q != '`' {
			i++
			continue
		}
		if q == '`' && i+1 < len(t) && t[i+1] == '`' {
			i = skipRun(t, i)
			continue
		}
		j, ok := partner(t, i)
		if !ok {
			i = j
			continue
		}
		from, to := trimSpace(t, i+1, j)
		if to > from && hasAlnum(t[from:to]) {
			s.c.add(KindQuoted, t[from:to], s.off(base, from, exact), s.key)
		}
		i = j + 1
	}
}

// partner returns the quote closing the one at t[i] and true, or where
// to go on looking and false: a line end, a run of backquotes, or MaxLen
// bytes on.
func partner(t string, i int) (int, bool) {
	q := t[i]
	end := min(len(t), i+2+MaxLen)
	for j := i + 1; j < end; j++ {
		switch c := t[j]; {
		case c == '\n' || c == '\r':
			return j, false
		case c == q && q == '`' && j+1 < len(t) && t[j+1] == '`':
			return j, false
		case c == q:
			return j, true
		}
	}
	return end, false
}

// skipRun returns the end of the run of the byte at t[i].
func skipRun(t string, i int) int {
	c := t[i]
	for i < len(t) && t[i] == c {
		i++
	}
	return i
}

// hasAlnum reports whether t holds an ASCII letter or digit.
func hasAlnum(t string) bool {
	return strings.IndexFunc(t, func(r rune) bool { return r < 0x80 && (isLetter(byte(r)) || isDigit(byte(r))) }) >= 0
}

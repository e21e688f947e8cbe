package facts

import "strings"

// classify returns the kind of fact atom a is, with the bounds of the
// fact in a (the atom without the punctuation around it), or 0.
func classify(a string) (Kind, int, int) {
	from, to := trimAtom(a)
	if to-from < 2 || to-from > MaxLen {
		return 0, 0, 0
	}
	b := a[from:to]
	if !mayBeFact(b) {
		return 0, 0, 0
	}
	switch {
	case strings.IndexByte(b, '@') > 0 && isEmail(b):
		return KindEmail, from, to
	case isAmount(b):
		return KindNumber, from, to
	case isTime(b):
		return KindTime, from, to
	case isUUID(b):
		return KindID, from, to
	case isPath(b):
		return KindPath, from, to
	case isHostPort(b):
		return KindURL, from, to
	case isNumber(b):
		return KindNumber, from, to
	case isHexID(b) || isID(b):
		return KindID, from, to
	}
	return 0, 0, 0
}

// mayBeFact reports whether a holds a byte some fact needs: a digit, a
// byte of / . : \ @ $ or a non-ASCII byte (a currency sign), or is as
// long as a UUID. Most words of a text hold none and are done with here.
func mayBeFact(a string) bool {
	if len(a) == 36 {
		return true
	}
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case isLetter(c) || c == '-' || c == '_':
		case isDigit(c) || c >= 0x80 || c == '/' || c == '.' || c == ':' || c == '\\' || c == '@' || c == '$':
			return true
		}
	}
	return false
}

// trimAtom returns the bounds of a without the punctuation around it: a
// leading '#', '*', '!', '?', ':' or lone '.', a trailing '.', ':', '!',
// '?' or '*'.
func trimAtom(a string) (int, int) {
	from, to := 0, len(a)
	for from < to {
		c := a[from]
		if c == '#' || c == '*' || c == '!' || c == '?' || c == ':' ||
			c == '.' && (from+1 == to || !(a[from+1] == '/' || a[from+1] == '.' || isLetter(a[from+1]))) {
			from++
			continue
		}
		break
	}
	for to > from {
		switch a[to-1] {
		case '.', ':', '!', '?', '*':
			to--
			continue
		}
		break
	}
	return from, to
}

// shortNumber returns the bounds of atom a when it is a number of one or
// two digits.
func shortNumber(a string) (int, int, bool) {
	from, to := trimAtom(a)
	if to-from < 1 || to-from > 2 || !isDigit(a[from]) || !isDigit(a[to-1]) {
		return 0, 0, false
	}
	return from, to, true
}

// isEmail reports whether a is local@domain.tld.
func isEmail(a string) bool {
	at := strings.IndexByte(a, '@')
	local, domain := a[:at], a[at+1:]
	if local == "" || strings.IndexByte(domain, '@') >= 0 {
		return false
	}
	for i := 0; i < len(local); i++ {
		if c := local[i]; !(isLetter(c) || isDigit(c) || strings.IndexByte("._%+-", c) >= 0) {
			return false
		}
	}
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 || len(domain)-dot-1 < 2 {
		return false
	}
	for i := 0; i < len(domain); i++ {
		if c := domain[i]; !(isLetter(c) || isDigit(c) || c == '.' || c == '-') {
			return false
		}
	}
	for i := dot + 1; i < len(domain); i++ {
		if !isLetter(domain[i]) {
			return false
		}
	}
	return true
}

// isAmount reports whether a is a currency symbol and a number: $12,
// €1.234,50, -$5.
func isAmount(a string) bool {
	a = strings.TrimPrefix(a, "-")
	for _, sym := range []string{"$", "€", "£", "¥"} {
		if rest, ok := strings.CutPrefix(a, sym); ok {
			return rest != "" && isDigit(rest[0]) && numberEnd(rest) == len(rest)
		}
	}
	return false
}

// numberEnd returns the length of the run of digits, '.' and ',' that
// starts a, without a trailing '.' or ','.
func numberEnd(a string) int {
	i := 0
	for i < len(a) && (isDigit(a[i]) || a[i] == '.' || a[i] == ',') {
		i++
	}
	for i > 0 && !isDigit(a[i-1]) {
		i--
	}
	return i
}

// digitsAt returns how many digits a holds from i on.
func digitsAt(a string, i int) int {
	n := 0
	for i+n < len(a) && isDigit(a[i+n]) {
		n++
	}
	return n
}

// isTime reports whether a is a date or a time of day: 2024-05-15,
// 2024-05-15T15:00:00Z, 2024/05/15, 05/15/2024, 15:00, 15:00:00.5, 3:00pm.
func isTime(a string) bool {
	if len(a) >= 10 && digitsAt(a, 0) == 4 && a[4] == '-' && digitsAt(a, 5) == 2 && a[7] == '-' && digitsAt(a, 8) == 2 {
		if len(a) == 10 {
			return true
		}
		if a[10] != 'T' {
			return false
		}
		for i := 11; i < len(a); i++ {
			if c := a[i]; !(isDigit(c) || strings.IndexByte(":.+-Z", c) >= 0) {
				return false
			}
		}
		return true
	}
	if n := digitsAt(a, 0); n >= 1 && n <= 4 && n < len(a) && a[n] == '/' {
		m := digitsAt(a, n+1)
		k := n + 1 + m
		if m < 1 || m > 2 || k >= len(a) || a[k] != '/' {
			return false
		}
		l := digitsAt(a, k+1)
		return k+1+l == len(a) && (n == 4 && l <= 2 && l >= 1 || n <= 2 && l >= 2 && l <= 4)
	}
	return isClock(a)
}

// isClock reports whether a is h:mm or hh:mm, with seconds and a
// fraction optional, and am, pm or Z after it optional.
func isClock(a string) bool {
	if len(a) > 2 && (a[len(a)-1] == 'm' || a[len(a)-1] == 'M') && strings.IndexByte("apAP", a[len(a)-2]) >= 0 {
		a = a[:len(a)-2]
	} else if len(a) > 1 && a[len(a)-1] == 'Z' {
		a = a[:len(a)-1]
	}
	n := digitsAt(a, 0)
	if n < 1 || n > 2 || n+3 > len(a) || a[n] != ':' || digitsAt(a, n+1) != 2 {
		return false
	}
	i := n + 3
	if i < len(a) && a[i] == ':' {
		if digitsAt(a, i+1) != 2 {
			return false
		}
		i += 3
		if i < len(a) && a[i] == '.' {
			m := digitsAt(a, i+1)
			if m == 0 {
				return false
			}
			i += 1 + m
		}
	}
	return i == len(a)
}

// isUUID reports whether a is a UUID in its 8-4-4-4-12 form.
func isUUID(a string) bool {
	if len(a) != 36 {
		return false
	}
	for i := 0; i < len(a); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if a[i] != '-' {
				return false
			}
		} else if !isHex(a[i]) {
			return false
		}
	}
	return true
}

// fileExts are the extensions that make a word a file name.
var fileExts = map[string]bool{
	"go": true, "mod": true, "sum": true, "py": true, "pyi": true, "ipynb": true, "js": true, "mjs": true,
	"cjs": true, "ts": true, "tsx": true, "jsx": true, "json": true, "jsonl": true, "yaml": true, "yml": true,
	"toml": true, "ini": true, "cfg": true, "conf": true, "env": true, "md": true, "rst": true, "txt": true,
	"log": true, "csv": true, "tsv": true, "xml": true, "html": true, "htm": true, "css": true, "scss": true,
	"sh": true, "bash": true, "zsh": true, "ps1": true, "bat": true, "c": true, "h": true, "cc": true,
	"cpp": true, "hpp": true, "rs": true, "java": true, "kt": true, "kts": true, "scala": true, "rb": true,
	"php": true, "swift": true, "m": true, "cs": true, "fs": true, "sql": true, "proto": true, "lock": true,
	"gradle": true, "tf": true, "hcl": true, "vue": true, "svelte": true, "lua": true, "pl": true, "r": true,
	"dart": true, "ex": true, "exs": true, "erl": true, "hs": true, "ml": true, "zig": true, "nim": true,
	"pdf": true, "png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "zip": true, "gz": true,
	"tar": true, "tgz": true, "whl": true, "jar": true, "so": true, "dll": true, "exe": true, "pem": true,
	"crt": true, "key": true, "pub": true, "db": true, "sqlite": true, "parquet": true, "diff": true, "patch": true,
}

// isPath reports whether a is a file path or a file name (see the package
// documentation); a ":line" or ":line:col" suffix is allowed.
func isPath(a string) bool {
	p := stripLineSuffix(a)
	letter := strings.IndexFunc(p, func(r rune) bool { return r < 0x80 && isLetter(byte(r)) }) >= 0
	if !letter || strings.ContainsAny(p, " \t") {
		return false
	}
	switch {
	case strings.HasPrefix(p, "/") && len(p) > 1 && p[1] != '/',
		strings.HasPrefix(p, "./"), strings.HasPrefix(p, "../"), strings.HasPrefix(p, "~/"),
		len(p) > 2 && isLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/'):
		return true
	}
	if slashes := strings.Count(p, "/"); slashes >= 2 {
		return true
	} else if slashes == 1 && hasExt(p[strings.IndexByte(p, '/')+1:], false) {
		return true
	}
	return hasExt(p, true)
}

// stripLineSuffix returns a without a ":line" or ":line:col" suffix.
func stripLineSuffix(a string) string {
	for range 2 {
		i := strings.LastIndexByte(a, ':')
		if i <= 0 || i == len(a)-1 || digitsAt(a, i+1) != len(a)-i-1 {
			break
		}
		a = a[:i]
	}
	return a
}

// hasExt reports whether the last part of a path, name, is a name and an
// extension of letters and digits starting with a letter; known asks
// that the extension be one of fileExts and the name hold only letters,
// digits, '_', '-' and '.'.
func hasExt(name string, known bool) bool {
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 || dot == len(name)-1 || len(name)-dot-1 > 8 || !isLetter(name[dot+1]) {
		return false
	}
	for i := dot + 1; i < len(name); i++ {
		if !(isLetter(name[i]) || isDigit(name[i])) {
			return false
		}
	}
	if !known {
		return true
	}
	for i := 0; i < dot; i++ {
		if c := name[i]; !(isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return fileExts[strings.ToLower(name[dot+1:])]
}

// isHostPort reports whether a is host:port: a host of letters, digits,
// '.' and '-' holding a letter (or an IPv4 address), and a port of two
// to five digits.
func isHostPort(a string) bool {
	i := strings.LastIndexByte(a, ':')
	if i <= 0 || n(a, i+1) < 2 || n(a, i+1) > 5 || i+1+n(a, i+1) != len(a) {
		return false
	}
	host, letter := a[:i], false
	for j := 0; j < len(host); j++ {
		c := host[j]
		switch {
		case isLetter(c):
			letter = true
		case isDigit(c) || c == '.' || c == '-':
		default:
			return false
		}
	}
	return letter || strings.Count(host, ".") == 3
}

// n is digitsAt, short for the checks that use it thrice.
func n(a string, i int) int { return digitsAt(a, i) }

// isNumber reports whether a is a number that matters by its shape: a
// version (1.24.3, v2.1, 1.2.0-rc1), an IPv4 address, a decimal
// fraction, a number with thousands separators, a number with a unit or
// percent sign of at most three letters (512MB, 30s, 85%), or an
// integer of three or more digits. A sign may lead.
func isNumber(a string) bool {
	a = strings.TrimLeft(a, "+-")
	v := false
	if len(a) > 1 && (a[0] == 'v' || a[0] == 'V') && isDigit(a[1]) {
		a, v = a[1:], true
	}
	if a == "" || !isDigit(a[0]) {
		return false
	}
	end := numberEnd(a)
	num, rest := a[:end], a[end:]
	dots, commas := strings.Count(num, "."), strings.Count(num, ",")
	if strings.Contains(num, "..") || commas > 0 && !grouped(num) {
		return false
	}
	switch {
	case dots >= 1 && (rest == "" || rest[0] == '-' || rest[0] == '+') && (v || dots >= 2 || rest == ""):
		return rest == "" || isPlainWord(rest[1:])
	case v:
		return false
	case rest == "":
		return dots+commas > 0 || len(num) >= 3
	case rest == "%":
		return true
	}
	if len(rest) > 3 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !isLetter(rest[i]) {
			return false
		}
	}
	return true
}

// grouped reports whether the commas of num separate thousands: each is
// followed by three digits, then a comma, a '.' or the end, and none
// comes after a '.'.
func grouped(num string) bool {
	dot := strings.IndexByte(num, '.')
	if dot >= 0 && strings.IndexByte(num[dot:], ',') >= 0 {
		return false
	}
	for i := 0; i < len(num); i++ {
		if num[i] != ',' {
			continue
		}
		if i == 0 || digitsAt(num, i+1) != 3 || i+4 < len(num) && num[i+4] != ',' && num[i+4] != '.' {
			return false
		}
	}
	return true
}

// isHexID reports whether a is 7 to 64 hex digits, in one case, holding
// both digits and letters: a commit sha or a hash.
func isHexID(a string) bool {
	if len(a) < 7 || len(a) > 64 {
		return false
	}
	digits, lower, upper := 0, false, false
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch {
		case isDigit(c):
			digits++
		case 'a' <= c && c <= 'f':
			lower = true
		case 'A' <= c && c <= 'F':
			upper = true
		default:
			return false
		}
	}
	return digits > 0 && digits < len(a) && lower != upper
}

// isID reports whether a is an identifier by its shape: 4 to 64 letters,
// digits, '_' and '-', starting with a letter or digit, holding a letter,
// and two digits or one digit and six bytes, and an upper-case letter, a
// '_' or '-', or eight bytes.
func isID(a string) bool {
	if len(a) < 4 || len(a) > 64 || !(isLetter(a[0]) || isDigit(a[0])) {
		return false
	}
	digits, letters, upper, sep := 0, 0, false, false
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch {
		case isDigit(c):
			digits++
		case isLetter(c):
			letters++
			upper = upper || isUpper(c)
		case c == '_' || c == '-':
			sep = true
		default:
			return false
		}
	}
	return letters > 0 && (digits >= 2 || digits == 1 && len(a) >= 6) && (upper || sep || len(a) >= 8)
}

package facts

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// kt is a fact's kind and text, what most tests look at.
type kt struct {
	Kind Kind
	Text string
}

func (k kt) String() string { return fmt.Sprintf("%s %q", k.Kind, k.Text) }

func kinds(fs []Fact) []kt {
	out := make([]kt, len(fs))
	for i, f := range fs {
		out[i] = kt{f.Kind, f.Text}
	}
	return out
}

// TestExtractKinds gives, for each kind, texts that hold facts of it and
// the facts they must give (among others), and texts that must not give
// a fact of it.
func TestExtractKinds(t *testing.T) {
	tests := []struct {
		kind Kind
		in   string
		want []string
	}{
		{KindID, "Ticket INC-4711 is open.", []string{"INC-4711"}},
		{KindID, "order ABC123 and booking 8JVP2Q", []string{"ABC123", "8JVP2Q"}},
		{KindID, "request 123e4567-e89b-12d3-a456-426614174000 failed", []string{"123e4567-e89b-12d3-a456-426614174000"}},
		{KindID, "fixed in commit 3f9a2c1d4e, see also 9F3A2C1D4E", []string{"3f9a2c1d4e", "9F3A2C1D4E"}},
		{KindID, "user mia_li_3668 has order #W2378156", []string{"mia_li_3668", "W2378156"}},
		{KindNumber, "the job died with exit 137", []string{"137"}},
		{KindNumber, "it ended with exit code 1 twice", []string{"exit code 1"}},
		{KindNumber, "Total: $1,234.50, refund 12.50 USD, fee €30", []string{"$1,234.50", "12.50 USD", "€30"}},
		{KindNumber, "postgres listens on port 5432", []string{"5432"}},
		{KindNumber, "upgrade go to 1.24.3 (was v1.22, next 1.25.0-rc1), host 10.0.0.12", []string{"1.24.3", "v1.22", "1.25.0-rc1", "10.0.0.12"}},
		{KindNumber, "charged USD 12.50 and 7,500 points; pid 42 ended with rc 3", []string{"USD 12.50", "7,500", "pid 42", "rc 3"}},
		{KindNumber, "RSS 512MB, took 30s, CPU 85%, ratio 0.75", []string{"512MB", "30s", "85%", "0.75"}},
		{KindTime, "at 2024-05-15T15:00:00Z, then 2024-05-16 at 09:30; due 05/27/2024 by 3:00pm", []string{"2024-05-15T15:00:00Z", "2024-05-16", "09:30", "05/27/2024", "3:00pm"}},
		{KindPath, "checked /etc/limits and ./run.sh, then edited src/app/main.go:42 and setup.py", []string{"/etc/limits", "./run.sh", "src/app/main.go:42", "setup.py"}},
		{KindPath, `opened C:\Users\me\notes.txt and ~/.bashrc`, []string{`C:\Users\me\notes.txt`, "~/.bashrc"}},
		{KindURL, "see https://example.com/a?b=1. Then call db.internal:5432 or 10.0.0.1:8080.", []string{"https://example.com/a?b=1", "db.internal:5432", "10.0.0.1:8080"}},
		{KindEmail, "mail sofia.kim1937@example.com today", []string{"sofia.kim1937@example.com"}},
		{KindQuoted, "the user said \"never touch prod\" and ran `make test`", []string{"never touch prod", "make test"}},
		{KindKV, "run with mode=strict --env=prod", []string{"mode=strict", "--env=prod"}},
		{KindKV, `{"dry_run": true, "verbose": false, "level": 3}`, []string{"dry_run=true", "verbose=false", "level=3"}},
		{KindError, "ok\nError: connection refused\nok", []string{"Error: connection refused"}},
		{KindError, "Traceback (most recent call last):\n  File \"x.py\", line 3\nKeyError: 'user'", []string{"Traceback (most recent call last):", "KeyError: 'user'"}},
		{KindError, "permission denied while opening the socket", []string{"permission denied while opening the socket"}},
		{KindNegative, "Checked /etc/limits: ulimit is unlimited, so the OOM is not from the shell. Next.", []string{"Checked /etc/limits: ulimit is unlimited, so the OOM is not from the shell"}},
		{KindNegative, "No reservations found for this user.", []string{"No reservations found for this user"}},
		{KindNegative, "Searched twice. None of the three mirrors had it, nothing was found", []string{"None of the three mirrors had it, nothing was found"}},
		{KindNegative, "grep: 0 results", []string{"grep: 0 results"}},
		{KindNegative, "The config file does not exist! Retrying.", []string{"The config file does not exist"}},
		{KindNegative, "The cache was not the cause; the DNS was.", []string{"The cache was not the cause; the DNS was"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String()+"/"+tt.in[:min(24, len(tt.in))], func(t *testing.T) {
			got := kinds(Extract(tt.in))
			for _, w := range tt.want {
				if !slices.Contains(got, kt{tt.kind, w}) {
					t.Errorf("Extract(%q) lacks %s %q; got %v", tt.in, tt.kind, w, got)
				}
			}
		})
	}
}

// TestExtractNotFacts lists words that look a little like facts and are
// not.
func TestExtractNotFacts(t *testing.T) {
	for _, in := range []string{
		"and/or", "e.g.", "i.e.", "UTF-8", "deadbeef", "added", "version 2",
		"step 10 of 12", "the end.", "x86", "it is 1/2 done", "HTTP/1.1", "text/plain",
		"a == b", "1,2,3", "Hello, world", "sha256", "done. Fine!", "-5",
		"zoom in", "a skilled hand", "no, the cause was found a long while later by someone else",
	} {
		if got := Extract(in); len(got) != 0 {
			t.Errorf("Extract(%q) = %v, want no facts", in, kinds(got))
		}
	}
}

// TestExtractJSON reads a tool result as JSON: keys name the leaves,
// strings under id keys are ids whatever their shape, strings are read
// as text, and JSON inside a string is read as JSON.
func TestExtractJSON(t *testing.T) {
	in := `{"reservation_id": "AQLBTL", "status": "confirmed", "flights": [{"flight_number": "HAT017", "date": "2024-05-25", "price": 523}],
 "note": "paid with card, see /var/log/pay.log", "error": "Seat 12A not available\nretry later", "args": "{\"order_id\": \"X9\"}", "ok": null}`
	got := Extract(in)
	want := []Fact{
		{KindID, "AQLBTL", strings.Index(in, "AQLBTL"), "reservation_id"},
		{KindID, "HAT017", strings.Index(in, "HAT017"), "flight_number"},
		{KindTime, "2024-05-25", strings.Index(in, "2024-05-25"), "date"},
		{KindNumber, "523", strings.Index(in, "523"), "price"},
		{KindPath, "/var/log/pay.log", strings.Index(in, "/var/log/pay.log"), "note"},
		{KindNegative, "Seat 12A not available", strings.Index(in, `"Seat`), "error"},
		{KindNumber, "12A", strings.Index(in, `"Seat`), "error"}, // a string with escapes: its offset
		{KindID, "X9", strings.Index(in, `"{\"order_id`), "order_id"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Extract(json) =\n%v\nwant\n%v", got, want)
	}
}

// TestExtractKeyed checks the keys: a key=value word whose value is a
// fact of its own gives that fact, keyed; a string under a JSON error key
// gives its first line as an error.
func TestExtractKeyed(t *testing.T) {
	got := Extract("retry with id=ABC123 and mode=fast")
	want := []Fact{{KindID, "ABC123", 14, "id"}, {KindKV, "mode=fast", 25, "mode"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	in := `{"stderr": "warning: low disk\nretrying"}`
	got = Extract(in)
	if want := (Fact{KindError, "warning: low disk", strings.Index(in, `"warning`), "stderr"}); !slices.Contains(got, want) {
		t.Errorf("got %v, want %v among them", got, want)
	}
}

// TestExtractVerbatim checks that every fact of a plain text is the span
// of the text at its offset, and that the text carries it.
func TestExtractVerbatim(t *testing.T) {
	for _, in := range exampleTexts {
		if looksJSON(in) {
			continue
		}
		c := NewCarrier(in)
		for _, f := range Extract(in) {
			if f.Offset < 0 || f.Offset+len(f.Text) > len(in) || in[f.Offset:f.Offset+len(f.Text)] != f.Text {
				t.Errorf("Extract(%q): %v is not the text at its offset", in, f)
			}
			if !c.Carries(f) {
				t.Errorf("Extract(%q): the text does not carry its own fact %v", in, f)
			}
		}
	}
}

// TestExtractOnce keeps a string once, as its most important kind.
func TestExtractOnce(t *testing.T) {
	got := Extract(`booking "8JVP2Q" (8JVP2Q), again 8JVP2Q`)
	if want := []kt{{KindID, "8JVP2Q"}}; !slices.Equal(kinds(got), want) {
		t.Fatalf("got %v, want %v", kinds(got), want)
	}
	if got[0].Offset != strings.Index(`booking "8JVP2Q"`, "8JVP2Q") {
		t.Errorf("offset %d, want the first place", got[0].Offset)
	}
	// "Reservation not found" is both an error line and a negative
	// result: it is a negative result.
	if got := kinds(Extract("Reservation not found")); !slices.Equal(got, []kt{{KindNegative, "Reservation not found"}}) {
		t.Errorf("got %v", got)
	}
}

// TestExtractBounds caps the facts of a text at MaxFacts, the more
// important kinds first and the earlier first within a kind, in offset
// order; and cuts a long error line to a window of whole words.
func TestExtractBounds(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "see /srv/file%d.txt ", i)
	}
	for i := range 100 {
		fmt.Fprintf(&b, "ticket INC-%d ", 1000+i)
	}
	b.WriteString("\nerror: disk full\n")
	got := Extract(b.String())
	if len(got) != MaxFacts {
		t.Fatalf("got %d facts, want %d", len(got), MaxFacts)
	}
	if got[len(got)-1] != (Fact{Kind: KindError, Text: "error: disk full", Offset: strings.Index(b.String(), "error:")}) {
		t.Errorf("the error line is not kept last: %v", got[len(got)-1])
	}
	for i, f := range got[:MaxFacts-1] {
		if want := fmt.Sprintf("INC-%d", 1000+i); f.Kind != KindID || f.Text != want {
			t.Fatalf("fact %d = %v, want id %s", i, f, want)
		}
	}

	long := strings.Repeat("word ", 100) + "FATAL: the shard 7 failed to load " + strings.Repeat("more ", 100)
	fs := Extract(long)
	i := slices.IndexFunc(fs, func(f Fact) bool { return f.Kind == KindError })
	if i < 0 {
		t.Fatalf("no error fact in %v", kinds(fs))
	}
	e := fs[i]
	if len(e.Text) > MaxLen || !strings.Contains(e.Text, "FATAL: the shard 7 failed") ||
		strings.HasPrefix(e.Text, " ") || !strings.HasPrefix(long[e.Offset:], e.Text) || long[e.Offset-1] != ' ' {
		t.Errorf("long error line cut to %q at %d", e.Text, e.Offset)
	}
	// One word longer than MaxLen around the phrase gives no fact.
	if fs := Extract(strings.Repeat("x", 300) + "error" + strings.Repeat("y", 300)); len(fs) != 0 {
		t.Errorf("got %v", kinds(fs))
	}
}

// TestExtractDeterministic runs every example twice.
func TestExtractDeterministic(t *testing.T) {
	for _, in := range exampleTexts {
		if a, b := Extract(in), Extract(in); !slices.Equal(a, b) {
			t.Errorf("Extract(%q) differs between runs: %v, %v", in, a, b)
		}
	}
}

func TestKindString(t *testing.T) {
	for k := KindNegative; k < numKinds; k++ {
		if s := k.String(); s == "" || strings.HasPrefix(s, "kind(") {
			t.Errorf("Kind(%d).String() = %q", k, s)
		}
	}
	if s := Kind(0).String(); s != "kind(0)" {
		t.Errorf("Kind(0).String() = %q", s)
	}
}

// exampleTexts feed the verbatim, determinism and fuzz tests.
var exampleTexts = []string{
	"checked /etc/limits, ulimit is unlimited, so the OOM is not from the shell. Then exit 137; exit code 1 too.",
	"Ticket INC-4711 opened. Order ABC123, reservation 8JVP2Q, commit 3f9a2c1d, id 123e4567-e89b-12d3-a456-426614174000.",
	"Total $1,234.50 or 12.50 USD; listening on localhost:8080 and port 5432. Go 1.24.3 at 2024-05-15T15:00:00Z and 15:00.",
	"See https://example.com/a?b=c. Mail bob@example.com. Edit src/main.go:42 and setup.py. Set mode=strict --env=prod retries=3.",
	"Traceback (most recent call last):\n  File \"/app/x.py\", line 12, in <module>\nValueError: invalid literal for int() with base 10: 'abc'\nNo reservations found for user mia_li_3668.",
	`{"reservation_id": "AQLBTL", "flights": [{"flight_number": "HAT017", "price": 523}], "insurance": true, "error": "Seat not available"}`,
	"Use `git rebase main` then \"fix it now\" and ```go\ncode\n```",
	"",
	"   \n\t ",
	`"unclosed quote and ` + "`unclosed tick",
	"_https://x.y/z __INC-1234__ x137 1370 3.137",
}

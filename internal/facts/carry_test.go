package facts

import "testing"

func TestCarries(t *testing.T) {
	id := Fact{Kind: KindID, Text: "INC-4711"}
	code := Fact{Kind: KindNumber, Text: "137", Key: "exit"}
	ver := Fact{Kind: KindNumber, Text: "1.24.3"}
	line := Fact{Kind: KindError, Text: "Error: connection\trefused  by peer"}
	kv := Fact{Kind: KindKV, Text: "dry_run=true", Key: "dry_run"}
	path := Fact{Kind: KindPath, Text: "/etc/security/limits.conf"}
	rel := Fact{Kind: KindPath, Text: "./run.sh"}
	tests := []struct {
		text string
		f    Fact
		want bool
	}{
		{"ticket INC-4711 is open", id, true},
		{"INC-4711", id, true},
		{"(INC-4711).", id, true},
		{"ticket INC-47110", id, false},
		{"ticket INC-4712", id, false},
		{"ticket inc-4711", id, false},
		{"ticket XINC-4711", id, false},
		{"ticket INC-4711_b", id, false},
		{"killed, exit 137.", code, true},
		{"killed, exit 1370", code, false},
		{"killed, exit 3.137", code, false},
		{"killed, exit 137,5", code, false},
		{"killed, exit 137, then 5", code, true},
		{"killed, exit x137", code, false},
		{"killed, exit é137", code, false},
		{"killed, exit 138", code, false},
		{"go 1.24.3 now", ver, true},
		{"go 1.24.30 now", ver, false},
		{"go 11.24.3 now", ver, false},
		{"go 1.24.3.", ver, true},
		{"said: Error: connection refused by\npeer", line, true},
		{"said: Error: connection refused by peer", line, true},
		{"said: Error: connectionrefused by peer", line, false},
		{"said: error: connection refused by peer", line, false},
		{"with dry_run=true set", kv, true},
		{"with dry_run: true set", kv, true},
		{"with dry_run = true set", kv, true},
		{`{"dry_run": true}`, kv, true},
		{`{"dry_run":true}`, kv, true},
		{`{"dry_run": "true"}`, kv, true},
		{"with dry_run=truex", kv, false},
		{"with dry_run=false", kv, false},
		{"", id, false},
		{"read /etc/security/limits.conf", path, true},
		{"(/etc/security/limits.conf)", path, true},
		{"path=/etc/security/limits.conf", path, true},
		{"read /opt/etc/security/limits.conf", path, false},
		{"read ./etc/security/limits.conf", path, false},
		{"read ~/etc/security/limits.conf", path, false},
		{"read x-/etc/security/limits.conf", path, false},
		{"read etc/security/limits.conf", path, false},
		{"run ./run.sh", rel, true},
		{"run ../run.sh", rel, false},
		{"run src/../run.sh", rel, false},
	}
	for _, tt := range tests {
		if got := Contains(tt.text, tt.f); got != tt.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", tt.text, tt.f.Text, got, tt.want)
		}
	}
}

func TestCarrierZeroAndMissing(t *testing.T) {
	var zero Carrier
	if zero.Carries(Fact{Kind: KindID, Text: "x"}) {
		t.Error("the zero Carrier carries a fact")
	}
	var nilc *Carrier
	if nilc.Carries(Fact{Kind: KindID, Text: "x"}) {
		t.Error("a nil Carrier carries a fact")
	}
	if (&Carrier{}).Carries(Fact{}) || NewCarrier("anything").Carries(Fact{}) {
		t.Error("the zero Fact is carried")
	}
	fs := Extract("ticket INC-4711, exit 137, path /etc/limits")
	got := NewCarrier("about INC-4711 and /etc/limits").Missing(fs)
	if len(got) != 1 || got[0].Text != "137" {
		t.Errorf("Missing = %v, want only 137", got)
	}
}

func TestSqueeze(t *testing.T) {
	for in, want := range map[string]string{
		"":            "",
		"a b":         "a b",
		"a  b":        "a b",
		"a\tb":        "a b",
		" a \n\t b  ": " a b ",
		"a\r\nb":      "a b",
	} {
		if got := squeeze(in); got != want {
			t.Errorf("squeeze(%q) = %q, want %q", in, got, want)
		}
	}
}

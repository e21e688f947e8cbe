package facts_test

import (
	"fmt"

	"github.com/pruneguard/pruneguard/internal/facts"
)

func ExampleExtract() {
	text := `Checked /etc/limits: ulimit is unlimited, so the OOM is not from the shell.
Ticket INC-4711: the worker died with exit 137 at 2024-05-15T15:00:00Z.
Refund of $1,234.50 goes to sofia.kim1937@example.com; see https://status.example.com.
The user said "never touch prod"; run with --env=staging.
Error: connection refused (port 5432)`
	for _, f := range facts.Extract(text) {
		fmt.Printf("%-8s %q\n", f.Kind, f.Text)
	}
	// Output:
	// negative "Checked /etc/limits: ulimit is unlimited, so the OOM is not from the shell"
	// path     "/etc/limits"
	// id       "INC-4711"
	// number   "137"
	// time     "2024-05-15T15:00:00Z"
	// number   "$1,234.50"
	// email    "sofia.kim1937@example.com"
	// url      "https://status.example.com"
	// quoted   "never touch prod"
	// kv       "--env=staging"
	// error    "Error: connection refused (port 5432)"
	// number   "5432"
}

func ExampleExtract_json() {
	result := `{"reservation_id": "AQLBTL", "flights": [{"flight_number": "HAT017", "price": 523}], "insurance": true}`
	for _, f := range facts.Extract(result) {
		fmt.Printf("%-6s %-14s %q\n", f.Kind, f.Key, f.Text)
	}
	// Output:
	// id     reservation_id "AQLBTL"
	// id     flight_number  "HAT017"
	// number price          "523"
	// kv     insurance      "insurance=true"
}

func ExampleCarrier() {
	fs := facts.Extract("The worker of INC-4711 died with exit 137; /tmp/scratch is not the cause.")
	summary := facts.NewCarrier("INC-4711: worker killed (exit 1370), scratch dir ruled out.")
	for _, f := range summary.Missing(fs) {
		fmt.Printf("missing %s %q\n", f.Kind, f.Text)
	}
	// Output:
	// missing negative "The worker of INC-4711 died with exit 137; /tmp/scratch is not the cause"
	// missing number "137"
	// missing path "/tmp/scratch"
}

package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestMain makes the test binary a replica when the command starts it
// as one.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// Two replicas sharing a directory store send what one process sends,
// through prunes and compactions.
func TestFleetSendsWhatOneProcessSends(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-turns", "24"}, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs.String(), out.String())
	}
	for _, want := range []string{"48 requests; 0 bodies differ", "1 summary", "evicted", "OK"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Replicas that share nothing are caught: each prunes on its own, and
// the bodies part from one process's.
func TestFleetWithoutAStoreIsCaught(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-turns", "24", "-alone"}, nil, &out, &errs); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "DIFFERS from one process") {
		t.Errorf("no difference reported:\n%s", out.String())
	}
}

// On Redis as on a directory, when CI gives a server.
func TestFleetOnRedis(t *testing.T) {
	addr := os.Getenv("PRUNEGUARD_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("PRUNEGUARD_TEST_REDIS_ADDR is not set")
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-turns", "24", "-redis", addr}, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs.String(), out.String())
	}
	if !strings.Contains(out.String(), "48 requests; 0 bodies differ") {
		t.Errorf("output:\n%s", out.String())
	}
}

// Bad flags are a usage error.
func TestBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-turns", "0"}, nil, &out, &errs); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errs.String(), "-turns must be at least 1") {
		t.Errorf("stderr does not say why: %q", errs.String())
	}
}

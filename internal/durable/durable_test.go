package durable

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestWriteTempWritesThePartsInOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := Mkdir(dir); err != nil {
		t.Fatal(err)
	}
	if err := Mkdir(dir); err != nil {
		t.Fatalf("a second Mkdir: %v", err)
	}
	name, err := WriteTemp(dir, []byte("head:"), nil, []byte("body"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(name) != dir || !strings.HasPrefix(filepath.Base(name), ".tmp-") {
		t.Errorf("temporary file %s: want .tmp-* in %s", name, dir)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != "head:body" {
		t.Errorf("read %q, %v; want head:body", b, err)
	}
	if fi, err := os.Stat(name); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if err := SyncDir(dir); err != nil {
		t.Error(err)
	}
}

func TestWriteTempInAMissingDirectoryFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if name, err := WriteTemp(dir, []byte("x")); err == nil {
		t.Errorf("WriteTemp in a missing directory made %s", name)
	}
	if err := SyncDir(dir); err == nil && runtime.GOOS != "windows" {
		t.Error("SyncDir of a missing directory succeeded")
	}
}

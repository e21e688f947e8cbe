package pruneguard

import "testing"

// A call's signature is the same for arguments written two ways, and is
// made in the caller's buffer.
func TestSigKeyReusesItsBuffer(t *testing.T) {
	args := []byte(`{"path": "/etc/hosts", "flags": {"z": 1, "a": [2, {"y": 3, "x": 4}]}}`)
	k1, buf := sigKey(nil, "read_file", args)
	k2, buf2 := sigKey(buf, "read_file", []byte(`{"flags":{"a":[2,{"x":4,"y":3}],"z":1},"path":"/etc/hosts"}`))
	if k1 != k2 || len(k1) != 16 {
		t.Errorf("the same arguments written two ways sign %x and %x", k1, k2)
	}
	if &buf[:1][0] != &buf2[:1][0] {
		t.Error("sigKey did not reuse its buffer")
	}
	if k3, _ := sigKey(buf2, "grep", args); k3 == k1 {
		t.Error("two tools sign the same arguments alike")
	}
	// Arguments whose keys are in order are signed in the buffer: the
	// key is the only allocation.
	ordered := []byte(`{"flags": {"a": [2, {"x": 4, "y": 3}], "z": 1}, "path": "/etc/hosts"}`)
	if k4, _ := sigKey(buf, "read_file", ordered); k4 != k1 {
		t.Errorf("ordered arguments sign %x, want %x", k4, k1)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, buf = sigKey(buf, "read_file", ordered) }); allocs > 1 {
		t.Errorf("sigKey allocates %v times with a buffer, want at most 1 (the key)", allocs)
	}
}

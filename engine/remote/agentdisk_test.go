package remote

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/agentdisk"
)

// fakeDisk points the guest's search for the agent disk at a folder of its
// own standing in for /sys/block and /dev, holding one disk with bin (none
// when bin is nil), for the rest of the test.
func fakeDisk(t *testing.T, bin []byte) {
	t.Helper()
	d := t.TempDir()
	sys, dev := filepath.Join(d, "sys"), filepath.Join(d, "dev")
	for _, p := range []string{filepath.Join(sys, "vdb"), dev} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if bin != nil {
		if err := os.WriteFile(filepath.Join(sys, "vdb", "serial"), []byte(agentdisk.Serial+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := agentdisk.Write(filepath.Join(dev, "vdb"), bin); err != nil {
			t.Fatal(err)
		}
	}
	oldSys, oldDev := agentDiskSys, agentDiskDev
	agentDiskSys, agentDiskDev = sys, dev
	t.Cleanup(func() { agentDiskSys, agentDiskDev = oldSys, oldDev })
}

// TestOpenAgentDisk: a local VM's agent comes from its agent disk in the
// warm-start session itself (one exec, nothing uploaded), installed under
// its hash; a disk that is missing or holds another build is said
// (Installed.Disk, a warning) and the agent uploaded as before; a host not
// told it has the disk never looks. The guest's side is the real shell
// reader (dd iflag=direct, sha256sum) on a disk image made by
// agentdisk.Write.
func TestOpenAgentDisk(t *testing.T) {
	if _, err := os.Stat("/usr/bin/sha256sum"); err != nil {
		t.Skip("needs sha256sum")
	}
	bin := fakeAgent(t)
	other := append([]byte("#!/bin/sh\n# another build\n"), bin...)
	for _, tc := range []struct {
		name      string
		disk      []byte
		agentDisk bool
		wantExecs int32
		wantDisk  string
		wantWarn  bool
	}{
		{"the disk holds this build", bin, true, 1, DiskOK, false},
		{"no disk", nil, true, 3, "missing", true},
		{"the disk holds another build", other, true, 3, "hash " + sum(other), true},
		{"not a VM: the disk is not looked for", bin, false, 3, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeDisk(t, tc.disk)
			h := newHost(t, "")
			var logBuf syncBuffer
			ag := agentsOf(bin).WithLogger(slog.New(slog.NewTextHandler(&logBuf, nil)))
			before := h.srv.Execs.Load()
			a, inst, err := ag.Open(context.Background(), h.c, StartOptions{Host: "vm1", RunID: "r1", AgentDisk: tc.agentDisk})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			if n := h.srv.Execs.Load() - before; n != tc.wantExecs {
				t.Errorf("%d exec sessions, want %d", n, tc.wantExecs)
			}
			if inst.Disk != tc.wantDisk {
				t.Errorf("Installed.Disk %q, want %q", inst.Disk, tc.wantDisk)
			}
			if uploaded := inst.Sent > 0; uploaded != (tc.wantDisk != DiskOK) {
				t.Errorf("sent %d bytes; want an upload: %v", inst.Sent, tc.wantDisk != DiskOK)
			}
			got, err := os.ReadFile(filepath.Join(h.home, CacheDir, sum(bin), "rlab-agent"))
			if err != nil || sum(got) != sum(bin) {
				t.Errorf("cached agent: %v, sha256 %s; want %s", err, sum(got), sum(bin))
			}
			warned := strings.Contains(logBuf.String(), "the agent disk did not give this build of the agent; uploaded it instead")
			if warned != tc.wantWarn || tc.wantWarn && !strings.Contains(logBuf.String(), "host=vm1") {
				t.Errorf("log (want the fallback said: %v):\n%s", tc.wantWarn, logBuf.String())
			}
			// Warm: the cached copy, one session, the disk not read again.
			before = h.srv.Execs.Load()
			a, inst, err = ag.Open(context.Background(), h.c, StartOptions{Host: "vm1", RunID: "r2", AgentDisk: tc.agentDisk})
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			if n := h.srv.Execs.Load() - before; n != 1 || inst.Disk != "" || inst.Sent != 0 {
				t.Errorf("warm Open: %d exec sessions, Disk %q, %d bytes sent; want 1, \"\", 0", n, inst.Disk, inst.Sent)
			}
		})
	}
}

package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/runevent"
)

const agentDiskLab = `
lab "agentdisk" {}
host "server" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}
host "client" {
  vm {
    network "rdma" {
      address = "10.99.0.2/24"
    }
  }
}
workload "server_kernel" {
  tool    = "exec"
  host    = host.server
  command = ["uname", "-r"]
}
workload "client_kernel" {
  tool    = "exec"
  host    = host.client
  command = ["uname", "-r"]
}
`

// TestE2EAgentDisk runs a lab of two local VMs with the real rlab binary
// and reads, in events.jsonl, how each host's agent arrived and how long
// its connect step took: a booted VM takes the agent from its agent disk
// (no upload); a restored VM finds it already installed, as its snapshot's
// template installed it from that disk before the save (vm.Options.
// WarmAgent: no upload, no disk read; the snapshot key holds the agent's
// sha256, so it is this build's); with RLAB_VM_AGENT_DISK=0 the disk is
// empty and the agent is uploaded, saying why.
func TestE2EAgentDisk(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e2eImage(ctx, t)
	labFile := filepath.Join(t.TempDir(), "agentdisk.hcl")
	if err := os.WriteFile(labFile, []byte(agentDiskLab), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, restore, disk string
		want                string
	}{
		{"restored-disk", "1", "", "agent already on the host"},
		{"restored-upload", "1", "0", "the VM's agent disk did not give it (empty)"},
		{"booted-disk", "0", "", "agent from the VM's agent disk (no upload)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			keepOnFailure(t, out)
			cmd := rlabCommand(ctx, t, rlabLimit, bin, "run", "--out", out, labFile)
			cmd.Env = append(os.Environ(), RestoreEnv+"="+tt.restore, AgentDiskEnv+"="+tt.disk)
			t0 := time.Now()
			b, err := cmd.CombinedOutput()
			t.Logf("rlab run (%s=%s %s=%s) in %s:\n%s", RestoreEnv, tt.restore, AgentDiskEnv, tt.disk, time.Since(t0).Round(100*time.Millisecond), b)
			checkNoQEMU(t, out)
			if err != nil {
				t.Fatalf("rlab run: %v", err)
			}
			arrived, secs, boot := connectEvents(t, out)
			for _, h := range []string{"server", "client"} {
				if !strings.Contains(arrived[h], tt.want) {
					t.Errorf("host %s: connect says %q, want %q", h, arrived[h], tt.want)
				}
				t.Logf("MEASURED %s: host %s connect %.2f s (%s)", tt.name, h, secs[h], arrived[h])
			}
			t.Logf("MEASURED %s: connect phase (both hosts) %.2f s, boot phase %.2f s", tt.name, secs[""], boot)
		})
	}
}

// connectEvents reads events.jsonl: each host's connect end message and
// seconds, the whole connect phase's seconds (key ""), and the boot phase's.
func connectEvents(t *testing.T, dir string) (map[string]string, map[string]float64, float64) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runevent.File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msg, secs := map[string]string{}, map[string]float64{}
	var boot float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e runevent.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type != "step.end" {
			continue
		}
		switch e.Step {
		case "connect":
			msg[e.Host], secs[e.Host] = e.Message, e.Seconds
		case "boot":
			boot = e.Seconds
		}
	}
	return msg, secs, boot
}

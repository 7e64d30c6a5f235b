package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// TestTeardownDiscardsVMNetns: the same teardown over real OpenSSH and the
// real agent, one netns host standing in for a local VM (the fake VM set
// points its endpoint there) beside an SSH host. The VM's session is
// abandoned (its agent still ends, sshd closing its stdin) and its work
// dir left to the VM; the SSH host's work dir is removed and its agent
// ends after its cleanup. Both runs' files are pulled and the run is
// complete.
func TestTeardownDiscardsVMNetns(t *testing.T) {
	bed, _ := netnsBed(t, 2)
	h0, h1 := bed.Hosts[0], bed.Hosts[1]
	l := loadLab(t, fmt.Sprintf(`lab "discard" {}
host "h0" {
  vm {}
}
host "h1" {
  address = %q
  user = %q
  identity_file = %q
  known_hosts = %q
}
workload "on_vm" {
  tool    = "exec"
  host    = host.h0
  command = ["sh", "-c", "echo from the vm; echo left > left.txt"]
}
workload "on_ssh" {
  tool    = "exec"
  host    = host.h1
  command = ["sh", "-c", "echo from ssh; echo left > left.txt"]
}
`, h1.Addr, bed.User, bed.KeyFile, bed.KnownHosts))
	vms := &fakeVMs{accel: "kvm", endpoint: map[string]runstate.Host{
		"h0": {Address: h0.Addr, Port: 22, User: bed.User, IdentityFile: bed.KeyFile, KnownHosts: bed.KnownHosts},
	}}
	start := time.Now()
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), VMs: vms, Out: filepath.Join(t.TempDir(), "run"), NoReport: true})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	t.Logf("run took %s", time.Since(start).Round(time.Millisecond))
	for host, want := range map[string]string{"h0": "from the vm\n", "h1": "from ssh\n"} {
		wl := map[string]string{"h0": "on_vm", "h1": "on_ssh"}[host]
		b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", host, "logs", "wl."+wl+".exec.r0.stdout"))
		if err != nil || string(b) != want {
			t.Errorf("%s: pulled stdout %q, %v; want %q", host, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "complete.json")); err != nil {
		t.Errorf("run directory incomplete: %v", err)
	}
	wd := map[string]string{}
	for _, h := range readState(t, res.Dir).Hosts {
		wd[h.Name] = h.WorkDir
	}
	if wd["h0"] != "" && strings.Contains(wd["h0"], "/.cache/rlab/runs/") {
		// A real VM would take it away; the bed's shared home keeps it.
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(wd["h0"])) })
	}
	if _, err := os.Stat(wd["h0"]); err != nil {
		t.Errorf("the VM's work dir %s was removed one by one (%v): it goes with the VM", wd["h0"], err)
	}
	if _, err := os.Stat(wd["h1"]); !os.IsNotExist(err) {
		t.Errorf("the SSH host's work dir %s is still there (%v)", wd["h1"], err)
	}
	var notes []string
	for _, e := range readEvents(t, res.Dir) {
		if e.Type == "step.end" && e.Step == "teardown" && e.Host != "" {
			notes = append(notes, e.Host+": "+e.Message)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "h0: "+DiscardNote) {
		t.Errorf("teardown notes %q, want one for h0 beginning %q", notes, DiscardNote)
	}
	// Abandoned or closed, each agent ends: the VM's because sshd closed
	// its session, the SSH host's after its cleanup.
	for _, h := range bed.Hosts {
		deadline := time.Now().Add(15 * time.Second)
		for {
			left := ""
			for pid, cmd := range bed.Pids(t, h) {
				if strings.Contains(cmd, "rlab-agent") {
					left += fmt.Sprintf(" %d: %s", pid, cmd)
				}
			}
			if left == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: agent still running 15s after the run:%s", h.Name, left)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

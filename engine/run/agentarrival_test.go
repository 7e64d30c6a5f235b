package run

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/remote"
)

// TestAgentArrivalText: what the connect step's end event says of how the
// agent got to a host, for each way it can.
func TestAgentArrivalText(t *testing.T) {
	for _, tt := range []struct {
		name string
		inst *remote.Installed
		want string
	}{
		{"from the disk", &remote.Installed{Disk: remote.DiskOK}, "agent from the VM's agent disk (no upload)"},
		{"disk missing", &remote.Installed{Disk: "missing", Sent: 2031229}, "agent uploaded (2031229 bytes): the VM's agent disk did not give it (missing)"},
		{"disk of another build", &remote.Installed{Disk: "hash 00ff", Sent: 10}, "agent uploaded (10 bytes): the VM's agent disk did not give it (hash 00ff)"},
		{"an SSH host, cold", &remote.Installed{Sent: 10}, "agent uploaded (10 bytes)"},
		{"cached", &remote.Installed{}, "agent already on the host"},
		{"not known", nil, ""},
	} {
		if got := agentArrival(tt.inst); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// arrivalHost is a pipe-bed host that says how its agent arrived.
type arrivalHost struct {
	*pipeHost
	arrival string
}

func (h arrivalHost) AgentArrival() string { return h.arrival }

const vmAndSSHExec = `
lab "arrival" {}
host "v" {
  vm {}
}
host "b" { address = "127.0.0.1" }
workload "on_v" {
  tool    = "exec"
  host    = host.v
  command = ["echo", "hello from the VM"]
}
workload "on_b" {
  tool    = "exec"
  host    = host.b
  command = ["echo", "hello from b"]
}
`

// TestConnectEventSaysHowTheAgentArrived: the connect step's end event in
// events.jsonl carries the host's AgentArrival; a host that cannot say
// leaves it empty.
func TestConnectEventSaysHowTheAgentArrived(t *testing.T) {
	bed := newPipeBed(t)
	conn := ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
		h, err := bed.Connect(ctx, tg, runID)
		if err != nil || tg.Name != "v" {
			return h, err
		}
		return arrivalHost{h.(*pipeHost), "agent from the VM's agent disk (no upload)"}, nil
	})
	out := filepath.Join(t.TempDir(), "run")
	res := runPlanned(context.Background(), t, loadLab(t, vmAndSSHExec), plan.Options{}, Options{Connector: conn, VMs: &fakeVMs{accel: "tcg"}, Out: out, NoReport: true})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	got := map[string]string{}
	for _, e := range readEvents(t, res.Dir) {
		if e.Type == "step.end" && e.Step == "connect" && e.Host != "" {
			got[e.Host] = e.Message
		}
	}
	want := map[string]string{"v": "agent from the VM's agent disk (no upload)", "b": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("connect end events (-want +got):\n%s", d)
	}
}

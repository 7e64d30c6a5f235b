package run

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// TestRunOverSSH runs a lab through the real SSH path: the SSH connector
// dials in-process SSH servers (sshtest, running real shell commands on this
// machine) with verified host keys, installs the real agent binary over
// SFTP, starts it, runs exec and tcp workloads and pulls the artifacts over
// SFTP. The netns bed (RLAB_NETNS=1) does the same against OpenSSH.
func TestRunOverSSH(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	var hosts strings.Builder
	for _, name := range []string{"a", "b"} {
		home := t.TempDir()
		s := sshtest.Start(t, sshtest.ShellHandler(home))
		s.SFTPDir = home
		kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
		h, p, _ := net.SplitHostPort(s.Addr)
		fmt.Fprintf(&hosts, "host %q {\n  address = %q\n  port = %s\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\n", name, h, p, s.User, s.KeyFile, kh)
	}
	l := loadLab(t, `lab "ssh" {}
`+hosts.String()+`
workload "hello" {
  tool    = "exec"
  host    = host.a
  command = ["uname", "-s"]
}
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "2MiB"
}
`)
	conn := &SSHConnector{SSH: sshx.Options{SSHConfig: "none", AgentSocket: "none"}, Agents: remote.NewAgents(dist.Binary)}
	defer conn.Close()
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: conn, Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	out, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "wl.hello.exec.r0.stdout"))
	if err != nil || string(out) != "Linux\n" {
		t.Errorf("exec output pulled over sftp: %q, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "agent.log")); err != nil || len(b) == 0 {
		t.Errorf("agent log: %d bytes, %v", len(b), err)
	}
	r, err := results.ReadRun(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range r.Samples {
		if s.Metric == "tcp_bw" && s.Value > 0 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("results.json: %d tcp_bw samples > 0, want 1", n)
	}
	st := readState(t, res.Dir)
	for _, h := range st.Hosts {
		if !h.Connected || h.AgentPID == 0 || !strings.Contains(h.WorkDir, ".cache/rlab/runs/") {
			t.Errorf("state host %+v: want connected with agent pid and work dir", h)
		}
	}
}

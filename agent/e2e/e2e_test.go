// Package e2e proves rlab-agent on real Soft-RoCE: two QEMU VMs from the rlab
// image (engine/vm), the agent binary shipped over SSH and driven over its
// protocol — facts, rxe.ensure/delete over netlink, perftest and rping with
// TCP and rdma_cm readiness, a RoCEv2 capture, files.list, and cleanup when
// stdin closes. It is a test-only package; it runs with RLAB_VM_E2E=1.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/vm"
)

// agentConn is one SSH session running the agent, spoken to with the
// controller's protocol client (agent/rpc).
type agentConn struct {
	t     *testing.T
	name  string
	sess  *ssh.Session
	rc    *rpc.Client
	hello proto.Hello

	mu     sync.Mutex
	stderr bytes.Buffer
}

func startAgent(t *testing.T, ctx context.Context, name string, c *ssh.Client, bin []byte) *agentConn {
	t.Helper()
	up, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	up.Stdin = bytes.NewReader(bin)
	if out, err := up.CombinedOutput("umask 077 && mkdir -p /root/.cache/rlab/agent && cat > /root/.cache/rlab/agent/rlab-agent && chmod 700 /root/.cache/rlab/agent/rlab-agent"); err != nil {
		t.Fatalf("%s: upload agent: %v: %s", name, err, out)
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	a := &agentConn{t: t, name: name, sess: sess}
	sess.Stderr = &syncWriter{w: &a.stderr, mu: &a.mu}
	out, _ := sess.StdoutPipe()
	in, _ := sess.StdinPipe()
	if err := sess.Start("/root/.cache/rlab/agent/rlab-agent serve --run-id e2e --log-level debug"); err != nil {
		t.Fatal(err)
	}
	// Deadlines as in production, scaled up for the emulated VMs.
	a.rc, a.hello, err = rpc.Dial(out, in, rpc.Options{Host: name, Timeout: 5 * time.Minute, Heartbeat: 15 * time.Second})
	if err != nil {
		t.Fatalf("%s: hello: %v", name, err)
	}
	return a
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (a *agentConn) call(method string, params, res any) {
	a.t.Helper()
	err := a.rc.Do(context.Background(), method, params, res)
	var pe *proto.Error
	switch {
	case errors.As(err, &pe):
		a.t.Fatalf("%s: %s: %v (command %q exit %d stderr %q)\nagent log:\n%s", a.name, method, pe, pe.Command, pe.ExitCode, pe.Stderr, a.log())
	case err != nil:
		a.t.Fatalf("%s: %s: %v; agent log:\n%s", a.name, method, err, a.log())
	}
}

func (a *agentConn) log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stderr.String()
}

func run(t *testing.T, c *ssh.Client, cmd string) string {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, _ := s.CombinedOutput(cmd)
	return string(out)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestE2EAgentOnRealRXE(t *testing.T) {
	if os.Getenv("RLAB_VM_E2E") != "1" {
		t.Skip("agent on real rxe: set RLAB_VM_E2E=1 (root, qemu, mmdebstrap; see make test-vm)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	// The agent as shipped: built for linux/amd64 like `make agent` does.
	bin := filepath.Join(t.TempDir(), "rlab-agent")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "github.com/rlab-dev/rlab/agent/cmd/rlab-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build agent: %v: %s", err, out)
	}
	agentBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	im, err := image.Ensure(ctx, image.DefaultRecipe(""), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := []vm.Machine{
		{Name: "server", Slug: "agsrv", BootTimeout: 10 * time.Minute, Networks: []vm.Network{{Name: "rdma", Address: "10.99.0.1/24"}}},
		{Name: "client", Slug: "agcli", BootTimeout: 10 * time.Minute, Networks: []vm.Network{{Name: "rdma", Address: "10.99.0.2/24"}}},
	}
	set, err := vm.Boot(ctx, ms, t.TempDir(), vm.Options{Image: im, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 2*time.Minute)
		defer c()
		if err := set.Shutdown(sctx); err != nil {
			t.Error(err)
		}
	})
	var clients []*ssh.Client
	var agents []*agentConn
	for _, v := range set.VMs {
		c, err := v.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
		agents = append(agents, startAgent(t, ctx, v.Name, c, agentBin))
	}
	srv, cli := agents[0], agents[1]

	// Facts before any rxe: the module is there, the tools too (the
	// controller names the programs to probe, as rlab does).
	for _, a := range agents {
		var f proto.Facts
		a.call(proto.MethodFacts, remote.FactsParams(false, nil), &f)
		t.Logf("%s facts: kernel %s os %q rxe_module %s perftest_json %v tools %v memlock %d", a.name, f.Kernel, f.OS, f.RXEModule, f.PerftestJSON, f.Tools, f.MemlockSoft)
		if f.RXEModule == "absent" || f.Tools["ib_write_bw"].Path == "" || f.Tools["ib_write_bw"].Version == "" || f.Tools["rping"].Path == "" ||
			!f.PerftestJSON || f.Tools["tcpdump"].Version == "" || f.Tools["modprobe"].Version == "" || f.Tools["rping"].Version == "" {
			t.Errorf("%s: facts %+v", a.name, f)
		}
		if len(f.Errors) > 0 {
			t.Errorf("%s: facts errors %v", a.name, f.Errors)
		}
	}

	// rxe on eth1 of both, over netlink; idempotent.
	infos := make([]proto.DeviceInfo, 2)
	for i, a := range agents {
		a.call(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "rxe_eth1", Netdev: "eth1"}, &infos[i])
		t.Logf("%s rxe: %+v", a.name, infos[i])
		want := fmt.Sprintf("10.99.0.%d", i+1)
		if !infos[i].Created || infos[i].IPv4 != want || infos[i].GID != "::ffff:"+want || infos[i].ActiveMTU != 1024 {
			t.Errorf("%s: rxe.ensure = %+v", a.name, infos[i])
		}
		var again proto.DeviceInfo
		a.call(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "rxe_eth1", Netdev: "eth1"}, &again)
		if again.Created || again.GIDIndex != infos[i].GIDIndex {
			t.Errorf("%s: second rxe.ensure = %+v", a.name, again)
		}
		var f proto.Facts
		a.call(proto.MethodFacts, nil, &f)
		if len(f.RDMA) != 1 || f.RDMA[0].Driver != "rxe" || f.RDMA[0].Parent != "eth1" || f.RDMA[0].Ports[0].State != "ACTIVE" {
			t.Errorf("%s: rdma devices in facts: %+v", a.name, f.RDMA)
		}
	}

	// RoCEv2 capture on the server while perftest runs.
	srv.call(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "roce", Netdev: "eth1", Filter: "udp port 4791", Snaplen: 128, MaxBytes: 64 << 20}, nil)

	gid := fmt.Sprint(infos[0].GIDIndex)
	pt := func(extra ...string) []string {
		return append([]string{"ib_write_bw", "-d", "rxe_eth1", "-x", gid, "-n", "200", "-s", "65536", "-F", "--report_gbits"}, extra...)
	}
	var st proto.ProcStarted
	srv.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "bw-server", Argv: pt(), Ready: &proto.Ready{TCPListen: 18515, TimeoutMs: 60000}, TimeoutMs: 300000}, &st)
	t.Logf("perftest server ready after %d ms", st.ReadyMs)
	cli.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "bw-client", Argv: pt("10.99.0.1"), TimeoutMs: 300000}, nil)
	var sr, cr proto.ProcResult
	cli.call(proto.MethodProcWait, proto.ProcWaitParams{Handle: "bw-client"}, &cr)
	srv.call(proto.MethodProcWait, proto.ProcWaitParams{Handle: "bw-server"}, &sr)
	if cr.ExitCode != 0 || sr.ExitCode != 0 || !strings.Contains(cr.Stdout, "BW average") {
		t.Errorf("ib_write_bw: client exit %d out %q err %q; server exit %d err %q", cr.ExitCode, cr.Stdout, cr.Stderr, sr.ExitCode, sr.Stderr)
	}

	// rping: readiness by a listening rdma_cm id.
	srv.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "rping-server", Argv: []string{"rping", "-s", "-a", "10.99.0.1", "-C", "3", "-v"},
		Ready: &proto.Ready{RDMACMListen: 7174, TimeoutMs: 60000}, TimeoutMs: 120000}, &st)
	t.Logf("rping server ready after %d ms", st.ReadyMs)
	cli.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "rping-client", Argv: []string{"rping", "-c", "-a", "10.99.0.1", "-C", "3", "-v"}, TimeoutMs: 120000}, nil)
	cli.call(proto.MethodProcWait, proto.ProcWaitParams{Handle: "rping-client"}, &cr)
	srv.call(proto.MethodProcWait, proto.ProcWaitParams{Handle: "rping-server"}, &sr)
	if cr.ExitCode != 0 || !strings.Contains(cr.Stdout, "ping data") {
		t.Errorf("rping: client exit %d out %q err %q; server exit %d err %q", cr.ExitCode, cr.Stdout, cr.Stderr, sr.ExitCode, sr.Stderr)
	}

	var capRes proto.CaptureResult
	srv.call(proto.MethodCaptureStop, proto.CaptureStopParams{Handle: "roce"}, &capRes)
	t.Logf("capture: %+v", capRes)
	if len(capRes.Files) != 1 || capRes.Files[0].Path != "roce.pcap" || capRes.Files[0].Size < 10_000 || capRes.Captured == 0 || capRes.Dropped != 0 {
		t.Errorf("RoCEv2 capture too small: %+v", capRes)
	}
	var list proto.FilesList
	srv.call(proto.MethodFilesList, nil, &list)
	t.Logf("server files: %+v", list.Files)

	// Closing stdin deletes the rxe devices the agents created.
	for i, a := range agents {
		a.rc.Close()
		done := make(chan error, 1)
		go func() { done <- a.sess.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: agent exit: %v\n%s", a.name, err, a.log())
			}
		case <-time.After(2 * time.Minute):
			t.Errorf("%s: agent did not exit after stdin closed", a.name)
		}
		if out := run(t, clients[i], "ls /sys/class/infiniband; ps -eo comm= | grep -xE 'ib_write_bw|rping|tcpdump'"); strings.TrimSpace(out) != "" {
			t.Errorf("%s: left behind after the agent exited: %q", a.name, out)
		}
	}
}

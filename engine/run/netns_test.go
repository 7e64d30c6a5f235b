package run

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
	"github.com/rlab-dev/rlab/kinds"
)

// netnsBed is a netns sshd bed of n hosts and the lab text of its hosts
// (h0..), reached as the bed's sudo user with become (tcpdump needs root).
func netnsBed(t *testing.T, n int) (*testbed.Bed, string) {
	t.Helper()
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		if ok, _ := testbed.Enabled(); ok {
			t.Fatalf("agent not embedded (make agent): %v", err)
		}
		t.Skip("agent not embedded")
	}
	bed := testbed.Start(t, testbed.Options{Hosts: n})
	var b strings.Builder
	for _, h := range bed.Hosts {
		fmt.Fprintf(&b, "host %q {\n  address = %q\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n  become = true\n}\n",
			h.Name, h.Addr, bed.User, bed.KeyFile, bed.KnownHosts)
	}
	return bed, b.String()
}

func sshConnector(t *testing.T) *SSHConnector {
	c := &SSHConnector{SSH: sshx.Options{SSHConfig: "none", AgentSocket: "none"}, Agents: remote.NewAgents(dist.Binary)}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestNetnsRun is the netns-bed integration test of issue 4: real OpenSSH,
// the real agent, real tcpdump.
func TestNetnsRun(t *testing.T) {
	bed, hosts := netnsBed(t, 3)
	tcpPort := kinds.BasePort + kinds.PortsPerWorkload*1 // the tcp workload is the second
	base := `lab "netns" {}
` + hosts

	t.Run("tcp, exec and a capture", func(t *testing.T) {
		l := loadLab(t, base+`
workload "prep" {
  tool = "exec"
  host = host.h0
  command = ["uname", "-r"]
}
workload "bulk" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "32MiB"
  repeat = 2
}
workload "after" {
  tool = "exec"
  host = host.h1
  command = ["ip", "-br", "addr"]
}
capture "tcp" {
  host   = host.h0
  netdev = "eth0"
  filter = "tcp port `+strconv.Itoa(tcpPort)+`"
}
`)
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitOK {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		files, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "h0", "captures", "cap.tcp.pcap*"))
		n := 0
		for _, f := range files {
			n += countTCP(t, f, tcpPort)
		}
		if n < 100 {
			stderr, _ := os.ReadFile(filepath.Join(res.Dir, "hosts", "h0", "logs", "cap.tcp.tcpdump.stderr"))
			outc, _ := os.ReadFile(filepath.Join(res.Dir, results.ResultsFile))
			t.Errorf("capture %v holds %d TCP packets on port %d, want the 2 × 32 MiB transfers; tcpdump: %s\n%s", files, n, tcpPort, stderr, outc)
		}
		r := readRun(t, res.Dir)
		tcp := 0
		for _, s := range r.Samples {
			if s.Metric == "tcp_bw" && s.Unit == "Gb/s" && s.Value > 0 {
				tcp++
			}
		}
		if tcp != 2 {
			t.Errorf("results.json: %d tcp_bw samples, want 2", tcp)
		}
		// What the SFTP/bundle pulls made is recorded as artifacts: the
		// capture's files among them, each as it is on disk.
		var want []string
		for _, f := range files {
			rel, _ := filepath.Rel(res.Dir, f)
			want = append(want, filepath.ToSlash(rel))
		}
		if got := artifactsOnDisk(t, res.Dir, r); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("captures among the artifacts %q, want %q", got, want)
		}
		var ju struct {
			XMLName xml.Name
			Tests   int `xml:"tests,attr"`
		}
		b, _ := os.ReadFile(filepath.Join(res.Dir, "junit.xml"))
		if err := xml.Unmarshal(b, &ju); err != nil {
			t.Errorf("junit.xml is not valid XML: %v", err)
		}
		for _, f := range []string{"hosts/h0/facts.json", "hosts/h1/logs/wl.after.exec.r0.stdout", "hosts/h0/logs/agent.log", "manifest.json"} {
			if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("failing expect exits 1", func(t *testing.T) {
		l := loadLab(t, base+`
workload "bulk" {
  tool   = "tcp"
  server = host.h1
  client = host.h2
  bytes  = "4MiB"
  expect {
    condition = result.tcp_gbps > 100000
    message   = "TCP below 100 Tb/s"
  }
}`)
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitFailed || !strings.Contains(res.Err.Error(), "TCP below 100 Tb/s") {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
	})

	t.Run("rxe without rdma_rxe exits 2", func(t *testing.T) {
		l := loadLab(t, base+`
rxe "a" {
  host   = host.h0
  netdev = "eth0"
}
rxe "b" {
  host   = host.h1
  netdev = "eth0"
}
workload "bw" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}`)
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitInfra || !strings.Contains(res.Err.Error(), "no rdma_rxe module") {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
	})

	t.Run("agent killed mid-workload", func(t *testing.T) {
		marker := fmt.Sprintf("netns-agentkill-%d", time.Now().UnixNano())
		l := loadLab(t, base+`
workload "long" {
  tool = "exec"
  host = host.h0
  command = ["sh", "-c", "sleep 300; :", "`+marker+`"]
}
workload "other" {
  tool = "exec"
  host = host.h1
  command = ["sh", "-c", "sleep 1; echo other done"]
}`)
		var dir string
		opts := Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run"), OnEvent: func(e Event) {
			if e.Type == "step.start" && e.Workload == "long" {
				go killAgentWhenRunning(t, dir, "h0", marker)
			}
		}}
		dir = opts.Out
		res := runPlanned(context.Background(), t, l, plan.Options{}, opts)
		if res.Code != ExitInfra {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "h1", "logs", "wl.other.exec.r0.stdout")); err != nil || string(b) != "other done\n" {
			t.Errorf("h1's artifacts: %q, %v", b, err)
		}
		// The killed agent could not stop its child: rlab down does.
		if _, err := Down(context.Background(), res.Dir, DownOptions{Connector: sshConnector(t)}); err != nil {
			t.Errorf("down: %v", err)
		}
		if waitGone(marker, 10*time.Second) {
			t.Error("the workload's process still runs after rlab down")
		}
		if _, err := Down(context.Background(), res.Dir, DownOptions{Connector: sshConnector(t)}); err != nil {
			t.Errorf("second down: %v", err)
		}
	})

	t.Run("sshd killed mid-workload", func(t *testing.T) {
		marker := fmt.Sprintf("netns-sshdkill-%d", time.Now().UnixNano())
		l := loadLab(t, base+`
workload "long" {
  tool = "exec"
  host = host.h2
  command = ["sh", "-c", "sleep 300; :", "`+marker+`"]
}
workload "other" {
  tool = "exec"
  host = host.h1
  command = ["sh", "-c", "sleep 1; echo other done"]
}`)
		h2 := bed.Host("h2")
		opts := Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run"), OnEvent: func(e Event) {
			if e.Type == "step.start" && e.Workload == "long" {
				go func() {
					waitRunning(marker, 30*time.Second)
					killNS(h2.NS, "sshd")
				}()
			}
		}}
		res := runPlanned(context.Background(), t, l, plan.Options{}, opts)
		bed.StartSSHD(t, h2)
		if res.Code != ExitInfra || !strings.Contains(res.Err.Error(), `"h2"`) {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "h1", "logs", "wl.other.exec.r0.stdout")); err != nil || string(b) != "other done\n" {
			t.Errorf("h1's artifacts: %q, %v", b, err)
		}
		if waitGone(marker, 10*time.Second) {
			t.Error("the workload's process outlived its lost agent: it must stop its children when its session ends")
		}
		// Whatever the lost agent managed to stop, rlab down (sshd back)
		// leaves nothing running, and twice is harmless.
		for range 2 {
			if _, err := Down(context.Background(), res.Dir, DownOptions{Connector: sshConnector(t)}); err != nil {
				t.Errorf("down: %v", err)
			}
		}
		if waitGone(marker, 10*time.Second) {
			out, _ := exec.Command("ps", "-eo", "pid,ppid,user,args").Output()
			t.Errorf("the workload's process survived rlab down:\n%s", out)
		}
	})

	t.Run("disk full on one host", func(t *testing.T) {
		h2 := bed.Host("h2")
		bed.FullDisk(t, h2, 512)
		// The agent must be uploaded for the disk to stop it: without
		// this, the root-owned copy an earlier become run installed
		// (SECURITY 176) starts with nothing uploaded, and preflight,
		// finding the disk full, stops the whole run before h1's
		// workload.
		for _, pf := range dist.Platforms {
			if _, sum, _, err := dist.Packed(pf[0], pf[1]); err == nil {
				os.RemoveAll(filepath.Dir(proto.SystemAgentPath(sum)))
			}
		}
		defer func() {
			os.Remove(filepath.Join(bed.Dir, h2.Name, "disk-kb"))
			bed.StartSSHD(t, h2)
		}()
		l := loadLab(t, base+`
workload "a" {
  tool = "exec"
  host = host.h1
  command = ["echo", "fine"]
}
workload "b" {
  tool = "exec"
  host = host.h2
  command = ["true"]
}`)
		res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
		if res.Code != ExitInfra || !strings.Contains(res.Err.Error(), `"h2"`) {
			t.Fatalf("code %d: %v", res.Code, res.Err)
		}
		t.Logf("disk full: %v", res.Err)
		r := readRun(t, res.Dir)
		if r.Status != results.RunError {
			t.Errorf("status %q", r.Status)
		}
		// The other host ran its workload and its artifacts are kept.
		if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "h1", "logs", "wl.a.exec.r0.stdout")); err != nil || string(b) != "fine\n" {
			t.Errorf("h1's artifacts: %q, %v", b, err)
		}
	})
}

// killAgentWhenRunning SIGKILLs the run's agent on a host once the marked
// workload process runs (its pid is in state.json).
func killAgentWhenRunning(t *testing.T, dir, host, marker string) {
	if !waitRunning(marker, 30*time.Second) {
		return
	}
	j, err := runstate.Open(dir)
	if err != nil {
		return
	}
	for _, h := range j.Snapshot().Hosts {
		if h.Name == host && h.AgentPID > 0 {
			syscall.Kill(h.AgentPID, syscall.SIGKILL)
		}
	}
}

func waitRunning(marker string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if len(pidsWith(marker)) > 0 {
			return true
		}
	}
	return false
}

// waitGone reports whether a marked process is still there after d.
func waitGone(marker string, d time.Duration) (still bool) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if len(pidsWith(marker)) == 0 {
			return false
		}
	}
	return true
}

func pidsWith(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killNS SIGKILLs every process named comm in a network namespace: the
// host's sshd and all its sessions die at once.
func killNS(ns, comm string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(b)) == comm {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

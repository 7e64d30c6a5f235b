package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// sshLab starts n in-process SSH servers running real shell commands and
// returns the HCL of hosts h0..h(n-1) reaching them with verified host keys.
func sshLab(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("lab \"cli\" {}\n")
	for i := range n {
		home := t.TempDir()
		s := sshtest.Start(t, sshtest.ShellHandler(home))
		s.SFTPDir = home
		kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
		h, p, _ := net.SplitHostPort(s.Addr)
		fmt.Fprintf(&b, "host \"h%d\" {\n  address = %q\n  port = %s\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\n", i, h, p, s.User, s.KeyFile, kh)
	}
	return b.String()
}

func writeLab(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lab.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunCmd(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	hosts := sshLab(t, 2)
	tests := []struct {
		name string
		src  string
		args []string
		code int
		out  []string // substrings of stdout; "row:F1 F2 ..." a line of the end table starting with these fields
		// notOut are what stdout must not hold, in the same forms.
		notOut []string
	}{
		{name: "ok", code: exitOK, src: `
workload "hi" {
  tool = "exec"
  host = host.h0
  command = ["echo", "hi"]
}
workload "bulk" {
  tool = "tcp"
  server = host.h0
  client = host.h1
  bytes = var.bytes
}
variable "bytes" {
  type = string
  default = "1MiB"
}`, args: []string{"-var", "bytes=3MiB"}, out: []string{"row:hi exec h0 ok exit 0;", "row:bulk tcp h1 → h0 ok", "hi stdout (hosts/h0/logs/", "\n  hi\n"}},
		{name: "failing expect", code: exitFail, src: `
workload "hi" {
  tool = "exec"
  host = host.h1
  command = ["true"]
  expect {
    condition = result.duration_s > 3600
    message   = "too fast"
  }
}`, out: []string{"row:hi exec h1 ok", "NOT HELD 0/1 held", "\nNOT HELD hi: expect result.duration_s > 3600 did not hold: too fast (got duration_s = "}},
		{name: "only", code: exitOK, src: `
workload "a" {
  tool = "exec"
  host = host.h0
  command = ["false"]
}
workload "b" {
  tool = "exec"
  host = host.h1
  command = ["true"]
}`, args: []string{"--only", "b"}, out: []string{"row:b exec h1 ok"}, notOut: []string{"row:a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeLab(t, hosts+tt.src)
			out := filepath.Join(t.TempDir(), "run")
			args := append(append([]string{"run", "--out", out}, tt.args...), p)
			stdout, stderr, code := rlab(t, args...)
			if os.Getenv("RLAB_SHOW_OUTPUT") != "" {
				t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if last := lines[len(lines)-1]; last != "run directory: "+out {
				t.Errorf("last line %q, want the run directory", last)
			}
			for _, want := range tt.out {
				if !hasOutput(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			for _, bad := range tt.notOut {
				if hasOutput(stdout, bad) {
					t.Errorf("stdout has %q:\n%s", bad, stdout)
				}
			}
			if _, err := results.ReadRun(out); err != nil {
				t.Error(err)
			}
			// down after a clean run has nothing to do, twice, and says so.
			for range 2 {
				o, e, c := rlab(t, "down", out)
				if c != exitOK || !strings.Contains(o, "thing(s) already undone (by the run itself or an earlier rlab down)\n") || strings.Contains("\n"+o, "\nundone ") || !strings.HasSuffix(o, "run "+out+" is down\n") {
					t.Errorf("down: exit %d\n%s%s", c, o, e)
				}
			}
		})
	}
}

// hasOutput finds want in out: a substring, or with "row:" a line whose
// first whitespace-separated fields are want's.
func hasOutput(out, want string) bool {
	row, ok := strings.CutPrefix(want, "row:")
	if !ok {
		return strings.Contains(out, want)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.Join(strings.Fields(l), " ")+" ", row+" ") {
			return true
		}
	}
	return false
}

func TestRunCmdInvalid(t *testing.T) {
	p := writeLab(t, `lab "x" {}
host "a" { address = "192.0.2.1" }
workload "w" {
  tool = "ib_write_bandwidth"
  host = host.a
}`)
	_, stderr, code := rlab(t, "run", p)
	if code != exitFail || !strings.Contains(stderr, "lab.hcl:") {
		t.Errorf("invalid lab: exit %d, stderr %s", code, stderr)
	}
	if _, stderr, code := rlab(t, "down", t.TempDir()); code != exitInfra || !strings.Contains(stderr, "state.json") {
		t.Errorf("down of a non-run dir: exit %d, %s", code, stderr)
	}
}

// TestRunCmdInterrupt sends SIGINT to a real rlab process during a workload:
// it tears down, keeps what it has, exits 130, and leaves nothing running.
// Needs the built binary (RLAB_BIN, set by make test-netns).
func TestRunCmdInterrupt(t *testing.T) {
	bin := os.Getenv("RLAB_BIN")
	if bin == "" {
		t.Skip("RLAB_BIN not set (make build; the Makefile's test targets set it)")
	}
	marker := fmt.Sprintf("rlab-sigint-%d", time.Now().UnixNano())
	p := writeLab(t, sshLab(t, 1)+`
workload "long" {
  tool = "exec"
  host = host.h0
  command = ["sh", "-c", "sleep 300; :", "`+marker+`"]
}`)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--out", out, p)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for !running(marker) {
		select {
		case err := <-exited:
			t.Fatalf("rlab ended (%v) before the workload ran\n%s%s", err, stdout.String(), stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("workload never started\n%s", stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want 130\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if running(marker) {
		t.Error("the workload's process survived the interrupt")
	}
	if !strings.HasSuffix(strings.TrimSpace(stdout.String()), "run directory: "+out) {
		t.Errorf("last line does not name the run directory:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Error(err)
	}
}

// running reports whether a process with marker in its command line runs.
func running(marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}

// TestRunCmdNetns runs `rlab run` and `rlab down` against real OpenSSH hosts
// (the netns bed), the lab's hosts taking their login from an ssh block.
func TestRunCmdNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Fatalf("agent not embedded (make agent): %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lab \"cli-netns\" {}\nssh {\n  user = %q\n  identity_file = %q\n  known_hosts = %q\n}\n", bed.User, bed.KeyFile, bed.KnownHosts)
	for _, h := range bed.Hosts {
		fmt.Fprintf(&b, "host %q { address = %q }\n", h.Name, h.Addr)
	}
	b.WriteString(`
workload "hello" {
  tool = "exec"
  host = host.h0
  command = ["hostname"]
}
workload "bulk" {
  tool = "tcp"
  server = host.h0
  client = host.h1
  bytes = "16MiB"
}
`)
	p := writeLab(t, b.String())
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := rlab(t, "run", "--out", out, p)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	r, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != results.RunOK || len(r.Samples) == 0 {
		t.Errorf("results: %s, %d samples", r.Status, len(r.Samples))
	}
	for range 2 {
		if o, e, c := rlab(t, "down", out); c != exitOK {
			t.Errorf("down: exit %d\n%s%s", c, o, e)
		}
	}
}

// TestVMProgressSaysAccelerator: a local VM's boot states (which name the
// accelerator, KVM or TCG) are printed whether or not stderr is a TTY.
func TestVMProgressSaysAccelerator(t *testing.T) {
	var b strings.Builder
	p := newProgress(&b, 1)
	p.vm("server", "booting (TCG software emulation (KVM unusable))")
	p.vm("server", "up in 41s")
	want := "vm server: booting (TCG software emulation (KVM unusable))\nvm server: up in 41s\n"
	if b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}

// TestDownEscapesRunDir: `rlab down` names the run directory it took down
// as every other command does, with a control character in its name
// escaped, never written raw to the terminal (issue 24 round 7, low).
func TestDownEscapesRunDir(t *testing.T) {
	p := writeLab(t, sshLab(t, 1)+`
workload "a" {
  tool = "exec"
  host = host.h0
  command = ["true"]
}`)
	out := filepath.Join(t.TempDir(), "run\x1b]0;owned\x07")
	if o, e, c := rlab(t, "run", "--out", out, p); c != exitOK {
		t.Fatalf("run: exit %d\n%s%s", c, o, e)
	}
	o, e, c := rlab(t, "down", out)
	if c != exitOK {
		t.Fatalf("down: exit %d\n%s%s", c, o, e)
	}
	if strings.ContainsAny(o, "\x1b\x07") {
		t.Errorf("down wrote a control character raw:\n%q", o)
	}
	if !strings.Contains(o, " is down\n") {
		t.Errorf("down did not say the run is down:\n%q", o)
	}
}

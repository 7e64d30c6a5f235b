package vm

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestE2EProvision boots two VMs of the minimal image (sshd and sudo, no
// RDMA tools) once, with `internet` (QEMU's user-mode NAT, lab attribute
// vm { internet = true }), and runs on them, as SSH hosts, what a user of
// stock hosts would:
//
//  1. rlab check lists every package the lab needs and the hosts lack, each
//     with the exact apt-get command, and exits 1;
//  2. with the client's package source broken (its sources.list points at a
//     port nothing listens on), rlab provision fails that host with its own
//     error (exit 2) while the server gets what it lacked from Debian's
//     registry through the NAT;
//  3. with the source fixed, rlab run --provision installs what the client
//     lacks (state.json and provision.log say what), and the real rxe
//     workloads pass with a RoCEv2 capture;
//  4. a second rlab provision installs nothing (no package manager call: no
//     provision.log, provision.json installs nothing);
//  5. the student check (rlab check --validate -json) of a one-student class
//     lab on the provisioned pair passes (exit 0, ready) and, with a latency
//     threshold no Soft-RoCE pair can meet, fails (exit 1) naming the
//     expect, what it wanted and what it read.
//
// The registry is the one this machine's apt uses (deb.debian.org, as the
// image's sources.list says); the guests get this machine's
// Acquire::Check-Valid-Until setting when it turns the check off (a
// registry mirror serving a snapshot).
func TestE2EProvision(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	im, err := image.Ensure(ctx, image.MinimalRecipe(""), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	ms := []Machine{
		{Name: "server", Slug: "server", Internet: true, BootTimeout: 10 * time.Minute, Networks: []Network{{Name: "rdma", Address: "10.97.0.1/24"}}},
		{Name: "client", Slug: "client", Internet: true, BootTimeout: 10 * time.Minute, Networks: []Network{{Name: "rdma", Address: "10.97.0.2/24"}}},
	}
	t0 := time.Now()
	set, err := Boot(ctx, ms, runDir, Options{Image: im, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 minimal VMs booted in %s (%s)", time.Since(t0).Round(time.Second), set.AccelNote)
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 2*time.Minute)
		defer c()
		if err := set.Shutdown(sctx); err != nil {
			t.Error(err)
		}
		for _, v := range set.VMs {
			if syscall.Kill(v.PID, 0) == nil {
				t.Errorf("qemu of %s (pid %d) still running", v.Name, v.PID)
			}
		}
	})
	var gs []*guest
	for _, v := range set.VMs {
		c, err := v.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		gs = append(gs, &guest{name: v.Name, c: c})
	}
	client := gs[1]
	// apt sized to the lab: every package it needs is in bookworm main, so
	// the index is main's alone, without translations (under TCG reading
	// the index is most of an install's time). The registry is the one the
	// image's sources.list names.
	conf := `Acquire::Languages "none";` + "\n" + validUntilOff()
	for _, g := range gs {
		g.must(t, ctx, "sh", "-c", `printf '%s\n' "$1" > /etc/apt/apt.conf.d/99rlab-e2e`, "sh", conf)
		src := g.must(t, ctx, "cat", "/etc/apt/sources.list")
		if !strings.Contains(src, "deb http://deb.debian.org/debian bookworm main") {
			t.Fatalf("%s: the image's sources.list names another registry:\n%s", g.name, src)
		}
		g.must(t, ctx, "sh", "-c", `echo "deb http://deb.debian.org/debian bookworm main" > /etc/apt/sources.list`)
	}

	dir := t.TempDir()
	direct := map[string]string{"server": set.VMs[0].Addr, "client": set.VMs[1].Addr}
	labFile := filepath.Join(dir, "provision.hcl")
	classFile := filepath.Join(dir, "class-check.hcl")
	for src, dst := range map[string]string{"provision.hcl": labFile, "class-check.hcl": classFile} {
		b, err := os.ReadFile(filepath.Join("testdata", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, retarget(t, b, direct, nil, "", set.VMs[0].IdentityFile, set.VMs[0].KnownHosts), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rlab := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		cmd := rlabCommand(ctx, t, rlabLimit, bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		t0 := time.Now()
		b, err := cmd.Output()
		t.Logf("rlab %s (%s):\n%s\n%s", strings.Join(args, " "), time.Since(t0).Round(100*time.Millisecond), b, stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(b), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), 0
	}

	// 1. What each host lacks, with the command that installs it: the
	// packages of the programs the run needs. Provisioning installs these
	// and iproute2 besides (the rdma tool, for rlab's fix hints), which a
	// run does not need (the agent makes rxe devices over netlink).
	t.Run("check lists the missing packages", func(t *testing.T) {
		out, code := rlab(t, "check", "-json", labFile)
		if code != 1 {
			t.Fatalf("rlab check: exit %d, want 1", code)
		}
		var r struct {
			Problems []struct{ Host, Code, What, Fix string }
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("check -json: %v", err)
		}
		got := map[string][]string{}
		for _, p := range r.Problems {
			if p.Code != "missing_tool" {
				t.Errorf("host %s: problem %s (%s: %s), want only missing tools", p.Host, p.Code, p.What, p.Fix)
				continue
			}
			got[p.Host] = append(got[p.Host], p.Fix)
		}
		for h, want := range map[string][]string{
			"server": {"apt-get install ibverbs-utils", "apt-get install perftest", "apt-get install tcpdump"},
			"client": {"apt-get install ibverbs-utils", "apt-get install perftest"},
		} {
			slices.Sort(got[h])
			if !slices.Equal(got[h], want) {
				t.Errorf("host %s: check says %q, want %q", h, got[h], want)
			}
		}
	})

	// 2. The client's package source is broken: it alone fails.
	client.must(t, ctx, "cp", "/etc/apt/sources.list", "/etc/apt/sources.list.rlab-e2e")
	client.must(t, ctx, "sh", "-c", `echo "deb http://10.0.2.2:9/debian bookworm main" > /etc/apt/sources.list`)
	t.Run("a broken package source fails its host only", func(t *testing.T) {
		out := filepath.Join(dir, "provision-1")
		stdout, code := rlab(t, "provision", "-json", "--out", out, labFile)
		if code != 2 {
			t.Errorf("rlab provision: exit %d, want 2", code)
		}
		rs := provisionResults(t, stdout)
		if s := rs["server"]; s.Error != "" || !slices.Equal(s.Installed, []string{"ibverbs-utils", "iproute2", "perftest", "tcpdump"}) || s.Manager != "apt-get" {
			t.Errorf("server: %+v, want ibverbs-utils iproute2 perftest tcpdump installed with apt-get", s)
		}
		c := rs["client"]
		if !strings.Contains(c.Error, `host "client"`) || !strings.Contains(c.Error, "10.0.2.2") ||
			!(strings.Contains(c.Error, "could not reach the repositories") || strings.Contains(c.Error, "repositories are unreachable")) {
			t.Errorf("client's error does not say its repositories are unreachable and which: %q", c.Error)
		}
		if len(c.Installed) != 0 {
			t.Errorf("client installed %v from a broken source", c.Installed)
		}
		log, err := os.ReadFile(filepath.Join(out, "hosts", "server", "logs", "provision.log"))
		if err != nil || !strings.Contains(string(log), "apt-get") || !strings.Contains(string(log), "perftest") {
			t.Errorf("server's provision.log: %v\n%s", err, log)
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "Fetched ") {
				t.Logf("server's provision.log: %s", line)
			}
		}
	})
	client.must(t, ctx, "mv", "/etc/apt/sources.list.rlab-e2e", "/etc/apt/sources.list")

	// 3. Fixed: the run installs what the client lacks, then runs on rxe.
	t.Run("run --provision", func(t *testing.T) {
		out := filepath.Join(dir, "run")
		if _, code := rlab(t, "run", "--provision", "--out", out, labFile); code != 0 {
			logHostLogs(t, out)
			t.Errorf("rlab run --provision: exit %d", code)
		}
		checkResults(t, out)
		checkRXETeardown(t, out)
		st := provisionState(t, out)
		if c := st["client"]; c == nil || !c.Done || !slices.Equal(c.Installed, []string{"ibverbs-utils", "iproute2", "perftest"}) || !slices.Equal(c.Packages, c.Installed) {
			t.Errorf("state.json: client's provisioning %+v, want ibverbs-utils iproute2 perftest installed", c)
		}
		// The server lacked nothing: journaled as such, with what it had.
		if s := st["server"]; s == nil || !s.Done || len(s.Packages) != 0 || len(s.Installed) != 0 ||
			!slices.Contains(s.Present, "ib_write_bw") || !slices.Contains(s.Present, "tcpdump") {
			t.Errorf("state.json: server's provisioning %+v, want nothing planned or installed, ib_write_bw and tcpdump present", s)
		}
		if log, err := os.ReadFile(filepath.Join(out, "hosts", "client", "logs", "provision.log")); err != nil || !strings.Contains(string(log), "perftest") {
			t.Errorf("client's provision.log: %v\n%s", err, log)
		}
		s := sumCaptures(t, out, "cap.roce")
		t.Logf("cap.roce: %d frames, opcodes %v", s.frames, s.ops)
		if s.count(opWrite) == 0 || s.count(opACK) == 0 {
			t.Errorf("the capture holds no RDMA WRITE or no ACK: %v", s.ops)
		}
	})

	// 4. Nothing left to install: no package manager runs.
	t.Run("a second provision installs nothing", func(t *testing.T) {
		out := filepath.Join(dir, "provision-2")
		stdout, code := rlab(t, "provision", "-json", "--out", out, labFile)
		if code != 0 {
			t.Errorf("rlab provision: exit %d, want 0", code)
		}
		rs := provisionResults(t, stdout)
		for _, h := range []string{"server", "client"} {
			if r, ok := rs[h]; !ok || r.Error != "" || len(r.Installed) != 0 || r.Manager != "" {
				t.Errorf("host %s: %+v, want nothing installed and no package manager", h, r)
			}
		}
		if logs, _ := filepath.Glob(filepath.Join(out, "hosts", "*", "logs", "provision.log")); len(logs) > 0 {
			t.Errorf("a package manager ran: %v", logs)
		}
		b, err := os.ReadFile(filepath.Join(out, "provision.json"))
		if err != nil || !strings.Contains(string(b), `"installed": []`) {
			t.Errorf("provision.json: %v\n%s", err, b)
		}
	})

	// 5. The student check on the provisioned pair (was TestE2EStudentCheck).
	type report struct {
		Pass     bool              `json:"pass"`
		Students []results.Student `json:"students"`
		RunDir   string            `json:"run_dir"`
	}
	for _, tc := range []struct {
		name     string
		vars     []string
		wantCode int
		status   string
	}{
		{"student check: pair works", nil, 0, results.StudentReady},
		{"student check: impossible latency threshold", []string{"-var", "max_write_lat_us=1"}, 1, results.StudentFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "check")
			args := append([]string{"check", "--validate", "-json", "--out", out}, tc.vars...)
			b, code := rlab(t, append(args, classFile)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d", code, tc.wantCode)
			}
			var r report
			if err := json.Unmarshal([]byte(b), &r); err != nil {
				t.Fatalf("check -json output: %v", err)
			}
			if r.Pass != (tc.wantCode == 0) || len(r.Students) != 1 || r.Students[0].Key != "ana" {
				t.Fatalf("report: %+v", r)
			}
			s := r.Students[0]
			if s.Status != tc.status {
				t.Errorf("student ana: status %q (%s), want %q", s.Status, s.Reason, tc.status)
			}
			checkRXETeardown(t, out)
			if tc.wantCode == 0 {
				if s.OK != 2 || len(s.FailedExpects) != 0 {
					t.Errorf("student ana: %d ok, failed expects %+v", s.OK, s.FailedExpects)
				}
				return
			}
			// Only the latency expect can fail: bandwidth kept its threshold.
			if len(s.FailedExpects) != 1 || s.FailedExpects[0].Workload != `write_lat["ana"]` {
				t.Fatalf("failed expects: %+v", s.FailedExpects)
			}
			if fe := s.FailedExpects[0]; !strings.Contains(fe.Condition, "lat_typical") || fe.Value == nil || !strings.Contains(*fe.Value, "lat_typical") {
				t.Errorf("failed expect does not say what it wanted and what it read: %+v", fe)
			}
		})
	}
}

// validUntilOff is the apt setting for the guests when this machine's apt
// turns off the Valid-Until check of Release files (a registry mirror that
// serves a snapshot), else "".
func validUntilOff() string {
	out, err := exec.Command("apt-config", "dump", "Acquire::Check-Valid-Until").Output()
	if err != nil || !strings.Contains(string(out), `Acquire::Check-Valid-Until "false"`) {
		return ""
	}
	return `Acquire::Check-Valid-Until "false";`
}

type provisionResult struct {
	Host      string   `json:"host"`
	Manager   string   `json:"manager"`
	Installed []string `json:"installed"`
	Error     string   `json:"error"`
}

// provisionResults reads `rlab provision -json` output: host → result.
func provisionResults(t *testing.T, stdout string) map[string]provisionResult {
	t.Helper()
	var rs []provisionResult
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("provision -json: %v", err)
	}
	m := map[string]provisionResult{}
	for _, r := range rs {
		m[r.Host] = r
	}
	return m
}

type provisionRecord struct {
	Packages  []string `json:"packages"`
	Installed []string `json:"installed"`
	Present   []string `json:"present"`
	Done      bool     `json:"done"`
}

// provisionState reads what state.json says the run installed, per host.
func provisionState(t *testing.T, runDir string) map[string]*provisionRecord {
	t.Helper()
	var st struct {
		Hosts []struct {
			Name      string           `json:"name"`
			Provision *provisionRecord `json:"provision"`
		} `json:"hosts"`
	}
	b, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	m := map[string]*provisionRecord{}
	for _, h := range st.Hosts {
		m[h.Name] = h.Provision
	}
	return m
}

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// classSSHLab is a class lab of three students, one host each, every host
// an in-process SSH server running real commands; student cho's expect
// cannot hold (a time budget of 0 s).
func classSSHLab(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("lab \"class-cli\" {}\nlocals {\n  students = {\n")
	for _, k := range []string{"ana", "bob", "cho"} {
		home := t.TempDir()
		s := sshtest.Start(t, sshtest.ShellHandler(home))
		s.SFTPDir = home
		kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
		h, p, _ := net.SplitHostPort(s.Addr)
		budget := 600
		if k == "cho" {
			budget = 0
		}
		fmt.Fprintf(&b, "    %s = { address = %q, port = %s, user = %q, key = %q, kh = %q, budget = %d }\n", k, h, p, s.User, s.KeyFile, kh, budget)
	}
	b.WriteString(`  }
}
host "vm" {
  for_each      = local.students
  address       = each.value.address
  port          = each.value.port
  user          = each.value.user
  identity_file = each.value.key
  known_hosts   = each.value.kh
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.vm[each.key]
  command  = ["echo", "hi"]
  expect {
    condition = result.duration_s < each.value.budget
    message   = "over the student's time budget"
  }
}
`)
	return writeLab(t, b.String())
}

func TestClassCmd(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	p := classSSHLab(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		out    []string // lines (trimmed) stdout must hold; "...": a prefix
		notOut []string
		stderr string
		hosts  []string // host folders of the run directory
	}{
		{name: "run", args: []string{"run"}, code: exitFail,
			out:   []string{"students: 2 of 3 ready", "ana      1      1 ok, 0 failed  ready", "bob      1      1 ok, 0 failed  ready"},
			hosts: []string{"vm.ana", "vm.bob", "vm.cho"}},
		{name: "run only key", args: []string{"run", "--only", "bob"}, code: exitOK,
			out: []string{"students: 1 of 1 ready", "bob      1      1 ok, 0 failed  ready"}, notOut: []string{"ana", "cho"},
			hosts: []string{"vm.bob"}},
		{name: "check validate fails", args: []string{"check", "--validate"}, code: exitFail,
			out:   []string{"students: 2 of 3 ready", `cho: workload "hello[\"cho\"]": wanted result.duration_s < each.value.budget: got duration_s = ...`},
			hosts: []string{"vm.ana", "vm.bob", "vm.cho"}},
		{name: "check validate passes", args: []string{"check", "--validate", "-only", "ana,bob"}, code: exitOK,
			out: []string{"students: 2 of 2 ready"}, hosts: []string{"vm.ana", "vm.bob"}},
		{name: "unknown", args: []string{"run", "--only", "hello,helo"}, code: exitFail,
			stderr: `--only "helo": lab "class-cli" has no workload, instance or student key of that name; did you mean "hello"? (workloads: hello; student keys: ana, bob, cho)`},
		{name: "key or workload", args: []string{"run", "--only", "ana,hello"}, code: exitFail, out: []string{"students: 2 of 3 ready"}},
		{name: "only needs validate", args: []string{"check", "--only", "ana"}, code: exitFail, stderr: "--only and --out need --validate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append(append(append([]string{}, tt.args...), "--out", out), p)
			stdout, stderr, code := rlab(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(stdout, "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, want := range tt.out {
				if p, ok := strings.CutSuffix(want, "..."); ok {
					if !strings.Contains(stdout, "\n  "+p) {
						t.Errorf("stdout lacks a line starting %q:\n%s", p, stdout)
					}
					continue
				}
				if !lines[want] {
					t.Errorf("stdout lacks the line %q:\n%s", want, stdout)
				}
			}
			for _, no := range tt.notOut {
				if strings.Contains(stdout, " "+no+" ") {
					t.Errorf("stdout mentions %q:\n%s", no, stdout)
				}
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr)
			}
			if tt.hosts == nil {
				return
			}
			ents, _ := os.ReadDir(filepath.Join(out, "hosts"))
			var hosts []string
			for _, e := range ents {
				hosts = append(hosts, e.Name())
			}
			if !slices.Equal(hosts, tt.hosts) {
				t.Errorf("hosts prepared %v, want %v", hosts, tt.hosts)
			}
			if _, err := os.Stat(filepath.Join(out, results.StudentsFile)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCheckValidateJSON(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	p := classSSHLab(t)
	stdout, stderr, code := rlab(t, "check", "--validate", "-json", "--only", "cho", "--out", filepath.Join(t.TempDir(), "c"), p)
	if code != exitFail {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var doc struct {
		Pass     bool              `json:"pass"`
		Students []results.Student `json:"students"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if doc.Pass || len(doc.Students) != 1 || doc.Students[0].Key != "cho" || len(doc.Students[0].FailedExpects) != 1 ||
		doc.Students[0].FailedExpects[0].Value == nil || !strings.HasPrefix(*doc.Students[0].FailedExpects[0].Value, "duration_s = ") ||
		!strings.HasPrefix(doc.Students[0].Reason, `expect on workload "hello[\"cho\"]": wanted result.duration_s < each.value.budget: got duration_s = `) {
		t.Errorf("check json = %s", stdout)
	}
}

func TestShowStudents(t *testing.T) {
	dir := t.TempDir()
	r := &results.Run{Lab: "class", ID: "x", Status: results.RunOK, Students: []results.Student{
		{Key: "ana", Hosts: []string{`vm["ana"]`}, Workloads: []string{`w["ana"]`}, OK: 1, Status: results.StudentReady},
	}}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := rlab(t, "show", "--students", dir)
	if code != exitOK || !strings.Contains(stdout, "students: 1 of 1 ready") || !strings.Contains(stdout, "  ana      1      1 ok, 0 failed  ready") {
		t.Errorf("show --students: exit %d\n%s%s", code, stdout, stderr)
	}
	plain := t.TempDir()
	if err := results.WriteRun(plain, &results.Run{Lab: "pair", ID: "y", Status: results.RunOK}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := rlab(t, "show", "--students", plain); code != exitFail || !strings.Contains(stderr, "not of a class lab") {
		t.Errorf("show --students of a plain run: exit %d, %s", code, stderr)
	}
}

// TestCheckValidatePlainLab: a lab without for_each keys is checked as a
// whole: "check: pass" and exit 0, "check: FAIL" and exit 1.
func TestCheckValidatePlainLab(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	hosts := sshLab(t, 1)
	for _, tt := range []struct {
		cond string
		code int
		line string
	}{
		{"result.exit_code == 0", exitOK, "check: pass"},
		{"result.exit_code == 1", exitFail, "check: FAIL"},
	} {
		p := writeLab(t, hosts+`
workload "hi" {
  tool    = "exec"
  host    = host.h0
  command = ["true"]
  expect {
    condition = `+tt.cond+`
  }
}
workload "not_checked" {
  tool    = "exec"
  host    = host.h0
  command = ["false"]
}
`)
		stdout, stderr, code := rlab(t, "check", "--validate", "--out", filepath.Join(t.TempDir(), "c"), p)
		if code != tt.code || !strings.Contains(stdout, "\n"+tt.line+"\n") || strings.Contains(stdout, "not_checked") {
			t.Errorf("%s: exit %d, want %d and %q (and only the workload with an expect)\n%s%s", tt.cond, code, tt.code, tt.line, stdout, stderr)
		}
	}
}

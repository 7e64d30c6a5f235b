package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/templates"
)

// rlab runs the CLI in-process and returns stdout, stderr and the exit code.
func rlab(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	flushOutputs()
	code := exitOK
	if err != nil {
		code = exitFail
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			errb.WriteString("Error: " + err.Error() + "\n")
		}
	}
	return out.String(), errb.String(), code
}

func TestValidateCmd(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // regexp
		stderr   string // regexp
		jsonDiag int    // -1: stdout is not JSON
	}{
		{"examples folder", []string{"validate", "../../labs"}, 0, `lab "class" is valid \(61 hosts, 60 rxe`, `^$`, -1},
		{"one file", []string{"validate", "../../labs/quickstart.hcl"}, 0, `quickstart.hcl: lab "quickstart" is valid`, `^$`, -1},
		{"folder lab with -var", []string{"validate", "-var", "server=10.0.0.1", "../../testdata/labs/folder"}, 0, `lab "folder" is valid`, `^$`, -1},
		{"folder lab missing var", []string{"validate", "../../testdata/labs/folder"}, 1, `^$`, `No value for required variable`, -1},
		{"errors", []string{"validate", "../../testdata/labs/errors/multiple_errors_at_once.hcl"}, 1, `^$`,
			`(?s)Error: Invalid value for port.*multiple_errors_at_once.hcl:20,13-14:\n  20:   port    = 0.*\n {18}\^\n.*3 error\(s\)`, -1},
		{"unit in expect", []string{"validate", "../../testdata/labs/errors/expect_units.hcl"}, 1, `^$`, // issue 25: checked by validate, not only run
			`(?s)Error: Invalid unit.*expect_units.hcl:26,38-47:.*gbps\(\) reads a bandwidth in .* Mb/s, .*Error: Unit does not match.*8 error\(s\)`, -1},
		{"json errors", []string{"validate", "-json", "../../testdata/labs/errors/multiple_errors_at_once.hcl"}, 1, `"valid": false`, `^$`, 3},
		{"json valid, double dash", []string{"validate", "--json", "../../labs/nightly.hcl"}, 0, `"valid": true`, `^$`, 0},
		{"json missing file", []string{"validate", "-json", "no/such.hcl"}, 1, `Cannot read lab`, `^$`, 1},
		{"bad -var", []string{"validate", "-var", "novalue", "../../labs/nightly.hcl"}, 1, `^$`, `want NAME=VALUE`, -1},
		{"unknown flag", []string{"validate", "-jsn", "../../labs/nightly.hcl"}, 1, `^$`, `unknown shorthand flag`, -1},
		{"help", []string{"validate", "--help"}, 0, `Exit status: 0 valid, 1 invalid`, `^$`, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := rlab(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			if !regexp.MustCompile(tt.stdout).MatchString(out) {
				t.Errorf("stdout does not match %q:\n%s", tt.stdout, out)
			}
			if !regexp.MustCompile(tt.stderr).MatchString(errOut) {
				t.Errorf("stderr does not match %q:\n%s", tt.stderr, errOut)
			}
			if tt.jsonDiag >= 0 {
				var r lab.JSONResult
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
				}
				if len(r.Diagnostics) != tt.jsonDiag || r.ErrorCount+r.WarningCount != tt.jsonDiag {
					t.Errorf("%d diagnostics, want %d", len(r.Diagnostics), tt.jsonDiag)
				}
			}
		})
	}
}

func TestPlanCmd(t *testing.T) {
	out, errOut, code := rlab(t, "plan", "../../labs/class.hcl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	hosts := regexp.MustCompile(`(?m)^host (server|client)\["\w+"\] \(10\.`).FindAllString(out, -1)
	if len(hosts) != 60 {
		t.Errorf("%d student hosts in the plan, want 60", len(hosts))
	}
	if !strings.Contains(out, "wave 1 (30 at once): write_bw[") {
		t.Errorf("plan does not show the 30 pairs running at once:\n%.2000s", out)
	}

	out, _, code = rlab(t, "plan", "-json", "../../labs/quickstart.hcl")
	var p struct {
		Lab   string
		Steps []struct {
			ID        string
			DependsOn []string `json:"depends_on"`
		}
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || code != 0 || p.Lab != "quickstart" || len(p.Steps) == 0 {
		t.Fatalf("plan -json: exit %d, %v, %+v", code, err, p)
	}

	_, errOut, code = rlab(t, "plan", "../../labs")
	// 14 example labs, each with its own lab block (written out, not
	// globbed from the folder under test; engine/lab TestUnitsOfPaths lists them).
	if code != 1 || !strings.Contains(errOut, "holds 14 labs (class-vms.hcl, class.hcl, cloud-bastion.hcl, ") {
		t.Errorf("plan of a folder of labs: exit %d, %s", code, errOut)
	}
	_, errOut, code = rlab(t, "plan", "../../testdata/labs/errors/ud_for_write.hcl")
	if code != 1 || !strings.Contains(errOut, "Unsupported transport") {
		t.Errorf("plan of an invalid lab: exit %d, %s", code, errOut)
	}
}

func TestFmtCmd(t *testing.T) {
	dir := t.TempDir()
	ugly := "lab \"x\" {\ndescription=\"d\"\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n    port=22\n}\n"
	pretty := "lab \"x\" {\n  description = \"d\"\n}\nhost \"a\" {\n  address = \"192.0.2.1\"\n  port    = 22\n}\n"
	f := filepath.Join(dir, "lab.hcl")
	if err := os.WriteFile(f, []byte(ugly), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := rlab(t, "fmt", "-check", "-diff", dir)
	if code != 1 || !strings.Contains(out, "-description=\"d\"\n+  description = \"d\"") || !strings.Contains(out, "@@ -1,") {
		t.Errorf("fmt -check -diff: exit %d:\n%s", code, out)
	}
	if b, _ := os.ReadFile(f); string(b) != ugly {
		t.Error("fmt -check changed the file")
	}
	out, _, code = rlab(t, "fmt", f)
	if b, _ := os.ReadFile(f); code != 0 || string(b) != pretty || !strings.Contains(out, "lab.hcl") {
		t.Errorf("fmt: exit %d, file now:\n%s", code, b)
	}
	if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
		t.Errorf("fmt changed the mode to %v", st.Mode())
	}
	out, _, code = rlab(t, "fmt", "-check", f)
	if code != 0 || out != "" {
		t.Errorf("fmt -check of a formatted file: exit %d, %q", code, out)
	}
	// The example labs are formatted.
	out, _, code = rlab(t, "fmt", "-check", "../../labs")
	if code != 0 {
		t.Errorf("labs/ is not formatted:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.hcl")
	os.WriteFile(bad, []byte("host \"a\" {\n"), 0o644)
	_, errOut, code := rlab(t, "fmt", bad)
	if b, _ := os.ReadFile(bad); code != 1 || string(b) != "host \"a\" {\n" || !strings.Contains(errOut, "Unclosed configuration block") {
		t.Errorf("fmt of a broken file: exit %d, %s", code, errOut)
	}
}

func TestInitCmd(t *testing.T) {
	for _, name := range templates.InitNames() {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			out, errOut, code := rlab(t, "init", "--template", name, dir)
			if code != 0 {
				t.Fatalf("init: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "wrote "+filepath.Join(dir, "lab.hcl")) {
				t.Errorf("init output: %s", out)
			}
			if _, errOut, code := rlab(t, "validate", dir); code != 0 {
				t.Errorf("the %s template does not validate: %s", name, errOut)
			}
			if _, _, code := rlab(t, "fmt", "-check", dir); code != 0 {
				t.Errorf("the %s template is not formatted", name)
			}
			_, errOut, code = rlab(t, "init", "--template", name, dir)
			if code != 1 || !strings.Contains(errOut, "never overwrites") {
				t.Errorf("second init: exit %d, %s", code, errOut)
			}
		})
	}
	_, errOut, code := rlab(t, "init", "--template", "nope", t.TempDir())
	if code != 1 || !strings.Contains(errOut, `no template "nope"`) {
		t.Errorf("unknown template: exit %d, %s", code, errOut)
	}
}

// TestValidateRedacts: a sensitive value in a diagnostic is never printed.
func TestValidateRedacts(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.hcl")
	src := "lab \"s\" {}\nvariable \"secret_host\" {\n  default   = \"root@hidden.example\"\n  sensitive = true\n}\nhost \"a\" {\n  address = var.secret_host\n}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", f}, {"validate", "-json", f}} {
		out, errOut, code := rlab(t, args...)
		if code != 1 || !strings.Contains(out+errOut, "Invalid address") {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		if strings.Contains(out+errOut, "hidden.example\"") || !strings.Contains(out+errOut, "(sensitive)") {
			t.Errorf("%v shows the sensitive value:\n%s%s", args, out, errOut)
		}
	}
}

// A host no workload uses is warned about by validate (a run would only
// connect to it), but not by facts and check, whose whole point it is.
func TestUnusedHostWarning(t *testing.T) {
	dir := t.TempDir()
	labFile := filepath.Join(dir, "inv.hcl")
	// Port 1 on localhost: refused at once, so facts and check end fast.
	src := "lab \"inv\" {}\nssh {\n  known_hosts = \"" + filepath.Join(dir, "known_hosts") + "\"\n}\nhost \"a\" {\n  address = \"127.0.0.1\"\n  port = 1\n}\n"
	if err := os.WriteFile(labFile, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"validate", labFile}, true},
		{[]string{"facts", labFile}, false},
		{[]string{"check", labFile}, false},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			stdout, stderr, code := rlab(t, tc.args...)
			if tc.args[0] != "validate" && (code != exitInfra || !strings.Contains(stdout+stderr, "127.0.0.1:1")) {
				t.Fatalf("rlab %s: exit %d, want 2 with the refused host named\n%s%s", tc.args[0], code, stdout, stderr)
			}
			if got := strings.Contains(stderr, lab.UnusedHostSummary); got != tc.warn {
				t.Errorf("rlab %s: warns %q = %v, want %v\n%s", strings.Join(tc.args, " "), lab.UnusedHostSummary, got, tc.warn, stderr)
			}
		})
	}
}

// TestOneLabCommandsOnAFolder: every command that acts on one lab says the
// same thing of a folder of labs (labs/ once gave `rlab run` 82 errors from
// merging its files, while `rlab plan` asked for one file), and takes a
// folder whose files together hold one lab.
func TestOneLabCommandsOnAFolder(t *testing.T) {
	for _, cmd := range []string{"plan", "run", "check", "facts", "graph"} {
		t.Run(cmd, func(t *testing.T) {
			_, errOut, code := rlab(t, cmd, "../../labs")
			if code != 1 || !strings.Contains(errOut, "Folder holds several labs") || !strings.Contains(errOut, "give one of its files, e.g. ../../labs/class-vms.hcl") {
				t.Errorf("%s of a folder of labs: exit %d, stderr:\n%s", cmd, code, errOut)
			}
			if n := strings.Count(errOut, "Error: "); n > 2 {
				t.Errorf("%s of a folder of labs: %d errors, want the one:\n%s", cmd, n, errOut)
			}
		})
	}
	for _, args := range [][]string{
		{"plan", "-var", "server=10.0.0.1", "../../testdata/labs/folder"},
		{"graph", "--var", "server=10.0.0.1", "../../testdata/labs/folder"},
	} {
		if out, errOut, code := rlab(t, args...); code != 0 || out == "" {
			t.Errorf("%v, a folder holding one lab: exit %d, stderr:\n%s", args, code, errOut)
		}
	}
}

// TestCheckLocalVMsNotUnreachable: rlab check on a lab of local VMs does not
// call them unreachable (exit 2): they exist only while rlab run runs. It
// says so per host and exits 0, and -json lists them apart.
func TestCheckLocalVMsNotUnreachable(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	out, errOut, code := rlab(t, "check", "../../labs/quickstart.hcl")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{`host "server": a local VM, not checked`, `host "client": a local VM, not checked`, "no SSH host to check: the lab's 2 hosts are local VMs"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "could not be reached") {
		t.Errorf("a local VM called unreachable:\n%s%s", out, errOut)
	}
	out, errOut, code = rlab(t, "check", "-json", "../../labs/quickstart.hcl")
	if code != exitOK {
		t.Fatalf("-json: exit %d\n%s%s", code, out, errOut)
	}
	var got struct {
		Unreachable []string `json:"unreachable"`
		LocalVMs    []string `json:"local_vms"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-json: %v\n%s", err, out)
	}
	if len(got.Unreachable) != 0 || strings.Join(got.LocalVMs, " ") != "server client" {
		t.Errorf("-json: unreachable %q, local_vms %q; want none and [server client]", got.Unreachable, got.LocalVMs)
	}
}

package sectest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// hclString quotes s as an HCL string literal (escapes, and $${ / %%{ so
// nothing is interpolated).
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	q := strings.ReplaceAll(b.String(), "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}

// TestNoShellAnywhere runs an exec workload whose argv and a -var are full
// of shell syntax, and a capture (real tcpdump, as root) whose filter has
// shell metacharacters and a newline, through `rlab run`'s engine over real
// SSH. No marker file appears (no shell ever saw them), the program gets
// every argument byte for byte, and tcpdump takes the filter as one
// argument after "--".
func TestNoShellAnywhere(t *testing.T) {
	marks := t.TempDir()
	mark := func(i int) string { return filepath.Join(marks, fmt.Sprintf("pwned-%d", i)) }
	evilVar := fmt.Sprintf("$(touch %s); `touch %s` && touch %s\n|| touch %s #", mark(1), mark(2), mark(3), mark(4))
	args := []string{
		fmt.Sprintf("$(touch %s)", mark(5)),
		fmt.Sprintf("`touch %s`", mark(6)),
		fmt.Sprintf("; touch %s", mark(7)),
		fmt.Sprintf("a' ; touch %s ; '", mark(8)),
		fmt.Sprintf("\"; touch %s; \"", mark(9)),
		fmt.Sprintf("x\ntouch %s", mark(10)),
		fmt.Sprintf("> %s", mark(11)),
		"${HOME} $HOME ~ * ? [a] {a,b} !! \\ \t end",
		"",
		"-n",
	}
	var argHCL []string
	for _, a := range args {
		argHCL = append(argHCL, hclString(a))
	}
	a := startHost(t, "a", nil)
	src := `lab "noshell" {}
variable "evil" {
  type = string
}
` + a.hcl() + `
workload "argv" {
  tool    = "exec"
  host    = host.a
  command = ["printf", "%s\\0", ` + strings.Join(argHCL, ", ") + `, var.evil]
}
`
	wantFilter := "udp port 4791\nor (tcp[13] & 2 != 0 and not port 1) or icmp[icmptype] != icmp-echo"
	capture := os.Geteuid() == 0
	realTcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		capture = false
	}
	argvFile := filepath.Join(t.TempDir(), "tcpdump.argv")
	if capture {
		// tcpdump in PATH is this test binary: it records its argv, then
		// becomes the real tcpdump (TestMain).
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bin := t.TempDir()
		if err := os.Symlink(self, filepath.Join(bin, "tcpdump")); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		t.Setenv("RLAB_SECTEST_TCPDUMP", realTcpdump)
		t.Setenv("RLAB_SECTEST_ARGV", argvFile)
		src += `
capture "c" {
  host    = host.a
  netdev  = "lo"
  filter  = ` + hclString(wantFilter) + `
  snaplen = 128
}
`
	} else {
		t.Log("not root or no tcpdump: the capture part is skipped")
	}
	l := writeLab(t, src, lab.LoadOptions{Vars: map[string]string{"evil": evilVar}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := runLab(ctx, t, l, run.Options{Connector: connector(t, sshx.Options{}), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != run.ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	for i := 1; i <= 11; i++ {
		if _, err := os.Stat(mark(i)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("marker %d exists: a shell ran a lab string (%v)", i, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "wl.argv.exec.r0.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(append(append([]string{}, args...), evilVar), "\x00") + "\x00"
	if string(got) != want {
		t.Errorf("argv as the program got it:\n%q\nwant\n%q", got, want)
	}
	if !capture {
		return
	}
	// The filter is tcpdump's last argument, whole, after "--".
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatalf("tcpdump's argv was not recorded: %v", err)
	}
	argv := strings.Split(string(b), "\x00")
	if n := len(argv); n < 3 || argv[n-1] != wantFilter || argv[n-2] != "--" {
		t.Errorf("tcpdump argv %q\nwant it to end with -- and the filter %q", argv, wantFilter)
	}
	if !slices.Contains(argv, "-Z") {
		t.Errorf("tcpdump argv %q has no -Z (drop privileges after opening the device)", argv)
	}
	if ents, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "a", "captures", "cap.c*.pcap*")); len(ents) == 0 {
		t.Errorf("no capture pulled: tcpdump did not accept the filter")
	}
}

// TestLabNames: names that reach the kernel (netdevs, RDMA devices) are
// checked by the kernel's rules when the lab loads, with a diagnostic
// naming the attribute; names the kernel takes pass, whatever a shell would
// make of them (they only ever travel as one argv element or netlink field).
func TestLabNames(t *testing.T) {
	tests := []struct {
		name      string
		netdev    string // rxe and capture netdev
		device    string // rxe name ("" default)
		wantError string // diagnostic summary; "" none
		gap       string
	}{
		{name: "plain", netdev: "eth1"},
		{name: "shell syntax is a valid kernel name", netdev: "$(id)"},
		{name: "semicolon", netdev: "e;reboot"},
		{name: "slash", netdev: "../../x", wantError: "Invalid netdev name"},
		{name: "colon", netdev: "eth0:1", wantError: "Invalid netdev name"},
		{name: "space", netdev: "eth 1", wantError: "Invalid netdev name"},
		{name: "newline", netdev: "eth1\nx", wantError: "Invalid netdev name"},
		{name: "tab", netdev: "eth1\t", wantError: "Invalid netdev name"},
		{name: "empty", netdev: "", wantError: "Invalid netdev name"},
		{name: "dot", netdev: ".", wantError: "Invalid netdev name"},
		{name: "dotdot", netdev: "..", wantError: "Invalid netdev name"},
		{name: "16 bytes", netdev: "abcdefghijklmnop", wantError: "Invalid netdev name"},
		{name: "NUL", netdev: "eth1\x00x", wantError: "Invalid netdev name"},
		{name: "16 bytes in 8 runes", netdev: "éééééééé", wantError: "Invalid netdev name"},
		{name: "device with shell syntax", netdev: "eth1", device: "rxe$(id)", wantError: "Invalid rxe device name"},
		{name: "device with slash", netdev: "eth1", device: "../rxe0", wantError: "Invalid rxe device name"},
		{name: "device with newline", netdev: "eth1", device: "rxe0\n", wantError: "Invalid rxe device name"},
		{name: "device 64 bytes", netdev: "eth1", device: strings.Repeat("r", 64), wantError: "Invalid rxe device name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gap != "" {
				knownGap(t, tc.gap)
			}
			src := `lab "names" {}
host "a" { address = "192.0.2.1" }
host "b" { address = "192.0.2.2" }
rxe "a" {
  host   = host.a
  netdev = ` + hclString(tc.netdev) + `
`
			if tc.device != "" {
				src += "  name = " + hclString(tc.device) + "\n"
			}
			src += `}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
`
			p := filepath.Join(t.TempDir(), "lab.hcl")
			os.WriteFile(p, []byte(src), 0o644)
			_, diags := lab.Load([]string{p}, lab.LoadOptions{})
			var sums []string
			for _, d := range diags {
				sums = append(sums, d.Summary)
			}
			if tc.wantError == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected diagnostics: %v", diags)
				}
				return
			}
			if !diags.HasErrors() || !strings.Contains(strings.Join(sums, "; "), tc.wantError) {
				t.Errorf("diagnostics %q, want %q", sums, tc.wantError)
			}
		})
	}
}

// TestAgentRefusesBadNames: the agent checks names again (defence in
// depth: a controller that skipped the lab's checks, or another client),
// before it touches the kernel or starts anything.
func TestAgentRefusesBadNames(t *testing.T) {
	h := startHost(t, "a", nil)
	ctx, c, inst := installedOn(t, h)
	a, err := remote.Start(ctx, c, inst, remote.StartOptions{Host: "a", RunID: "names"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tests := []struct {
		name   string
		method string
		params any
	}{
		{"capture netdev with NUL", proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "c1", Netdev: "lo\x00x"}},
		{"capture netdev 16 bytes", proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "c2", Netdev: "éééééééé"}},
		{"capture netdev slash", proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "c3", Netdev: "../lo"}},
		{"capture file traversal", proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "c4", Netdev: "lo", File: "../../x.pcap"}},
		{"capture handle traversal", proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "../c5", Netdev: "lo"}},
		{"rxe netdev newline", proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "rxe0", Netdev: "lo\nx"}},
		{"rxe name shell", proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "rxe$(id)", Netdev: "lo"}},
		{"proc handle traversal", proto.MethodProcStart, proto.ProcStartParams{Handle: "../../p", Argv: []string{"true"}}},
		{"proc argv with NUL", proto.MethodProcStart, proto.ProcStartParams{Handle: "p2", Argv: []string{"echo", "a\x00b"}}},
		{"proc env with NUL", proto.MethodProcStart, proto.ProcStartParams{Handle: "p3", Argv: []string{"true"}, Env: []string{"A=b\x00c"}}},
		{"capture filter with NUL", proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "c6", Netdev: "lo", Filter: "udp\x00; id"}},
		{"files.read absolute", proto.MethodFilesRead, proto.FilesReadParams{Path: "/etc/passwd", MaxBytes: 100}},
		{"files.read dotdot", proto.MethodFilesRead, proto.FilesReadParams{Path: "../../../../etc/passwd", MaxBytes: 100}},
		{"files.write absolute", proto.MethodFilesWrite, proto.FilesWriteParams{Path: "/etc/cron.d/x", Data: []byte("x")}},
		{"files.write dotdot", proto.MethodFilesWrite, proto.FilesWriteParams{Path: "../../../../tmp/x", Data: []byte("x")}},
		{"proc dir dotdot", proto.MethodProcStart, proto.ProcStartParams{Handle: "p4", Argv: []string{"true"}, Dir: "../.."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Call(ctx, tc.method, tc.params, nil)
			var pe *proto.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%s accepted (or failed oddly): %v", tc.method, err)
			}
			if pe.Code != proto.CodeBadRequest {
				t.Errorf("code %q (%s), want %q", pe.Code, pe.Message, proto.CodeBadRequest)
			}
		})
	}
}

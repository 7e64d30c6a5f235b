package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// shellQuote quotes one argv element for the remote login shell: the SSH
// protocol carries a command string, so each argument is single-quoted.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func commandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// guest is one VM reached over SSH in the end-to-end test.
type guest struct {
	name string
	c    *ssh.Client
}

// run runs argv (with a timeout) and returns stdout and stderr.
func (g *guest) run(ctx context.Context, timeout time.Duration, argv ...string) (string, string, error) {
	s, err := g.c.NewSession()
	if err != nil {
		return "", "", fmt.Errorf("%s: new session: %w", g.name, err)
	}
	defer s.Close()
	var o, e bytes.Buffer
	s.Stdout, s.Stderr = &o, &e
	full := append([]string{"timeout", "-k", "5", fmt.Sprintf("%.0f", timeout.Seconds())}, argv...)
	done := make(chan error, 1)
	go func() { done <- s.Run(commandLine(full)) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		err = ctx.Err()
	}
	if err != nil {
		return o.String(), e.String(), fmt.Errorf("%s: %s: %w: %s", g.name, commandLine(argv), err, strings.TrimSpace(e.String()))
	}
	return o.String(), e.String(), nil
}

func (g *guest) must(t *testing.T, ctx context.Context, argv ...string) string {
	t.Helper()
	out, _, err := g.run(ctx, 2*time.Minute, argv...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bg is a command running in the background on a guest.
type bg struct {
	s     *ssh.Session
	o, e  bytes.Buffer
	done  chan error
	argv  []string
	guest string
}

func (g *guest) start(timeout time.Duration, argv ...string) (*bg, error) {
	s, err := g.c.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%s: new session: %w", g.name, err)
	}
	b := &bg{s: s, done: make(chan error, 1), argv: argv, guest: g.name}
	s.Stdout, s.Stderr = &b.o, &b.e
	full := append([]string{"timeout", "-k", "5", fmt.Sprintf("%.0f", timeout.Seconds())}, argv...)
	if err := s.Start(commandLine(full)); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: start %s: %w", g.name, commandLine(argv), err)
	}
	go func() { b.done <- s.Wait() }()
	return b, nil
}

func (b *bg) wait(ctx context.Context) (string, string, error) {
	defer b.s.Close()
	var err error
	select {
	case err = <-b.done:
	case <-ctx.Done():
		_ = b.s.Signal(ssh.SIGKILL)
		err = ctx.Err()
	}
	if err != nil {
		err = fmt.Errorf("%s: %s: %w: %s", b.guest, commandLine(b.argv), err, strings.TrimSpace(b.e.String()))
	}
	return b.o.String(), b.e.String(), err
}

// waitUntil polls argv on g until its stdout contains want.
func (g *guest) waitUntil(ctx context.Context, d time.Duration, want string, argv ...string) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		out, _, _ := g.run(ctx, 20*time.Second, argv...)
		if strings.Contains(out, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: %q never showed %q", g.name, commandLine(argv), want)
}

// whyNotOurs says which of isOurQEMU's checks a recorded VM fails.
func whyNotOurs(st VMState) string {
	t, err := procStartTime(st.PID)
	if err != nil {
		return "no such process: " + err.Error()
	}
	if t != st.StartTime {
		return fmt.Sprintf("start time %d, recorded %d", t, st.StartTime)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.PID))
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("command line %q does not name qemu-system and pid file %s", strings.ReplaceAll(string(b), "\x00", " "), st.PIDFile)
}

// keepOnFailure keeps a failed test's run directory where CI's next reader
// finds it: CI runs on a clean clone whose temporary directories are gone
// when its log is read, and a VM failure under load is seldom reproduced.
// The copy goes to $RLAB_VM_KEEP (default /var/tmp/rlab-vm-failed), named
// by the test and the time, and the test's log says where.
func keepOnFailure(t *testing.T, out string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if _, err := os.Stat(out); err != nil {
			return
		}
		root := os.Getenv("RLAB_VM_KEEP")
		if root == "" {
			root = "/var/tmp/rlab-vm-failed"
		}
		name := strings.Map(func(r rune) rune {
			if r == '/' || r == ' ' {
				return '_'
			}
			return r
		}, t.Name())
		dst := filepath.Join(root, name+"-"+time.Now().UTC().Format("20060102T150405"))
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Logf("keep the failed run: %v", err)
			return
		}
		if b, err := exec.Command("cp", "-a", out, dst).CombinedOutput(); err != nil {
			t.Logf("keep the failed run: cp: %v: %s", err, b)
			return
		}
		t.Logf("the failed run's directory is kept in %s", dst)
	})
}

// rlabLimit bounds one rlab command of a VM test: the longest seen in make
// test-vm is about 4 minutes (a lab of several workloads under TCG).
const rlabLimit = 10 * time.Minute

// rlabCommand is exec.CommandContext for the rlab binary, bounded by limit
// as well as ctx. A command past its end gets SIGQUIT first, so the Go
// runtime prints every goroutine of the rlab that hung into its output,
// which the test logs; SIGKILL follows 30 s later. A hang of rlab itself
// then fails its test with the stack that shows where, instead of running
// into go test's -timeout for the whole package (stop 35: a VM test hung
// 22 minutes and the log held only the test binary's own goroutines).
func rlabCommand(ctx context.Context, t *testing.T, limit time.Duration, bin string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error {
		if ctx.Err() == context.DeadlineExceeded {
			t.Logf("rlab %s: still running after %s: SIGQUIT for its goroutines", strings.Join(args, " "), limit)
		}
		return cmd.Process.Signal(syscall.SIGQUIT)
	}
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// TestRlabCommandQuitsAHang: a command past rlabCommand's limit is sent
// SIGQUIT, so a Go program's output ends with its goroutines (where it
// hung), and it is gone well before ctx's own end. The hanging program is
// this test binary itself, run as TestRlabCommandHangs; ctx alone would
// end it only after 5 minutes, with SIGQUIT too, but no log line.
func TestRlabCommandQuitsAHang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := rlabCommand(ctx, t, 2*time.Second, os.Args[0], "-test.run=^TestRlabCommandHangs$")
	cmd.Env = append(os.Environ(), "RLAB_TEST_HANG=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a hanging command ended well: %s", out)
	}
	for _, want := range []string{"SIGQUIT", "goroutine ", "TestRlabCommandHangs"} { // the runtime's dump
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRlabCommandHangs hangs when TestRlabCommandQuitsAHang runs it.
func TestRlabCommandHangs(t *testing.T) {
	if os.Getenv("RLAB_TEST_HANG") != "1" {
		t.Skip("run by TestRlabCommandQuitsAHang")
	}
	select {}
}

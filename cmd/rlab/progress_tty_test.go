package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/dist"
)

// openPTY opens a pseudo-terminal pair: the terminal side, which rlab
// writes its progress to as it would to a user's terminal, and the master
// side, which reads what the terminal would show.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestRunProgressOnTerminal: rlab run on a terminal (a real pseudo-terminal,
// hosts reached over SSH) draws the bar with the running workload and the
// size × repeat under way, the elapsed time and the count, prints a line at
// once for a failing workload, and ends with the headline table on stdout.
func TestRunProgressOnTerminal(t *testing.T) {
	if _, err := dist.Binary("linux", "amd64"); err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	master, tty := openPTY(t)
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&screen, master); close(done) }()
	p := writeLab(t, sshLab(t, 2)+`
workload "bulk" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "8MiB"
  repeat = 2
}
workload "broken" {
  tool    = "exec"
  host    = host.h0
  command = ["false"]
}
`)
	out := filepath.Join(t.TempDir(), "run")
	root := newRootCmd()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(tty)
	root.SetArgs([]string{"run", "--out", out, p})
	root.Execute()
	tty.Close()
	<-done
	s := screen.String()
	for _, w := range []string{"bulk: repeat 1 (1/2)", "bulk: repeat 2 (2/2)", "/2)", "[", "FAILED broken after"} {
		if !strings.Contains(s, w) {
			t.Errorf("the terminal did not show %q:\n%q", w, s)
		}
	}
	if !hasOutput(stdout.String(), "row:bulk tcp h1 → h0 ok") || !hasOutput(stdout.String(), "row:broken exec h0 FAILED") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

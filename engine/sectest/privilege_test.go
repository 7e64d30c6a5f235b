package sectest

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/agent/server"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// dialAgent speaks the protocol to an agent over its stdin/stdout with the
// controller's own client (agent/rpc), as engine/remote does over SSH.
func dialAgent(t *testing.T, w io.WriteCloser, r io.Reader) *rpc.Client {
	t.Helper()
	c, h, err := rpc.Dial(r, w, rpc.Options{Host: "local"})
	if err != nil || h.Magic != proto.Magic {
		t.Fatalf("hello %+v: %v", h, err)
	}
	return c
}

// socketInodes returns the inodes of the sockets pid has open.
func socketInodes(t *testing.T, pid int) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			m[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return m
}

// listening returns the inodes of listening TCP sockets, bound UDP sockets
// and listening unix sockets in pid's network namespace.
func listening(t *testing.T, pid int) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, f := range []string{"tcp", "tcp6", "udp", "udp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 {
				continue
			}
			// st 0A is LISTEN; a UDP socket in st 07 (CLOSE) is bound and
			// receiving.
			if (strings.HasPrefix(f, "tcp") && fs[3] == "0A") || (strings.HasPrefix(f, "udp") && fs[3] == "07") {
				m[fs[9]] = f + " " + fs[1]
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// Flags 00010000 is __SO_ACCEPTCON: a listening unix socket.
			if len(fs) >= 7 && fs[3] == "00010000" {
				m[fs[6]] = "unix " + strings.Join(fs[7:], " ")
			}
		}
	}
	return m
}

// TestAgentListensNowhere starts the real agent binary (as shipped, from
// agent/dist) and has it gather facts and run a process: at no point does
// the agent hold a listening socket of its own.
func TestAgentListensNowhere(t *testing.T) {
	bin, err := dist.Binary("linux", "amd64")
	if err != nil {
		t.Skipf("agent not embedded (make agent): %v", err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "rlab-agent")
	if err := os.WriteFile(exe, bin, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "--run-id", "listen-check", "--work-dir", filepath.Join(dir, "work"))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	c := dialAgent(t, in, out)
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		mine := socketInodes(t, cmd.Process.Pid)
		for ino, what := range listening(t, cmd.Process.Pid) {
			if mine[ino] {
				t.Errorf("%s: the agent holds a listening socket: %s", when, what)
			}
		}
	}
	check("after the hello")
	if _, err := rpc.Call(ctx, c, rpc.Facts, proto.FactsParams{}); err != nil {
		t.Fatal(err)
	}
	check("after facts")
	if _, err := rpc.Call(ctx, c, rpc.ProcStart, proto.ProcStartParams{Handle: "p", Argv: []string{"sleep", "30"}}); err != nil {
		t.Fatal(err)
	}
	check("with a process running")
}

// TestWorkDirPrivate: everything the agent writes on a host is in a
// per-user folder only that user can read (0700 folders, 0600 files), and
// so is the cached agent binary.
func TestWorkDirPrivate(t *testing.T) {
	a := startHost(t, "a", nil)
	l := writeLab(t, `lab "modes" {}
`+a.hcl()+`
workload "out" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "x"]
}
`, lab.LoadOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Keep the agent's files: look at them before the agent cleans up by
	// reading the work dir the agent reported, which the run leaves with
	// Keep (else it is removed once pulled).
	res := runLab(ctx, t, l, run.Options{Connector: connector(t, sshx.Options{}), Out: filepath.Join(t.TempDir(), "run"), Keep: true})
	if res.Code != run.ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	cache := filepath.Join(a.home, remote.CacheDir)
	for _, root := range []string{a.agentWorkDir(), cache} {
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n++
			perm := fi.Mode().Perm()
			switch {
			case d.IsDir() && perm != 0o700:
				t.Errorf("%s: folder mode %o, want 700", p, perm)
			case !d.IsDir() && perm&0o077 != 0:
				t.Errorf("%s: file mode %o, want 600 (700 for the agent binary)", p, perm)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 2 {
			t.Errorf("%s: %d entries, want the agent's files", root, n)
		}
	}
}

// TestBecomeOnlyWhereNeeded: with become, the agent runs as root for a
// user (--owner) so it can create rxe devices and start tcpdump; the
// workloads it starts should run as that user, not as root.
func TestBecomeOnlyWhereNeeded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the agent must run as root for a user")
	}
	// The work dir's parents must let the owner in, as a home does.
	base := t.TempDir()
	os.Chmod(base, 0o755)
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chown(base, 65534, 65534) // the owner's home: the agent makes its work dir only in the owner's folders
	wd := filepath.Join(base, "work")
	srv, err := server.New(server.Options{WorkDir: wd, Hash: "h", Owner: &server.Owner{UID: 65534, GID: 65534}})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { srv.Serve(context.Background(), inR, outW); outW.Close() }()
	defer inW.Close()
	c := dialAgent(t, inW, outR)
	ctx := context.Background()
	if _, err := rpc.Call(ctx, c, rpc.ProcStart, proto.ProcStartParams{Handle: "whoami", Argv: []string{"id", "-u"}}); err != nil {
		t.Fatal(err)
	}
	r, err := rpc.Call(ctx, c, rpc.ProcWait, proto.ProcWaitParams{Handle: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	if uid, _ := strconv.Atoi(strings.TrimSpace(r.Stdout)); uid != 65534 {
		t.Errorf("a workload of a become host ran as uid %q, want the owner 65534", strings.TrimSpace(r.Stdout))
	}
}

// TestAgentRefusesForeignWorkDir: an agent running as root for a user
// (become, --owner) must not take over a folder the user does not own: a
// sudoers rule for the agent would otherwise let the user chown any folder
// (/etc) to themselves.
func TestAgentRefusesForeignWorkDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the agent must run as root for a user")
	}
	base := t.TempDir()
	foreign := filepath.Join(base, "root-owned")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{foreign, filepath.Join(base, "user", "..", "root-owned")} {
		os.Chown(foreign, 0, 0)
		os.Chmod(foreign, 0o755)
		// New creates (and hands over) the work dir.
		server.New(server.Options{WorkDir: wd, Hash: "h", Owner: &server.Owner{UID: 65534, GID: 65534}})
		fi, serr := os.Stat(foreign)
		if serr != nil {
			t.Fatal(serr)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 0 || fi.Mode().Perm() != 0o755 {
			t.Errorf("work dir %s: the agent made root's folder uid %d mode %o", wd, st.Uid, fi.Mode().Perm())
		}
	}
}

package sshx

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// TestMain doubles as the mux daemon: Dial starts "<test binary>
// mux-serve --dir D --persist P" (Options.MuxCommand), as rlab starts
// "rlab mux serve".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "mux-serve" {
		fs := flag.NewFlagSet("mux-serve", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		persist := fs.Duration("persist", time.Minute, "")
		fs.Parse(os.Args[2:])
		if err := ServeMux(context.Background(), MuxServeOptions{Dir: *dir, Persist: *persist}); err != nil {
			fmt.Fprintln(os.Stderr, "mux-serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// muxDir is a private folder short enough for a unix socket path.
func muxDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "mux")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// startMux runs the daemon in this process until the test ends; done is
// closed when it has returned, with its error in *serveErr.
func startMux(t *testing.T, o MuxServeOptions) (done <-chan struct{}, serveErr *error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o.ready = make(chan struct{})
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ch := make(chan struct{})
	var err error
	go func() {
		err = ServeMux(ctx, o)
		close(ch)
	}()
	select {
	case <-o.ready:
	case <-ch:
		t.Fatalf("mux: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Error("mux daemon did not stop")
		}
	})
	return ch, &err
}

// muxDialer dials through the mux in dir; a daemon it has to start is
// this test binary (TestMain).
func muxDialer(t *testing.T, dir string, o Options) *Dialer {
	t.Helper()
	o.Persist = time.Minute
	o.MuxDir = dir
	o.MuxCommand = []string{os.Args[0], "mux-serve"}
	return newDialer(t, o)
}

// stopSpawned stops a daemon a test started through Dial.
func stopSpawned(t *testing.T, dir string) {
	t.Cleanup(func() {
		if err := StopMux(context.Background(), dir); err != nil && !errors.Is(err, ErrNoMux) {
			t.Errorf("stop mux: %v", err)
		}
	})
}

func TestMuxSessions(t *testing.T) {
	home := t.TempDir()
	s := sshtest.Start(t, sshtest.ShellHandler(home))
	s.SFTPDir = home
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	dir := muxDir(t)
	startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
	d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})

	c, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Addr != s.Addr || c.User != s.User || !bytes.Equal(c.HostKey.Marshal(), s.HostKey.PublicKey().Marshal()) {
		t.Errorf("client says %s@%s key %v, want %s@%s and the server's key", c.User, c.Addr, c.HostKey, s.User, s.Addr)
	}

	tests := []struct {
		name                string
		cmd, stdin          string
		wantOut, wantStderr string
		wantCode            int
	}{
		{"stdout", "echo hello", "", "hello\n", "", 0},
		{"stdin to stdout, EOF passed on", "tr a-z A-Z", "relay me\n", "RELAY ME\n", "", 0},
		{"stderr apart", "echo out; echo err >&2", "", "out\n", "err\n", 0},
		{"exit status", "echo x; exit 7", "", "x\n", "", 7},
		{"big output", "head -c 3000000 /dev/zero | tr '\\0' a", "", strings.Repeat("a", 3000000), "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := c.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			var out, errb bytes.Buffer
			sess.Stdout, sess.Stderr = &out, &errb
			sess.Stdin = strings.NewReader(tc.stdin)
			err = sess.Run(tc.cmd)
			code := 0
			var ee *ssh.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitStatus()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || out.String() != tc.wantOut || errb.String() != tc.wantStderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, trunc(out.String()), errb.String(), tc.wantCode, trunc(tc.wantOut), tc.wantStderr)
			}
		})
	}

	t.Run("sftp", func(t *testing.T) {
		sc, err := sftp.NewClient(c.Client, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		f, err := sc.Create("up.bin")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(home, "up.bin"))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("uploaded file: %d bytes, err %v; want %d bytes", len(got), err, len(data))
		}
		r, err := sc.Open("up.bin")
		if err != nil {
			t.Fatal(err)
		}
		var back bytes.Buffer
		if _, err := io.Copy(&back, r); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if !bytes.Equal(back.Bytes(), data) {
			t.Errorf("downloaded %d bytes, not what was uploaded", back.Len())
		}
	})

	// A second caller (another rlab run) gets the same upstream login.
	d2 := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
	c2, err := d2.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if out := run(t, c2, "echo again"); out != "again\n" {
		t.Errorf("second caller: %q", out)
	}
	c2.Close()
	d2.Close() // its process ends: one caller left
	if n := s.Conns.Load(); n != 1 {
		t.Errorf("server saw %d logins, want 1 (the second caller should reuse the first)", n)
	}
	// The mux sees the second caller leave when its connection's close
	// reaches it: asked at once, it may still count two (seen once in a
	// full go test ./...). Ask again for up to 5 s.
	var st *MuxStatus
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if st, err = QueryMux(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		if st.Clients == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(st.Upstream) != 1 || st.Upstream[0].Addr != s.Addr || st.PID != os.Getpid() || st.Clients != 1 || st.Upstream[0].Users != 1 {
		t.Errorf("status: %+v", st)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// Many rlab processes starting at once with no daemon: one daemon is
// started (the spawn lock), every caller is served, one upstream login.
func TestMuxSpawnConcurrent(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	dir := muxDir(t)
	stopSpawned(t, dir)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Each its own Dialer, as separate rlab processes have.
			d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
			c, err := d.Dial(context.Background(), target(s, s.KeyFile))
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			sess, err := c.NewSession()
			if err != nil {
				errs[i] = fmt.Errorf("new session: %w", err)
				return
			}
			defer sess.Close()
			out, err := sess.Output(fmt.Sprint("n", i))
			if err != nil {
				err = fmt.Errorf("output: %w", err)
			}
			if err == nil && string(out) != fmt.Sprint("ran: n", i) {
				err = fmt.Errorf("got %q", out)
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	st, err := QueryMux(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID == os.Getpid() || len(st.Upstream) != 1 {
		t.Errorf("status: %+v, want one upstream in a daemon process of its own", st)
	}
	if n := s.Conns.Load(); n != 1 {
		t.Errorf("server saw %d logins, want 1", n)
	}
	if err := StopMux(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	// The daemon is gone: its socket removed, status says so.
	waitFor(t, "the daemon to exit", func() bool {
		_, err := QueryMux(context.Background(), dir)
		return errors.Is(err, ErrNoMux)
	})
	if _, err := os.Stat(filepath.Join(dir, muxSock)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still there after stop: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An upstream that dies (link dropped) ends the callers' connections, and
// the next dial logs in again.
func TestMuxUpstreamDeathRedial(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	dir := muxDir(t)
	startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
	d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
	c, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "one")
	s.DropConns()
	select {
	case <-c.Gone():
	case <-time.After(time.Minute):
		t.Fatal("caller's connection still open a minute after the upstream died")
	}
	c2, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatalf("redial after upstream death: %v", err)
	}
	defer c2.Close()
	if out := run(t, c2, "two"); out != "ran: two" {
		t.Errorf("after redial: %q", out)
	}
	if n := s.Conns.Load(); n != 2 {
		t.Errorf("server saw %d logins, want 2", n)
	}
}

// A kept connection is checked against known_hosts again on every reuse:
// a key changed, revoked or removed since fails as a new login would, with
// the same error types.
func TestMuxRecheckHostKey(t *testing.T) {
	other := sshtest.NewKey(t)
	tests := []struct {
		name      string
		lines     func(s *sshtest.Server) []string
		acceptNew bool
		wantType  any
		wantErr   string
	}{
		{"still known", func(s *sshtest.Server) []string { return []string{s.KnownHostsLine()} }, false, nil, ""},
		{"changed", func(s *sshtest.Server) []string {
			return []string{knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, other.PublicKey())}
		}, false, &ChangedHostKeyError{}, "HOST KEY CHANGED"},
		{"revoked", func(s *sshtest.Server) []string {
			return []string{s.KnownHostsLine(), "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKey.PublicKey())))}
		}, false, &RevokedHostKeyError{}, "@revoked"},
		{"removed", func(s *sshtest.Server) []string { return nil }, false, &UnknownHostKeyError{}, "unknown host key"},
		{"removed, accept-new records it again", func(s *sshtest.Server) []string { return nil }, true, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sshtest.Start(t, echoHandler)
			kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
			dir := muxDir(t)
			startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
			c, err := muxDialer(t, dir, Options{KnownHosts: []string{kh}}).Dial(context.Background(), target(s, s.KeyFile))
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			// known_hosts edited between two runs (same size possible:
			// the mtime and inode change with a rename).
			tmp := kh + ".new"
			os.WriteFile(tmp, []byte(strings.Join(tc.lines(s), "\n")+"\n"), 0o600)
			if err := os.Rename(tmp, kh); err != nil {
				t.Fatal(err)
			}
			c, err = muxDialer(t, dir, Options{KnownHosts: []string{kh}, AcceptNewHostKeys: tc.acceptNew}).Dial(context.Background(), target(s, s.KeyFile))
			if tc.wantType == nil {
				if err != nil {
					t.Fatalf("reuse: %v", err)
				}
				c.Close()
				if n := s.Conns.Load(); n != 1 {
					t.Errorf("server saw %d logins, want 1 (reused)", n)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("reuse of a connection whose host key is no longer trusted succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "connect to "+s.User+"@"+s.Addr) {
				t.Errorf("error %q lacks %q", err, tc.wantErr)
			}
			if !errorsAsType(err, tc.wantType) {
				t.Errorf("error %T (%v) is not a %T", err, err, tc.wantType)
			}
			// The untrusted connection is gone: the status lists none.
			if st, err := QueryMux(context.Background(), dir); err != nil || len(st.Upstream) != 0 {
				t.Errorf("status after refusal: %+v, %v", st, err)
			}
		})
	}
}

func errorsAsType(err error, want any) bool {
	switch want.(type) {
	case *ChangedHostKeyError:
		var e *ChangedHostKeyError
		return errors.As(err, &e)
	case *RevokedHostKeyError:
		var e *RevokedHostKeyError
		return errors.As(err, &e)
	case *UnknownHostKeyError:
		var e *UnknownHostKeyError
		return errors.As(err, &e)
	}
	return false
}

// Dial errors read exactly as without the mux, and keep their types.
func TestMuxErrorsAsDirect(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	closed := closedPort(t)
	tests := []struct {
		name     string
		kh       string
		tg       func() Target
		wantType any
	}{
		{"unknown host", sshtest.WriteKnownHosts(t), func() Target { return target(s, s.KeyFile) }, &UnknownHostKeyError{}},
		{"changed host", sshtest.WriteKnownHosts(t, knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, sshtest.NewKey(t).PublicKey())), func() Target { return target(s, s.KeyFile) }, &ChangedHostKeyError{}},
		{"wrong user", sshtest.WriteKnownHosts(t, s.KnownHostsLine()), func() Target { tg := target(s, s.KeyFile); tg.User = "mallory"; return tg }, nil},
		{"port closed", sshtest.WriteKnownHosts(t, s.KnownHostsLine()), func() Target { tg := target(s, s.KeyFile); tg.Port = closed; return tg }, nil},
	}
	dir := muxDir(t)
	startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := tc.tg()
			_, direct := newDialer(t, Options{KnownHosts: []string{tc.kh}, Retries: -1}).Dial(context.Background(), tg)
			_, viaMux := muxDialer(t, dir, Options{KnownHosts: []string{tc.kh}, Retries: -1}).Dial(context.Background(), tg)
			if direct == nil || viaMux == nil {
				t.Fatalf("want errors, got direct %v, mux %v", direct, viaMux)
			}
			if direct.Error() != viaMux.Error() {
				t.Errorf("through the mux the error reads\n%s\nwithout it\n%s", viaMux, direct)
			}
			if tc.wantType != nil && !errorsAsType(viaMux, tc.wantType) {
				t.Errorf("through the mux the error is not a %T", tc.wantType)
			}
		})
	}
}

func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

// The folder holding the socket, key and token must be the user's own,
// private and not a symlink; both the caller and the daemon refuse others.
func TestMuxDirRefused(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) string
		wantErr string
	}{
		{"group and world readable", func(t *testing.T) string {
			d := muxDir(t)
			os.Chmod(d, 0o755)
			return d
		}, "has mode 0755"},
		{"group writable", func(t *testing.T) string {
			d := muxDir(t)
			os.Chmod(d, 0o770)
			return d
		}, "has mode 0770"},
		{"symlink to a private folder", func(t *testing.T) string {
			real := muxDir(t)
			link := filepath.Join(muxDir(t), "link")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "is a symlink"},
		{"not a folder", func(t *testing.T) string {
			p := filepath.Join(muxDir(t), "file")
			os.WriteFile(p, nil, 0o600)
			return p
		}, "not a directory"},
		{"another user's", func(t *testing.T) string {
			if os.Getuid() != 0 {
				t.Skip("needs root to make a folder someone else owns")
			}
			d := muxDir(t)
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return d
		}, "is owned by uid 65534"},
	}
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			_, err := muxDialer(t, dir, Options{KnownHosts: []string{kh}}).Dial(context.Background(), target(s, s.KeyFile))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("dial: %v, want %q", err, tc.wantErr)
			}
			err = ServeMux(context.Background(), MuxServeOptions{Dir: dir, Log: slog.New(slog.DiscardHandler)})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("serve: %v, want %q", err, tc.wantErr)
			}
			if _, err := os.Stat(filepath.Join(dir, muxToken)); err == nil {
				t.Error("a token was written into a refused folder")
			}
			if s.Conns.Load() != 0 {
				t.Error("the host was dialed")
			}
		})
	}
}

// The daemon serves only its own user (SO_PEERCRED) and callers that read
// its token.
func TestMuxRefusesStrangers(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	t.Run("other uid", func(t *testing.T) {
		dir := muxDir(t)
		startMux(t, MuxServeOptions{Dir: dir, uid: os.Getuid() + 4242}) // as if we were someone else
		d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
		d.opts.MuxCommand = []string{"/bin/false"} // never start another
		if c, err := d.Dial(context.Background(), target(s, s.KeyFile)); err == nil {
			c.Close()
			t.Fatal("a peer of another uid was served")
		}
		if s.Conns.Load() != 0 {
			t.Error("the host was dialed for a stranger")
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		dir := muxDir(t)
		startMux(t, MuxServeOptions{Dir: dir})
		conn, err := dialMuxSocket(dir)
		if err != nil {
			t.Fatal(err)
		}
		pub, _, _, _, _ := ssh.ParseAuthorizedKey(must(os.ReadFile(filepath.Join(dir, muxHostKey))))
		_, _, _, err = ssh.NewClientConn(conn, "rlab-mux", &ssh.ClientConfig{User: muxUser, Auth: []ssh.AuthMethod{ssh.Password("guess")}, HostKeyCallback: ssh.FixedHostKey(pub)})
		if err == nil || !strings.Contains(err.Error(), "unable to authenticate") && !strings.Contains(err.Error(), "too many authentication failures") {
			t.Errorf("wrong token: %v", err)
		}
	})
	t.Run("files private", func(t *testing.T) {
		dir := muxDir(t)
		startMux(t, MuxServeOptions{Dir: dir})
		for _, f := range []string{muxToken, muxHostKey, muxSock} {
			st, err := os.Stat(filepath.Join(dir, f))
			if err != nil || st.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: %v %v, want private", f, st.Mode(), err)
			}
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// With nothing in use for Persist, the daemon exits and removes its socket.
func TestMuxIdleExit(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	dir := muxDir(t)
	done, serveErr := startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
	d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
	d.opts.Persist = 50 * time.Millisecond // the latest caller's --persist holds
	c, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "x")
	// Still in use: it must not exit while the caller holds it.
	select {
	case <-done:
		t.Fatalf("daemon exited while a caller was connected: %v", *serveErr)
	case <-time.After(200 * time.Millisecond):
	}
	run(t, c, "y")
	c.Close()
	select {
	case <-done:
		if *serveErr != nil {
			t.Fatal(*serveErr)
		}
	case <-time.After(time.Minute):
		t.Fatal("daemon still running a minute after its last caller left")
	}
	for _, f := range []string{muxSock, muxToken} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", f, err)
		}
	}
}

func TestParsePersist(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"60s", time.Minute, false},
		{"10m", 10 * time.Minute, false},
		{"60", time.Minute, false},
		{"0", -1, false},
		{"off", -1, false},
		{"no", -1, false},
		{"0s", -1, false},
		{"-5s", 0, true},
		{"soon", 0, true},
		{"", 0, true},
		// More seconds than a time.Duration holds: it wrapped to a
		// negative duration before (found by FuzzParsePersist).
		{"10000000000", 0, true},
		{"9223372036", 9223372036 * time.Second, false},
	}
	for _, tc := range tests {
		got, err := ParsePersist(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParsePersist(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// FuzzParsePersist: a --persist value is off (-1), a positive duration, or
// an error; whole seconds are that many seconds.
func FuzzParsePersist(f *testing.F) {
	for _, s := range []string{"60s", "10m", "60", "0", "off", "-5s", "10000000000", "1e3", "+60"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParsePersist(s)
		if err != nil {
			return
		}
		if d != -1 && d <= 0 {
			t.Fatalf("ParsePersist(%q) = %v", s, d)
		}
		if n, aerr := strconv.Atoi(strings.TrimSpace(s)); aerr == nil && n > 0 && d != time.Duration(n)*time.Second {
			t.Fatalf("ParsePersist(%q) = %v, want %d s", s, d, n)
		}
	})
}

func TestBoundedLog(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	b := &boundedLog{path: p, max: 1000}
	line := []byte(strings.Repeat("x", 99) + "\n")
	for i := 0; i < 100; i++ {
		if _, err := b.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	for _, f := range []string{p, p + ".1"} {
		st, err := os.Stat(f)
		if err != nil || st.Size() > 1000 {
			t.Errorf("%s: %v, %v; want at most 1000 bytes", f, st, err)
		}
	}
}

func FuzzDecodeMuxError(f *testing.F) {
	k := sshtest.NewKey(f)
	f.Add(encodeMuxError(&UnknownHostKeyError{Host: "h", Addr: "10.0.0.1:22", Key: k.PublicKey(), KnownHosts: "/k"}))
	f.Add(encodeMuxError(&ChangedHostKeyError{Addr: "10.0.0.1:22", Key: k.PublicKey(), Known: []knownhosts.KnownKey{{Key: k.PublicKey(), Filename: "/k", Line: 3}}}))
	f.Add(encodeMuxError(errors.New("connect to a@b:22: connection refused")))
	f.Add([]byte(`{"Text":"x","Kind":"revoked","Key":"AAAA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := decodeMuxError(b)
		if err == nil || err.Error() == "" {
			t.Fatal("no error text")
		}
	})
}

// Hosts behind a bastion through the mux: one bastion login shared by
// callers of separate runs, and a bastion key revoked since is refused on
// reuse, naming the jump host.
func TestMuxJumpChain(t *testing.T) {
	bastion := sshtest.Start(t, nil)
	bastion.Forward = true
	h1 := sshtest.Start(t, echoHandler)
	h2 := sshtest.Start(t, echoHandler)
	h3 := sshtest.Start(t, echoHandler) // first dialed after the revocation
	kh := sshtest.WriteKnownHosts(t, bastion.KnownHostsLine(), h1.KnownHostsLine(), h2.KnownHostsLine())
	jump := target(bastion, bastion.KeyFile)
	jump.Name = "bastion"
	behind := func(s *sshtest.Server, name string) Target {
		tg := target(s, s.KeyFile)
		tg.Name, tg.NoJump, tg.Jump = name, false, &jump
		return tg
	}
	dir := muxDir(t)
	startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
	for i, tg := range []Target{behind(h1, "h1"), behind(h2, "h2"), behind(h1, "h1")} {
		// A Dialer per dial: as separate rlab runs.
		c, err := muxDialer(t, dir, Options{KnownHosts: []string{kh}}).Dial(context.Background(), tg)
		if err != nil {
			t.Fatalf("dial %d (%s): %v", i, tg.Name, err)
		}
		if out := run(t, c, tg.Name); out != "ran: "+tg.Name {
			t.Errorf("%s answered %q", tg.Name, out)
		}
		c.Close()
	}
	if b, a1, a2 := bastion.Conns.Load(), h1.Conns.Load(), h2.Conns.Load(); b != 1 || a1 != 1 || a2 != 1 {
		t.Errorf("logins: bastion %d, h1 %d, h2 %d; want 1 each", b, a1, a2)
	}
	st, err := QueryMux(context.Background(), dir)
	if err != nil || len(st.Upstream) != 2 || !strings.Contains(st.Upstream[0].Via, bastion.Addr) {
		t.Errorf("status: %+v, %v", st, err)
	}

	revoked := "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(bastion.HostKey.PublicKey())))
	kh2 := kh + ".new"
	os.WriteFile(kh2, []byte(strings.Join([]string{bastion.KnownHostsLine(), h1.KnownHostsLine(), h2.KnownHostsLine(), h3.KnownHostsLine(), revoked}, "\n")+"\n"), 0o600)
	if err := os.Rename(kh2, kh); err != nil {
		t.Fatal(err)
	}
	// Reused (h1), and new behind the daemon's kept bastion login (h3).
	for _, tg := range []Target{behind(h1, "h1"), behind(h3, "h3")} {
		_, err = muxDialer(t, dir, Options{KnownHosts: []string{kh}}).Dial(context.Background(), tg)
		var re *RevokedHostKeyError
		if err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), "via jump host") || re.Addr != bastion.Addr {
			t.Errorf("%s behind a revoked bastion: %v", tg.Name, err)
		}
	}
	if n := h3.Execs.Load(); n != 0 {
		t.Errorf("h3 ran %d commands behind a revoked bastion", n)
	}
}

// One rlab process dialing many hosts through the daemon at once uses one
// local connection (one handshake), each host a view on it: sessions work
// on all of them, closing one host's client leaves the others working and
// closes its sessions, and the daemon counts each host's use.
func TestMuxOneLinkPerCaller(t *testing.T) {
	const n = 6
	var srvs []*sshtest.Server
	var lines []string
	for i := 0; i < n; i++ {
		s := sshtest.Start(t, sshtest.ShellHandler(t.TempDir()))
		srvs = append(srvs, s)
		lines = append(lines, s.KnownHostsLine())
	}
	kh := sshtest.WriteKnownHosts(t, lines...)
	dir := muxDir(t)
	startMux(t, MuxServeOptions{Dir: dir, Persist: time.Minute})
	d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
	cs := make([]*Client, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range srvs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg := target(srvs[i], srvs[i].KeyFile)
			tg.Name = fmt.Sprintf("h%d", i)
			cs[i], errs[i] = d.Dial(context.Background(), tg)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("dial h%d: %v", i, err)
		}
	}
	st, err := QueryMux(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Clients != 1 || len(st.Upstream) != n {
		t.Fatalf("status with %d hosts dialed by one Dialer: %d local connections, %d upstream; want 1 and %d", n, st.Clients, len(st.Upstream), n)
	}
	for _, u := range st.Upstream {
		if u.Users != 1 {
			t.Errorf("%s: %d users, want 1", u.Name, u.Users)
		}
	}
	// A session left open on h0 ends when h0's client is closed.
	sess, err := cs[0].NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("sleep 60"); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	cs[0].Close()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("a session stayed open after its host's client was closed")
	}
	for i := 1; i < n; i++ {
		if out := run(t, cs[i], fmt.Sprintf("echo %d", i)); out != fmt.Sprintf("%d\n", i) {
			t.Errorf("h%d after h0 closed: %q", i, out)
		}
	}
	st, _ = QueryMux(context.Background(), dir)
	for _, u := range st.Upstream {
		if want := 1; u.Name == "h0" {
			if u.Users != 0 {
				t.Errorf("h0 after its client closed: %d users, want 0", u.Users)
			}
		} else if u.Users != want {
			t.Errorf("%s: %d users, want %d", u.Name, u.Users, want)
		}
	}
}

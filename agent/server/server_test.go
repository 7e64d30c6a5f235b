package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// TestMain lets the test binary double as a helper process: a real child
// that listens on a TCP port, or a real agent serving on stdin/stdout (used
// inside a network namespace by the capture test).
func TestMain(m *testing.M) {
	switch os.Getenv("RLAB_AGENT_TEST_HELPER") {
	case "":
		os.Exit(m.Run())
	case "listen":
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("RLAB_TEST_PORT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		defer ln.Close()
		fmt.Println("listening")
		select {}
	case "holdlock": // provision_test.go: a real fcntl lock holder, as apt is
		if err := holdLock(os.Getenv("RLAB_TEST_LOCKFILE")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	case "serve":
		opts := Options{WorkDir: os.Getenv("RLAB_TEST_WORKDIR"), Version: "helper"}
		if o := os.Getenv("RLAB_TEST_OWNER"); o != "" { // a root agent working for uid:gid o
			var own Owner
			fmt.Sscanf(o, "%d:%d", &own.UID, &own.GID)
			opts.Owner = &own
		}
		srv, err := New(opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if err := srv.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// client is the controller's protocol client (agent/rpc) with what the
// tests look at besides answers: each call's events, and responses that
// answer no call (to lines the agent could not decode).
type client struct {
	t     testing.TB
	rc    *rpc.Client
	hello proto.Hello
	done  chan error // Serve's result (in-process) or the helper's exit

	mu     sync.Mutex
	events map[uint64][]proto.Event
	stray  []proto.Envelope // responses to no call (id 0: undecodable requests)
	lines  chan proto.Envelope
}

// startAgent runs a Server in-process over io.Pipe.
func startAgent(t testing.TB, opts Options) (*client, *Server) {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 2 * time.Second
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
		done <- err
	}()
	c := newClient(t, inW, outR, done)
	return c, srv
}

// helperServe starts cmd (this test binary, perhaps under `ip netns exec`)
// as an agent serving on pipes with work dir dir, as an SSH session runs
// it; done receives its exit.
func helperServe(t testing.TB, cmd *exec.Cmd, dir string) (in io.WriteCloser, out io.Reader, done chan error) {
	t.Helper()
	cmd.Env = append(os.Environ(), "RLAB_AGENT_TEST_HELPER=serve", "RLAB_TEST_WORKDIR="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if out, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return in, out, done
}

func newClient(t testing.TB, in io.WriteCloser, out io.Reader, done chan error) *client {
	t.Helper()
	c := &client{t: t, done: done, events: map[uint64][]proto.Event{}, lines: make(chan proto.Envelope, 16)}
	rc, hello, err := rpc.Dial(out, in, rpc.Options{
		Host: "test",
		OnEvent: func(e proto.Event) {
			c.mu.Lock()
			c.events[e.ID] = append(c.events[e.ID], e)
			c.mu.Unlock()
		},
		OnStray: func(env proto.Envelope) {
			c.mu.Lock()
			c.stray = append(c.stray, env)
			c.mu.Unlock()
			c.lines <- env
		},
	})
	if err != nil {
		t.Fatalf("read hello: %v", err)
	}
	c.rc, c.hello = rc, hello
	t.Cleanup(func() { c.close() })
	return c
}

func (c *client) close() error {
	c.rc.Close()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(60 * time.Second):
		c.t.Errorf("agent did not exit after stdin closed")
		return errors.New("agent did not exit")
	}
}

// send writes a request and returns it in flight.
func (c *client) send(method string, params any) *rpc.Pending {
	c.t.Helper()
	p, err := c.rc.Go(method, params)
	if err != nil {
		c.t.Fatalf("send %s: %v", method, err)
	}
	return p
}

// wait waits for p's answer, decodes its result into res (when non-nil)
// and returns the protocol error, if any.
func (c *client) wait(p *rpc.Pending, res any) *proto.Error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := p.Wait(ctx, res)
	var pe *proto.Error
	if errors.As(err, &pe) {
		return pe
	}
	if err != nil {
		c.t.Fatalf("%s: %v", p.Method, err)
	}
	return nil
}

// call sends a request and decodes its result into res (when non-nil). It
// returns the protocol error, if any.
func (c *client) call(method string, params, res any) *proto.Error {
	c.t.Helper()
	return c.wait(c.send(method, params), res)
}

func (c *client) mustCall(method string, params, res any) {
	c.t.Helper()
	if e := c.call(method, params, res); e != nil {
		c.t.Fatalf("%s: %v (stderr %q)", method, e, e.Stderr)
	}
}

func (c *client) eventsFor(id uint64) []proto.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events[id]
}

func TestHelloFirst(t *testing.T) {
	dir := t.TempDir() + "/nested/work"
	c, _ := startAgent(t, Options{WorkDir: dir, Version: "v-test"})
	want, err := SelfHash()
	if err != nil {
		t.Fatal(err)
	}
	h := c.hello
	if h.Magic != proto.Magic || h.Proto != proto.Version || h.Hash != want || h.Version != "v-test" ||
		h.PID != os.Getpid() || h.UID != os.Geteuid() || h.WorkDir != dir {
		t.Errorf("hello = %+v, want magic %q proto %d hash %s pid %d work dir %s", h, proto.Magic, proto.Version, want, os.Getpid(), dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("work dir mode %o, want 700", fi.Mode().Perm())
	}
	var pong proto.Pong
	c.mustCall(proto.MethodPing, nil, &pong)
	if pong.Time == 0 {
		t.Error("pong without time")
	}
}

func TestBadRequests(t *testing.T) {
	c, _ := startAgent(t, Options{})
	tests := []struct {
		name     string
		line     string
		wantID   uint64
		wantCode string
	}{
		{"not json", "hello there", 0, proto.CodeBadRequest},
		{"truncated json", `{"id": 5, "method": "pi`, 0, proto.CodeBadRequest},
		{"wrong type", `{"id": "x", "method": "ping"}`, 0, proto.CodeBadRequest},
		{"unknown method", `{"id": 7, "method": "rm -rf /"}`, 7, proto.CodeUnknown},
		{"empty method", `{"id": 8}`, 8, proto.CodeUnknown},
		{"bad params", `{"id": 9, "method": "proc.start", "params": [1,2]}`, 9, proto.CodeBadRequest},
		{"empty argv", `{"id": 10, "method": "proc.start", "params": {"handle": "a"}}`, 10, proto.CodeBadRequest},
		{"NUL in argv", `{"id": 15, "method": "proc.start", "params": {"handle": "n", "argv": ["echo", "a\u0000b"]}}`, 15, proto.CodeBadRequest},
		{"env without =", `{"id": 16, "method": "proc.start", "params": {"handle": "n", "argv": ["true"], "env": ["PATH"]}}`, 16, proto.CodeBadRequest},
		{"handle with slash", `{"id": 11, "method": "proc.start", "params": {"handle": "../a", "argv": ["true"]}}`, 11, proto.CodeBadRequest},
		{"unknown process", `{"id": 12, "method": "proc.wait", "params": {"handle": "nope"}}`, 12, proto.CodeNotFound},
		{"netdev with slash", `{"id": 13, "method": "capture.start", "params": {"handle": "c", "netdev": "../x", "max_bytes": 1000}}`, 13, proto.CodeBadRequest},
		{"netdev with space", `{"id": 14, "method": "rxe.ensure", "params": {"netdev": "no such dev"}}`, 14, proto.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.rc.WriteLine([]byte(tt.line)); err != nil {
				t.Fatal(err)
			}
			var env proto.Envelope
			select {
			case env = <-c.lines:
			case <-time.After(60 * time.Second):
				t.Fatalf("no reply to %s", tt.name)
			}
			if env.ID != tt.wantID || env.Error == nil || env.Error.Code != tt.wantCode {
				t.Errorf("reply %+v (error %v), want id %d code %s", env, env.Error, tt.wantID, tt.wantCode)
			}
		})
	}
	// Still serving after all that.
	c.mustCall(proto.MethodPing, nil, nil)
}

func TestOversizedLineDropsConnection(t *testing.T) {
	c, _ := startAgent(t, Options{})
	big := make([]byte, proto.MaxLine+10)
	for i := range big {
		big[i] = 'x'
	}
	go c.rc.WriteLine(big) // the agent stops reading; don't block the test on it
	select {
	case env := <-c.lines:
		if env.Error == nil || env.Error.Code != proto.CodeBadRequest || !strings.Contains(env.Error.Message, "longer than") {
			t.Errorf("reply %+v, want a bad_request error about the line length", env)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no reply to an oversized line")
	}
	select {
	case err := <-c.done:
		c.done <- err
		if !errors.Is(err, ErrLineTooLong) {
			t.Errorf("Serve returned %v, want ErrLineTooLong", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("agent kept serving after an oversized line")
	}
}

// TestConcurrentRequests shows requests are answered independently: a ping
// is answered while a proc.wait is still blocked on a running process.
func TestConcurrentRequests(t *testing.T) {
	c, _ := startAgent(t, Options{})
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "sleeper", Argv: []string{"sleep", "1000"}}, nil)
	waitCall := c.send(proto.MethodProcWait, proto.ProcWaitParams{Handle: "sleeper"})
	var pings []*rpc.Pending
	for range 20 {
		pings = append(pings, c.send(proto.MethodPing, nil))
	}
	for _, p := range pings {
		if e := c.wait(p, nil); e != nil {
			t.Errorf("ping: %v", e)
		}
	}
	select {
	case <-waitCall.Done():
		t.Fatal("proc.wait answered before the process ended")
	default:
	}
	var stopped proto.ProcResult
	c.mustCall(proto.MethodProcStop, proto.ProcStopParams{Handle: "sleeper"}, &stopped)
	var waited proto.ProcResult
	if e := c.wait(waitCall, &waited); e != nil {
		t.Fatalf("proc.wait: %v", e)
	}
	if !waited.Stopped || waited.Signal != "terminated" || waited.ExitCode != -1 {
		t.Errorf("proc.wait after stop = %+v, want stopped by SIGTERM", waited)
	}
}

// processGone reports whether pid no longer runs (gone or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 300 {
		if processGone(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d still running", pid)
}

func TestStdinCloseStopsChildren(t *testing.T) {
	c, srv := startAgent(t, Options{})
	var started proto.ProcStarted
	// A shell that forks a grandchild and prints its pid: both must go.
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{
		Handle: "tree",
		Argv:   []string{"sh", "-c", "sleep 1000 & echo child=$!; wait"},
		Ready:  &proto.Ready{OutputRegex: `child=[0-9]+`},
	}, &started)
	var lone proto.ProcStarted
	// One that ignores SIGTERM: the agent must escalate to SIGKILL.
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{
		Handle: "stubborn",
		Argv:   []string{"sh", "-c", "trap '' TERM; echo armed; while :; do sleep 1; done"},
		Ready:  &proto.Ready{OutputRegex: `armed`},
	}, &lone)
	out, _ := os.ReadFile(srv.WorkDir() + "/tree.stdout")
	_, childStr, _ := strings.Cut(strings.TrimSpace(string(out)), "child=")
	child, err := strconv.Atoi(childStr)
	if err != nil {
		t.Fatalf("grandchild pid from %q: %v", out, err)
	}
	for _, pid := range []int{started.PID, child, lone.PID} {
		if processGone(pid) {
			t.Fatalf("process %d not running before stdin closed", pid)
		}
	}
	if err := c.close(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, pid := range []int{started.PID, child, lone.PID} {
		waitGone(t, pid)
	}
}

func TestProcReadiness(t *testing.T) {
	c, _ := startAgent(t, Options{})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	freePort := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	// A port this test process listens on: a child waiting for it must not
	// count someone else's socket as its own.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherPort := other.Addr().(*net.TCPAddr).Port
	lp, lp2 := freePort(), freePort()
	tests := []struct {
		name     string
		p        proto.ProcStartParams
		wantCode string // "" ready
	}{
		{"no readiness", proto.ProcStartParams{Argv: []string{"sleep", "1000"}}, ""},
		{"output regex on stderr", proto.ProcStartParams{Argv: []string{"sh", "-c", "echo server up >&2; sleep 1000"},
			Ready: &proto.Ready{OutputRegex: `server\s+up`}}, ""},
		{"tcp listen", proto.ProcStartParams{Argv: []string{self}, Env: []string{"RLAB_AGENT_TEST_HELPER=listen", "RLAB_TEST_PORT=" + strconv.Itoa(lp)},
			Ready: &proto.Ready{TCPListen: lp}}, ""},
		{"tcp or rdma_cm listen: tcp", proto.ProcStartParams{Argv: []string{self}, Env: []string{"RLAB_AGENT_TEST_HELPER=listen", "RLAB_TEST_PORT=" + strconv.Itoa(lp2)},
			Ready: &proto.Ready{TCPListen: lp2, RDMACMListen: lp2}}, ""},
		{"tcp or rdma_cm listen: neither", proto.ProcStartParams{Argv: []string{"sleep", "1000"},
			Ready: &proto.Ready{TCPListen: otherPort, RDMACMListen: otherPort, TimeoutMs: 300}}, proto.CodeTimeout},
		{"tcp listen by another process", proto.ProcStartParams{Argv: []string{"sleep", "1000"},
			Ready: &proto.Ready{TCPListen: otherPort, TimeoutMs: 300}}, proto.CodeTimeout},
		{"exits before ready", proto.ProcStartParams{Argv: []string{"sh", "-c", "echo no device >&2; exit 3"},
			Ready: &proto.Ready{TCPListen: freePort()}}, proto.CodeCommand},
		{"rdma_cm listen without rdma", proto.ProcStartParams{Argv: []string{"sleep", "1000"},
			Ready: &proto.Ready{RDMACMListen: 7471, TimeoutMs: 300}}, proto.CodeTimeout},
		{"bad regex", proto.ProcStartParams{Argv: []string{"true"}, Ready: &proto.Ready{OutputRegex: `(`}}, proto.CodeBadRequest},
		{"missing program", proto.ProcStartParams{Argv: []string{"no-such-program-rlab"}}, proto.CodeNotFound},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Handle = "p" + strconv.Itoa(i)
			var st proto.ProcStarted
			e := c.call(proto.MethodProcStart, tt.p, &st)
			if tt.wantCode == "" {
				if e != nil {
					t.Fatalf("proc.start: %v", e)
				}
				if processGone(st.PID) {
					t.Errorf("process %d not running once ready", st.PID)
				}
				var r proto.ProcResult
				c.mustCall(proto.MethodProcStop, proto.ProcStopParams{Handle: tt.p.Handle}, &r)
				return
			}
			if e == nil || e.Code != tt.wantCode {
				t.Fatalf("proc.start error %v, want code %s", e, tt.wantCode)
			}
			if tt.wantCode == proto.CodeCommand && (e.ExitCode != 3 || !strings.Contains(e.Stderr, "no device")) {
				t.Errorf("error %+v lacks the exit code 3 and stderr", e)
			}
		})
	}
}

func TestProcTimeoutKillsGroup(t *testing.T) {
	c, srv := startAgent(t, Options{})
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{
		Handle: "hung", Argv: []string{"sh", "-c", "sleep 1000 & echo child=$!; wait"},
		Ready: &proto.Ready{OutputRegex: `child=[0-9]+`}, TimeoutMs: 200,
	}, nil)
	var r proto.ProcResult
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "hung"}, &r)
	if !r.TimedOut || r.Signal != "killed" || r.ExitCode != -1 {
		t.Errorf("result %+v, want timed out and killed", r)
	}
	if !strings.Contains(r.Stdout, "child=") || r.StdoutFile != "hung.stdout" {
		t.Errorf("result %+v lacks the output", r)
	}
	out, _ := os.ReadFile(srv.WorkDir() + "/hung.stdout")
	_, childStr, _ := strings.Cut(strings.TrimSpace(string(out)), "child=")
	child, err := strconv.Atoi(childStr)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, child)
}

func TestProcExitCodeAndOutput(t *testing.T) {
	c, _ := startAgent(t, Options{})
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "x",
		Argv: []string{"sh", "-c", `printf 'a b; $(c)\n'; echo err >&2; exit 7`}}, nil)
	var r proto.ProcResult
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "x"}, &r)
	if r.ExitCode != 7 || r.Stdout != "a b; $(c)\n" || r.Stderr != "err\n" || r.Signal != "" || r.Stopped {
		t.Errorf("result %+v", r)
	}
	// Arguments are passed as they are, never through a shell.
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "y", Argv: []string{"echo", "$(id)", "; rm -rf /", "`x`"}}, nil)
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "y"}, &r)
	if r.Stdout != "$(id) ; rm -rf / `x`\n" {
		t.Errorf("echo printed %q", r.Stdout)
	}
	if e := c.call(proto.MethodProcStart, proto.ProcStartParams{Handle: "y", Argv: []string{"true"}}, nil); e == nil || e.Code != proto.CodeExists {
		t.Errorf("reused handle: %v, want %s", e, proto.CodeExists)
	}
}

// TestAgentKilledTakesChildren: an agent killed with SIGKILL cannot clean
// up; its children still die (Pdeathsig) instead of running on.
func TestAgentKilledTakesChildren(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	in, out, done := helperServe(t, cmd, t.TempDir())
	c := newClient(t, in, out, done)
	var st proto.ProcStarted
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "orphan", Argv: []string{"sleep", "1000"}}, &st)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, st.PID)
}

// TestStdinCloseDuringReadiness: a proc.start still waiting for readiness
// when the controller goes away is answered, and its process is stopped.
func TestStdinCloseDuringReadiness(t *testing.T) {
	c, srv := startAgent(t, Options{})
	slow := c.send(proto.MethodProcStart, proto.ProcStartParams{Handle: "slow",
		Argv: []string{"sh", "-c", "echo pid=$$; exec sleep 1000"}, Ready: &proto.Ready{OutputRegex: "never printed", TimeoutMs: 600000}})
	var pid int
	for range 500 {
		b, _ := os.ReadFile(srv.WorkDir() + "/slow.stdout")
		if _, p, ok := strings.Cut(strings.TrimSpace(string(b)), "pid="); ok {
			pid, _ = strconv.Atoi(p)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("process never started")
	}
	c.rc.Close()
	var st proto.ProcStarted
	if e := c.wait(slow, &st); e == nil {
		t.Errorf("proc.start answered %+v, want an error", st)
	}
	waitGone(t, pid)
}

// TestProcBinaryOutputFits: two 1 MiB tails of control bytes would be 12 MiB
// of JSON; the result still fits one line, truncated and saying so.
func TestProcBinaryOutputFits(t *testing.T) {
	c, srv := startAgent(t, Options{})
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "bin",
		Argv: []string{"sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2"}}, nil)
	var r proto.ProcResult
	c.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "bin"}, &r)
	if r.ExitCode != 0 || !r.Truncated || len(r.Stdout) == 0 || len(r.Stdout) >= 1<<20 {
		t.Errorf("result: exit %d truncated %v stdout %d bytes", r.ExitCode, r.Truncated, len(r.Stdout))
	}
	fi, err := os.Stat(srv.WorkDir() + "/bin.stdout")
	if err != nil || fi.Size() != 1<<20 {
		t.Errorf("the whole output stays in the file: %v %v", fi, err)
	}
}

func TestValidRunID(t *testing.T) {
	for id, ok := range map[string]bool{
		"20261125T220000Z": true, "wl.pair-042.server.s65536.r2": true, "cap.roce.write_bw": true,
		strings.Repeat("a", 200): true, strings.Repeat("a", 201): false,
		"": false, ".": false, "..": false, "a/b": false, "../x": false, "a b": false, "a\x00": false, "$(x)": false, "é": false,
	} {
		if err := ValidRunID(id); (err == nil) != ok {
			t.Errorf("ValidRunID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

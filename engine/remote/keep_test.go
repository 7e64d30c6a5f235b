package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"golang.org/x/crypto/ssh"
)

// keptBed is an in-process SSH host running the fake agent and an
// in-process mux daemon that keeps agents (KeptAgents), with a Dialer that
// goes through it, as `rlab facts --persist` does.
type keptBed struct {
	srv    *sshtest.Server
	home   string
	dir    string // the mux folder
	d      *sshx.Dialer
	target sshx.Target
	agents *Agents
}

func newKeptBed(t *testing.T, env string) *keptBed {
	t.Helper()
	home := t.TempDir()
	srv := sshtest.Start(t, sshtest.ShellHandler(home))
	srv.SFTPDir = home
	kh := sshtest.WriteKnownHosts(t, srv.KnownHostsLine())
	dir, err := os.MkdirTemp("", "kept")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o700)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		err := sshx.ServeMux(ctx, sshx.MuxServeOptions{Dir: dir, Persist: time.Minute, Log: slog.New(slog.DiscardHandler),
			Handlers: map[string]sshx.MuxChannelHandler{KeptAgentChannel: &KeptAgents{MaxIdle: 2}}})
		if err != nil {
			t.Errorf("mux: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-served; os.RemoveAll(dir) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "mux.sock")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("mux daemon not listening after 10s")
		}
	}
	d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{kh}, SSHConfig: "none", AgentSocket: "none", Persist: time.Minute, MuxDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	h, p, _ := net.SplitHostPort(srv.Addr)
	var port int
	fmt.Sscan(p, &port)
	bin := fakeAgent(t)
	if env != "" {
		bin = []byte(strings.Replace(string(bin), "#!/bin/sh\n", "#!/bin/sh\n"+env+"\n", 1))
	}
	return &keptBed{srv: srv, home: home, dir: dir, d: d, agents: agentsOf(bin),
		target: sshx.Target{Name: "h", Address: h, Port: port, User: srv.User, IdentityFiles: []string{srv.KeyFile}, NoJump: true}}
}

// open connects through the mux and opens an agent as Gather does.
func (b *keptBed) open(t *testing.T) (*Agent, *sshx.Client) {
	t.Helper()
	return b.openRun(t, "facts")
}

// openRun opens an agent for run id run, as rlab run --persist does.
func (b *keptBed) openRun(t *testing.T, run string) (*Agent, *sshx.Client) {
	t.Helper()
	c, err := b.d.Dial(context.Background(), b.target)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Muxed {
		t.Fatal("connection not through the mux")
	}
	a, _, err := b.agents.Open(context.Background(), c, StartOptions{Host: "h", RunID: run, Keep: true})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	return a, c
}

// use pings the agent, closes it and the connection, and returns its pid.
func (b *keptBed) use(t *testing.T) int {
	t.Helper()
	a, c := b.open(t)
	defer c.Close()
	if err := a.Call(context.Background(), "ping", nil, nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	a.Close()
	return a.Hello.PID
}

// kept is what `rlab mux status` reports for the host, once it is want
// (a release runs after the caller's Close returned) or after 10s.
func (b *keptBed) kept(t *testing.T, want int) int {
	t.Helper()
	var n int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err := sshx.QueryMux(context.Background(), b.dir)
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for _, c := range st.Upstream {
			n += c.Kept
		}
		if n == want {
			break
		}
	}
	return n
}

func TestKeptAgentReused(t *testing.T) {
	b := newKeptBed(t, "")
	first := b.use(t) // not cached yet: installs and starts an ordinary session
	second := b.use(t)
	if second == first {
		t.Fatalf("the agent started after the install (pid %d) was kept; only the warm start's should be", first)
	}
	if n := b.kept(t, 1); n != 1 {
		t.Fatalf("kept agents after the warm start: %d, want 1", n)
	}
	for i := 0; i < 3; i++ {
		if pid := b.use(t); pid != second {
			t.Fatalf("run %d: agent pid %d, want the kept %d", i+3, pid, second)
		}
	}
}

// An agent whose release fails (an older agent without it, or one that
// could not undo something) is ended, never handed to the next caller.
func TestKeptAgentNotReleasedIsEnded(t *testing.T) {
	for _, env := range []string{"FAKE_NO_RELEASE=1", "FAKE_RELEASE_ERRORS=1"} {
		t.Run(env, func(t *testing.T) {
			b := newKeptBed(t, env)
			b.use(t)
			p1 := b.use(t)
			p2 := b.use(t)
			if p1 == p2 {
				t.Fatalf("an agent whose release failed (pid %d) was handed out again", p1)
			}
			waitGone(t, p1)
			if n := b.kept(t, 0); n != 0 {
				t.Errorf("kept agents: %d, want 0", n)
			}
		})
	}
}

func TestKeptAgentDiesMidLease(t *testing.T) {
	b := newKeptBed(t, "")
	b.use(t)
	a, c := b.open(t)
	defer c.Close()
	err := a.Call(context.Background(), "die", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("call to a dying kept agent: %v, want agent lost", err)
	}
	if !strings.Contains(a.Stderr(), "dying") {
		t.Errorf("its stderr did not reach the caller: %q", a.Stderr())
	}
	a.Close()
	if pid := b.use(t); pid == a.Hello.PID {
		t.Fatal("a dead agent was handed out again")
	}
}

func TestKeptAgentsAtOnce(t *testing.T) {
	b := newKeptBed(t, "")
	b.use(t)
	b.use(t) // one kept now
	// Three callers at once: each gets its own agent; two are kept after.
	var wg sync.WaitGroup
	var mu sync.Mutex
	pids := map[int]int{}
	as := make([]*Agent, 3)
	for i := range as {
		a, c := b.open(t)
		defer c.Close()
		as[i] = a
		mu.Lock()
		pids[a.Hello.PID]++
		mu.Unlock()
	}
	if len(pids) != 3 {
		t.Fatalf("three leases at once shared agents: pids %v", pids)
	}
	for _, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.Close()
		}()
	}
	wg.Wait()
	if n := b.kept(t, 2); n != 2 {
		t.Errorf("kept agents after three leases with MaxIdle 2: %d, want 2", n)
	}
}

// A caller that leaves half-way through a request line: the agent cannot
// be trusted to be in step, so it is ended, not kept.
func TestKeptAgentCallerLeavesMidLine(t *testing.T) {
	b := newKeptBed(t, "")
	b.use(t)
	kept := b.use(t)
	c, err := b.d.Dial(context.Background(), b.target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The same command the warm start sends: take the kept agent.
	a, c2 := b.open(t)
	cmd := a.cmd
	a.Close()
	c2.Close()
	extra, _ := json.Marshal(keptOpen{Cmd: cmd})
	ch, reqs, err := c.OpenChannel(KeptAgentChannel, extra)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range reqs {
		}
	}()
	ch.Write([]byte(`{"id":1,"meth`))
	ch.CloseWrite()
	buf := make([]byte, 4096)
	for {
		if _, err := ch.Read(buf); err != nil {
			break
		}
	}
	waitGone(t, kept)
	if pid := b.use(t); pid == kept {
		t.Fatal("an agent left half a request was handed out again")
	}
}

func TestKeptAgentBadRequestRefused(t *testing.T) {
	b := newKeptBed(t, "")
	c, err := b.d.Dial(context.Background(), b.target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, extra := range [][]byte{nil, []byte("{"), []byte(`{"Cmd":""}`), []byte(`{"Cmd":"` + strings.Repeat("x", maxKeptCmd) + `"}`)} {
		if _, _, err := c.OpenChannel(KeptAgentChannel, extra); err == nil || !strings.Contains(err.Error(), "bad kept agent request") {
			t.Errorf("open with %.40q: %v, want refused", extra, err)
		}
	}
}

// waitGone waits for a process to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			return
		}
	}
	t.Errorf("agent pid %d still running", pid)
}

// A cold Open: the warm start's shell finds nothing cached and prints the
// probe, which the install takes as it is (it then streams the agent at
// once): three sessions in all (the warm-start shell, the one-session
// install, the agent). The next Open is warm: one session.
func TestOpenColdUsesTheWarmStartsProbe(t *testing.T) {
	h := newHost(t, "")
	ag := agentsOf(fakeAgent(t))
	for _, tc := range []struct {
		name      string
		wantExecs int32
		sent      bool
	}{{"cold", 3, true}, {"warm", 1, false}} {
		before := h.srv.Execs.Load()
		a, inst, err := ag.Open(context.Background(), h.c, StartOptions{Host: "h", RunID: "r1"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		a.Close()
		if n := h.srv.Execs.Load() - before; n != tc.wantExecs {
			t.Errorf("%s Open: %d exec sessions, want %d", tc.name, n, tc.wantExecs)
		}
		if (inst.Sent > 0) != tc.sent {
			t.Errorf("%s Open: sent %d bytes", tc.name, inst.Sent)
		}
	}
}

// pipeChannel is an ssh.Channel made of pipes: the daemon's end of a
// caller's channel, for driving ServeChannel without an SSH connection.
type pipeChannel struct {
	io.Reader
	w      *io.PipeWriter
	errw   io.Writer
	closed chan struct{}
	once   sync.Once
}

func (c *pipeChannel) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *pipeChannel) CloseWrite() error           { return c.w.Close() }
func (c *pipeChannel) Close() error {
	c.once.Do(func() { close(c.closed); c.w.Close() })
	return nil
}
func (c *pipeChannel) SendRequest(string, bool, []byte) (bool, error) { return false, nil }
func (c *pipeChannel) Stderr() io.ReadWriter                          { return struct{ io.ReadWriter }{rwOf{c.errw}} }

type rwOf struct{ io.Writer }

func (rwOf) Read([]byte) (int, error) { return 0, io.EOF }

// slowNewChannel is a caller's channel open whose Accept waits for gate.
type slowNewChannel struct {
	extra []byte
	gate  func()
	ch    ssh.Channel
}

func (n *slowNewChannel) Accept() (ssh.Channel, <-chan *ssh.Request, error) {
	n.gate()
	return n.ch, make(chan *ssh.Request), nil
}
func (n *slowNewChannel) Reject(ssh.RejectionReason, string) error { return nil }
func (n *slowNewChannel) ChannelType() string                      { return KeptAgentChannel }
func (n *slowNewChannel) ExtraData() []byte                        { return n.extra }

// An agent that writes its hello before the daemon has accepted the
// caller's channel: the hello still reaches the caller (nothing the agent
// writes goes to no one).
func TestKeptAgentHelloBeforeAccept(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "hello-written")
	h := newHost(t, "")
	bin := []byte(strings.Replace(string(fakeAgent(t)), "#!/bin/sh\n", "#!/bin/sh\nFAKE_MARK="+mark+"\n", 1))
	inst, err := agentsOf(bin).Install(context.Background(), h.c)
	if err != nil {
		t.Fatal(err)
	}
	extra, _ := json.Marshal(keptOpen{Cmd: shellQuote(inst.Path) + " serve --run-id r1 --work-dir " + shellQuote(h.home+"/w")})
	toAgent, fromCaller := io.Pipe()
	fromAgent, toCaller := io.Pipe()
	ch := &pipeChannel{Reader: toAgent, w: toCaller, errw: io.Discard, closed: make(chan struct{})}
	nc := &slowNewChannel{extra: extra, ch: ch, gate: func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(mark); err == nil {
				return
			}
		}
		t.Error("the fake agent never wrote its hello")
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&KeptAgents{}).ServeChannel(nc, h.c, nil)
	}()
	hello, _, err := readHello(bufio.NewReader(fromAgent))
	if err != nil || hello.Magic != "rlab-agent" {
		t.Fatalf("caller's hello: %+v, %v", hello, err)
	}
	fromCaller.Close()
	go io.Copy(io.Discard, fromAgent)
	<-done
}

// Kept agents start for no run (keptRunID) and are leased for each
// caller's: facts and two runs in turn share one agent, each with its own
// work dir, and the home is derived from the leased one.
func TestKeptAgentLeasedPerRun(t *testing.T) {
	b := newKeptBed(t, "")
	b.use(t) // installs
	kept := b.use(t)
	for _, run := range []string{"facts", "20261126-0500-a", "20261126-0501-b", "facts"} {
		a, c := b.openRun(t, run)
		if a.Hello.PID != kept {
			t.Errorf("run %s: agent pid %d, want the kept %d", run, a.Hello.PID, kept)
		}
		if !a.Kept() {
			t.Errorf("run %s: Kept() false for a kept agent", run)
		}
		want := b.home + "/.cache/rlab/runs/" + run + "/h"
		if a.Hello.WorkDir != want {
			t.Errorf("run %s: work dir %q, want %q", run, a.Hello.WorkDir, want)
		}
		if a.Installed.Home != b.home || a.Installed.Path != b.home+"/"+CacheDir+"/"+a.Hello.Hash+"/rlab-agent" {
			t.Errorf("run %s: installed %+v, want home %q", run, a.Installed, b.home)
		}
		// A second lease in the same lease is refused.
		err := a.Call(context.Background(), proto.MethodLease, proto.LeaseParams{RunID: "other"}, nil)
		var ce *CallError
		if !errors.As(err, &ce) || ce.Err.Code != proto.CodeBusy {
			t.Errorf("run %s: a lease mid-lease: %v, want busy", run, err)
		}
		a.Close()
		c.Close()
	}
}

// An agent from before leases (it answers unknown_method): the caller gives
// it back and starts an ordinary agent for its run, with its run's work dir.
func TestKeptAgentWithoutLeaseFallsBack(t *testing.T) {
	b := newKeptBed(t, "FAKE_NO_LEASE=1")
	b.use(t)
	for i, run := range []string{"r1", "r2"} {
		a, c := b.openRun(t, run)
		if err := a.Call(context.Background(), "ping", nil, nil); err != nil {
			t.Fatalf("%s: ping: %v", run, err)
		}
		if a.Kept() {
			t.Errorf("%s: the fallback agent says it is kept", run)
		}
		if want := b.home + "/.cache/rlab/runs/" + run + "/h"; a.Hello.WorkDir != want {
			t.Errorf("%s: work dir %q, want %q", run, a.Hello.WorkDir, want)
		}
		a.Close()
		c.Close()
		waitGone(t, a.Hello.PID)
		if i == 0 && b.kept(t, 1) != 1 {
			t.Errorf("the agent that could not be leased was not given back")
		}
	}
}

// A kept agent that says it moved to a work dir that is not its run's
// under the same home is not used.
func TestKeptAgentLeaseElsewhereRefused(t *testing.T) {
	for _, dir := range []string{"/etc", "$HOME/.cache/rlab/runs/r1/other", "$HOME/.cache/rlab/runs/r2/h"} {
		t.Run(dir, func(t *testing.T) {
			b := newKeptBed(t, "FAKE_LEASE_DIR="+dir)
			b.use(t)
			c, err := b.d.Dial(context.Background(), b.target)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			a, _, err := b.agents.Open(context.Background(), c, StartOptions{Host: "h", RunID: "r1", Keep: true})
			if err == nil {
				a.Close()
				t.Fatalf("Open: work dir %q accepted", a.Hello.WorkDir)
			}
			if !strings.Contains(err.Error(), "moved to work dir") {
				t.Errorf("Open: %v, want refused", err)
			}
		})
	}
}

// A kept agent whose lease answer holds a work dir longer than a path
// (PATH_MAX) is refused by the answer's bound (proto.Bounds), and the
// error does not quote it: the refusal above quoted the whole answer, up to
// a reply line's 8 MiB in one error (attack round 13, low).
func TestKeptAgentLeaseDirBounded(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{4096, "moved to work dir"},                              // a path: the usual refusal, quoting at most 4 KiB
		{8<<20 - 100, "work_dir: 8388508 bytes, more than 4096"}, // refused by its bound
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			b := newKeptBed(t, fmt.Sprintf("FAKE_LEASE_DIR_BYTES=%d", tc.n))
			b.use(t)
			c, err := b.d.Dial(context.Background(), b.target)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			a, _, err := b.agents.Open(context.Background(), c, StartOptions{Host: "h", RunID: "r1", Keep: true})
			if err == nil {
				a.Close()
				t.Fatalf("Open: a work dir of %d bytes accepted", tc.n)
			}
			if s := err.Error(); !strings.Contains(s, tc.want) || len(s) > 16<<10 {
				t.Errorf("Open: an error of %d bytes (%.300s), want one under 16 KiB saying %q", len(s), s, tc.want)
			}
		})
	}
}

// TestReleaseAnswerBounded: what a kept agent's release answer says is
// logged by the mux daemon: an error of a reply line's size is cut to its
// bound (proto.Bounds, 4 KiB), thousands of them to a few, and a field
// past its bound refuses the answer; an honest answer's error is kept.
func TestReleaseAnswerBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    proto.CleanupResult
		want   string
		maxLen int
	}{
		{"honest", proto.CleanupResult{Errors: []string{`delete rxe "rxe0": busy`}}, `release: delete rxe "rxe0": busy`, 100},
		{"an error of 8 MiB", proto.CleanupResult{Errors: []string{strings.Repeat("e", 8<<20-100)}}, "bytes in all)", 5 << 10},
		{"4096 errors of 2 KiB", proto.CleanupResult{Errors: strings.Split(strings.Repeat(strings.Repeat("e", 2000)+"\n", 4096), "\n")[:4096]}, "(4092 more)", 10 << 10},
		{"a handle past a file name", proto.CleanupResult{Stopped: []string{strings.Repeat("h", 8<<20-100)}}, "stopped[0]: 8388508 bytes, more than 255", 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := json.Marshal(tc.res)
			line, _ := json.Marshal(proto.Envelope{ID: 7, Result: res})
			perr, ok := releaseAnswer(line, 7)
			if !ok || perr == nil {
				t.Fatalf("releaseAnswer = %v, %v: want an error", perr, ok)
			}
			if !strings.Contains(perr.Message, tc.want) || len(perr.Message) > tc.maxLen {
				t.Errorf("message of %d bytes (%.200s…), want at most %d saying %q", len(perr.Message), perr.Message, tc.maxLen, tc.want)
			}
		})
	}
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// wire is the controller's client (agent/rpc) keeping every line the agent
// wrote, in order, so the tests can check the line order a connection pool
// relies on.
type wire struct {
	t    *testing.T
	rc   *rpc.Client
	srv  *Server
	done chan error

	mu      sync.Mutex
	lines   []proto.Envelope
	raw     []string
	changed chan struct{}
}

func startWire(t *testing.T, opts Options) *wire {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	opts.StopGrace = 2 * time.Second
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{t: t, srv: srv, done: make(chan error, 1), changed: make(chan struct{}, 1)}
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
		w.done <- err
	}()
	w.rc, _, err = rpc.Dial(outR, inW, rpc.Options{Host: "test", OnLine: func(line []byte) {
		var env proto.Envelope
		if err := json.Unmarshal(line, &env); err != nil {
			t.Errorf("agent wrote a line that is not JSON: %q", line)
			return
		}
		w.mu.Lock()
		w.lines = append(w.lines, env)
		w.raw = append(w.raw, strings.TrimSuffix(string(line), "\n"))
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatalf("read hello: %v", err)
	}
	t.Cleanup(func() { w.close() })
	return w
}

// close ends the agent's input and returns Serve's result.
func (w *wire) close() error {
	w.rc.Close()
	select {
	case err := <-w.done:
		w.done <- err
		return err
	case <-time.After(60 * time.Second):
		w.t.Errorf("agent did not exit after stdin closed")
		return io.ErrNoProgress
	}
}

func (w *wire) send(method string, params any) uint64 {
	w.t.Helper()
	p, err := w.rc.Go(method, params)
	if err != nil {
		w.t.Fatalf("write %s request: %v", method, err)
	}
	return p.ID
}

// waitLine waits for the first line that match accepts and returns its
// index in the transcript.
func (w *wire) waitLine(what string, match func(proto.Envelope) bool) (int, proto.Envelope) {
	w.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		w.mu.Lock()
		for i, env := range w.lines {
			if match(env) {
				w.mu.Unlock()
				return i, env
			}
		}
		w.mu.Unlock()
		select {
		case <-w.changed:
		case <-deadline:
			w.t.Fatalf("no %s from the agent", what)
		}
	}
}

// response waits for the response to id: its index and the envelope.
func (w *wire) response(id uint64) (int, proto.Envelope) {
	w.t.Helper()
	return w.waitLine("response to request "+strconv.FormatUint(id, 10), func(e proto.Envelope) bool {
		return e.ID == id && e.Event == ""
	})
}

func (w *wire) call(method string, params, res any) *proto.Error {
	w.t.Helper()
	_, env := w.response(w.send(method, params))
	if env.Error != nil {
		return env.Error
	}
	if res != nil {
		if err := json.Unmarshal(env.Result, res); err != nil {
			w.t.Fatalf("decode %s result %s: %v", method, env.Result, err)
		}
	}
	return nil
}

func (w *wire) mustCall(method string, params, res any) {
	w.t.Helper()
	if e := w.call(method, params, res); e != nil {
		w.t.Fatalf("%s: %v (stderr %q)", method, e, e.Stderr)
	}
}

// release sends a release and returns its decoded result, its raw line and
// its index in the transcript.
func (w *wire) release() (proto.CleanupResult, string, int) {
	w.t.Helper()
	i, env := w.response(w.send(proto.MethodRelease, nil))
	if env.Error != nil {
		w.t.Fatalf("release: %v", env.Error)
	}
	var res proto.CleanupResult
	if err := json.Unmarshal(env.Result, &res); err != nil {
		w.t.Fatalf("decode release result %s: %v", env.Result, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return res, w.raw[i], i
}

// sorted is res with its lists sorted, for comparing: the stops run in
// parallel.
func sorted(res proto.CleanupResult) proto.CleanupResult {
	slices.Sort(res.Stopped)
	slices.Sort(res.DevicesDeleted)
	return res
}

func canCapture() string {
	if os.Geteuid() != 0 {
		return "needs root for tcpdump"
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		return "needs tcpdump"
	}
	return ""
}

// TestReleaseEndsLease runs each lease twice in one agent: the release
// undoes what the first lease started, the second lease reuses the same
// handles, and the second release undoes it again.
func TestReleaseEndsLease(t *testing.T) {
	tests := []struct {
		name  string
		skip  func() string
		fake  bool // install the fake rdma_rxe kernel
		lease func(w *wire) (pids []int, ports []int)
		want  proto.CleanupResult
	}{
		{
			name:  "nothing started",
			lease: func(w *wire) ([]int, []int) { w.mustCall(proto.MethodPing, nil, nil); return nil, nil },
			want:  proto.CleanupResult{Stopped: []string{}, DevicesDeleted: []string{}},
		},
		{
			name: "running process",
			lease: func(w *wire) ([]int, []int) {
				var st proto.ProcStarted
				w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "sleeper", Argv: []string{"sleep", "1000"}}, &st)
				return []int{st.PID}, nil
			},
			want: proto.CleanupResult{Stopped: []string{"sleeper"}, DevicesDeleted: []string{}},
		},
		{
			name: "finished process is not listed",
			lease: func(w *wire) ([]int, []int) {
				w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "done", Argv: []string{"true"}}, nil)
				w.mustCall(proto.MethodProcWait, proto.ProcWaitParams{Handle: "done"}, nil)
				return nil, nil
			},
			want: proto.CleanupResult{Stopped: []string{}, DevicesDeleted: []string{}},
		},
		{
			name: "process tree, stubborn process and tcp listener",
			lease: func(w *wire) ([]int, []int) {
				var tree, stubborn proto.ProcStarted
				w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "tree",
					Argv: []string{"sh", "-c", "sleep 1000 & echo child=$!; wait"}, Ready: &proto.Ready{OutputRegex: `child=[0-9]+`}}, &tree)
				w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "stubborn",
					Argv: []string{"sh", "-c", "trap '' TERM; echo armed; while :; do sleep 1; done"}, Ready: &proto.Ready{OutputRegex: "armed"}}, &stubborn)
				out, _ := os.ReadFile(w.srv.WorkDir() + "/tree.stdout")
				_, s, _ := strings.Cut(strings.TrimSpace(string(out)), "child=")
				child, err := strconv.Atoi(s)
				if err != nil {
					w.t.Fatalf("grandchild pid from %q: %v", out, err)
				}
				var srv proto.TCPServing
				w.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "rx", Addr: "127.0.0.1"}, &srv)
				return []int{tree.PID, child, stubborn.PID}, []int{srv.Port}
			},
			want: proto.CleanupResult{Stopped: []string{"rx", "stubborn", "tree"}, DevicesDeleted: []string{}},
		},
		{
			name: "rxe created by the lease",
			fake: true,
			lease: func(w *wire) ([]int, []int) {
				var info proto.DeviceInfo
				w.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Netdev: "lo"}, &info)
				if !info.Created {
					w.t.Errorf("rxe.ensure in a new lease: %+v, want created", info)
				}
				return nil, nil
			},
			want: proto.CleanupResult{Stopped: []string{}, DevicesDeleted: []string{"rxe_lo"}},
		},
		{
			// Kept by cleanup: not the lease's to undo, nor the next
			// lease's, which finds it and reuses it.
			name: "rxe kept",
			fake: true,
			lease: func(w *wire) ([]int, []int) {
				w.mustCall(proto.MethodDeviceEnsure, proto.DeviceEnsureParams{Name: "rxe_lo", Netdev: "lo"}, nil)
				w.mustCall(proto.MethodCleanup, proto.CleanupParams{Keep: []string{"rxe_lo"}}, nil)
				return nil, nil
			},
			want: proto.CleanupResult{Stopped: []string{}, DevicesDeleted: []string{}},
		},
		{
			name: "capture",
			skip: canCapture,
			lease: func(w *wire) ([]int, []int) {
				var st proto.CaptureStarted
				w.mustCall(proto.MethodCaptureStart, proto.CaptureStartParams{Handle: "cap", Netdev: "lo", Filter: "tcp port 1", MaxBytes: 1 << 20}, &st)
				return []int{st.PID}, nil
			},
			want: proto.CleanupResult{Stopped: []string{"cap"}, DevicesDeleted: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != nil {
				if why := tt.skip(); why != "" {
					t.Skip(why)
				}
			}
			var k *fakeRXEKernel
			if tt.fake {
				k = installFakeRXE(t)
			}
			w := startWire(t, Options{})
			for lease := range 2 {
				pids, ports := tt.lease(w)
				got, raw, _ := w.release()
				if d := cmp.Diff(tt.want, sorted(got)); d != "" {
					t.Errorf("lease %d: release (-want +got):\n%s", lease, d)
				}
				if len(got.Stopped) == 0 && !strings.Contains(raw, `"stopped":[]`) || len(got.DevicesDeleted) == 0 && !strings.Contains(raw, `"rxe_deleted":[]`) {
					t.Errorf("lease %d: release wrote %s, want empty lists, not null", lease, raw)
				}
				for _, pid := range pids {
					waitGone(t, pid)
				}
				for _, port := range ports {
					if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
						c.Close()
						t.Errorf("lease %d: port %d still listens after the release", lease, port)
					}
				}
			}
			if k != nil {
				_, deleted := k.log()
				want := []string{}
				for range 2 {
					want = append(want, tt.want.DevicesDeleted...)
				}
				if d := cmp.Diff(want, append([]string{}, deleted...)); d != "" {
					t.Errorf("rxe devices the kernel deleted (-want +got):\n%s", d)
				}
			}
			w.mustCall(proto.MethodPing, nil, nil)
			if err := w.close(); err != nil {
				t.Errorf("Serve after releases: %v", err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, l := range w.raw {
				if strings.Contains(l, `"magic"`) {
					t.Errorf("a second hello after a release: %s", l)
				}
			}
		})
	}
}

// TestReleaseLineOrder: what the pool relies on. Every line of the lease's
// requests (responses and events, including those of requests the release
// cancelled) comes before the release's answer, and a request sent right
// behind the release waits for it and belongs to the next lease.
func TestReleaseLineOrder(t *testing.T) {
	w := startWire(t, Options{})
	var a, b proto.ProcStarted
	w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "a", Argv: []string{"sleep", "1000"}}, &a)
	w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "b", Argv: []string{"sleep", "1000"}}, &b)
	var srv proto.TCPServing
	w.mustCall(proto.MethodTCPServe, proto.TCPServeParams{Handle: "rx", Addr: "127.0.0.1"}, &srv)

	waitA := w.send(proto.MethodProcWait, proto.ProcWaitParams{Handle: "a"})
	waitB := w.send(proto.MethodProcWait, proto.ProcWaitParams{Handle: "b"})
	waitRX := w.send(proto.MethodTCPWait, proto.TCPWaitParams{Handle: "rx"})
	// A transfer that would run for hours, streaming progress events.
	send := w.send(proto.MethodTCPSend, proto.TCPSendParams{Handle: "tx", Addr: "127.0.0.1", Port: srv.Port, Bytes: 1 << 50})
	w.waitLine("progress event of tcp.send", func(e proto.Envelope) bool { return e.ID == send && e.Event == proto.EventProgress })
	// A start still waiting for readiness.
	slow := w.send(proto.MethodProcStart, proto.ProcStartParams{Handle: "slow",
		Argv: []string{"sh", "-c", "echo pid=$$; exec sleep 1000"}, Ready: &proto.Ready{OutputRegex: "never printed", TimeoutMs: 600000}})
	var slowPID int
	for range 3000 {
		out, _ := os.ReadFile(w.srv.WorkDir() + "/slow.stdout")
		if _, p, ok := strings.Cut(strings.TrimSpace(string(out)), "pid="); ok {
			slowPID, _ = strconv.Atoi(p)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if slowPID == 0 {
		t.Fatal("the slow process never started")
	}
	lease := []uint64{waitA, waitB, waitRX, send, slow}

	rel := w.send(proto.MethodRelease, nil)
	// Right behind the release, before its answer: the next lease's.
	again := w.send(proto.MethodProcStart, proto.ProcStartParams{Handle: "a", Argv: []string{"sleep", "1000"}})
	ping := w.send(proto.MethodPing, nil)

	relAt, relEnv := w.response(rel)
	for _, id := range lease {
		at, env := w.response(id)
		if at > relAt {
			t.Errorf("response to request %d is line %d, after the release's answer (line %d)", id, at, relAt)
		}
		if id == waitA || id == waitB {
			var r proto.ProcResult
			if env.Error == nil {
				if err := json.Unmarshal(env.Result, &r); err != nil || !r.Stopped {
					t.Errorf("proc.wait in flight at the release: %s, want stopped or an error", env.Result)
				}
			}
		} else if env.Error == nil {
			t.Errorf("request %d in flight at the release answered %s, want an error", id, env.Result)
		}
	}
	w.mu.Lock()
	for i, env := range w.lines[relAt+1:] {
		if slices.Contains(lease, env.ID) {
			t.Errorf("line %d after the release's answer belongs to the released lease: %s", relAt+1+i, w.raw[relAt+1+i])
		}
	}
	w.mu.Unlock()
	if relEnv.Error != nil {
		t.Fatalf("release: %v", relEnv.Error)
	}
	var got proto.CleanupResult
	if err := json.Unmarshal(relEnv.Result, &got); err != nil {
		t.Fatal(err)
	}
	// "slow" is listed when the first pass found it started; either way
	// it is gone.
	got.Stopped = slices.DeleteFunc(got.Stopped, func(h string) bool { return h == "slow" })
	if d := cmp.Diff(proto.CleanupResult{Stopped: []string{"a", "b", "rx"}, DevicesDeleted: []string{}}, sorted(got)); d != "" {
		t.Errorf("release (-want +got):\n%s", d)
	}
	for _, pid := range []int{a.PID, b.PID, slowPID} {
		waitGone(t, pid)
	}

	for _, id := range []uint64{again, ping} {
		at, env := w.response(id)
		if at < relAt {
			t.Errorf("request %d sent after the release was answered at line %d, before the release (line %d)", id, at, relAt)
		}
		if env.Error != nil {
			t.Errorf("request %d in the next lease: %v", id, env.Error)
		}
	}
	var st proto.ProcStarted
	_, env := w.response(again)
	if err := json.Unmarshal(env.Result, &st); err != nil || processGone(st.PID) {
		t.Fatalf("proc.start \"a\" in the next lease: %s (%v), want running", env.Result, err)
	}
	res, _, _ := w.release()
	if d := cmp.Diff(proto.CleanupResult{Stopped: []string{"a"}, DevicesDeleted: []string{}}, sorted(res)); d != "" {
		t.Errorf("second release (-want +got):\n%s", d)
	}
}

// TestEOFAfterRelease: the end of input still undoes the lease that was
// running, as it does without releases; the log names what each release
// and the end stopped.
func TestEOFAfterRelease(t *testing.T) {
	var log bytes.Buffer // written by Serve's goroutine, read once Serve has returned
	w := startWire(t, Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "p", Argv: []string{"sleep", "1000"}}, nil)
	w.release()
	var st proto.ProcStarted
	w.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "q", Argv: []string{"sleep", "1000"}}, &st)
	if err := w.close(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	waitGone(t, st.PID)

	type record struct {
		Msg       string   `json:"msg"`
		Processes []string `json:"processes"`
	}
	var got []record
	for l := range strings.Lines(log.String()) {
		var r record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if r.Msg == "released" || r.Msg == "stopped" {
			got = append(got, r)
		}
	}
	want := []record{{"released", []string{"p"}}, {"stopped", []string{"q"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("log records of releases and the end (-want +got):\n%s", d)
	}
}

// TestReleaseRealProcess: the rlab-agent serve loop as its own process on
// pipes, as an SSH session runs it: a release leaves it running (no exit, no
// second hello), and the end of input still ends it with status 0.
func TestReleaseRealProcess(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	in, out, done := helperServe(t, cmd, t.TempDir())
	c := newClient(t, in, out, done)
	for lease := range 3 {
		var st proto.ProcStarted
		c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "w", Argv: []string{"sleep", "1000"}}, &st)
		var res proto.CleanupResult
		c.mustCall(proto.MethodRelease, nil, &res)
		if d := cmp.Diff(proto.CleanupResult{Stopped: []string{"w"}, DevicesDeleted: []string{}}, res); d != "" {
			t.Errorf("lease %d: release (-want +got):\n%s", lease, d)
		}
		waitGone(t, st.PID)
	}
	var st proto.ProcStarted
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "last", Argv: []string{"sleep", "1000"}}, &st)
	if err := c.close(); err != nil {
		t.Errorf("agent exit after releases and EOF: %v, want status 0", err)
	}
	waitGone(t, st.PID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.stray) != 0 {
		t.Errorf("lines without a request (a second hello?): %+v", c.stray)
	}
}

func TestReleaseRequest(t *testing.T) {
	tests := []struct {
		line   string
		wantID uint64
		want   bool
	}{
		{`{"id":3,"method":"release"}`, 3, true},
		{`{"id":4,"method":"release","params":{"keep":["x"]}}`, 4, true},
		{`{"method":"release","id":5}`, 5, true},
		{`{"id":6,"method":"\u0072elease"}`, 6, true},
		{`{"id":7,"Method":"release"}`, 7, true}, // as encoding/json matches keys
		{`{"id":8,"method":"ping","params":{"handle":"release"}}`, 0, false},
		{`{"id":9,"method":"release.all"}`, 0, false},
		{`{"id":"x","method":"release"}`, 0, false}, // answered as a bad request
		{`release`, 0, false},
		{`{"id":10,"method":"cleanup"}`, 0, false},
	}
	for _, tt := range tests {
		id, ok := releaseRequest([]byte(tt.line))
		if id != tt.wantID || ok != tt.want {
			t.Errorf("releaseRequest(%s) = %d, %v; want %d, %v", tt.line, id, ok, tt.wantID, tt.want)
		}
	}
}

// FuzzReleaseRequest: the serve loop's quick test agrees with decoding the
// request in full, so no release reaches a handler goroutine and no other
// request is taken for one.
func FuzzReleaseRequest(f *testing.F) {
	for _, s := range []string{`{"id":3,"method":"release"}`, `{"id":6,"method":"\u0072elease"}`,
		`{"id":8,"method":"ping","params":{"handle":"release"}}`, `{"id":1,"method":"proc.start","params":{"handle":"a","argv":["sleep","1"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var req proto.Request
		full := json.Unmarshal(line, &req) == nil && req.Method == proto.MethodRelease
		id, ok := releaseRequest(line)
		if ok != full || ok && id != req.ID {
			t.Errorf("releaseRequest(%q) = %d, %v; a full decode says release=%v id %d", line, id, ok, full, req.ID)
		}
	})
}

// go test -run '^$' -bench 'Release|AgentStart' -count 5 ./agent/server/

// BenchmarkRelease is what a pooled agent costs the next command instead of
// a new agent: one release of an empty lease, over io.Pipe.
func BenchmarkRelease(b *testing.B) {
	c, _ := startAgent(b, Options{})
	for b.Loop() {
		if e := c.call(proto.MethodRelease, nil, nil); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkAgentStart is what BenchmarkRelease replaces, without SSH: a new
// agent process (this test binary as a serve helper) until its hello, then
// EOF until it has exited.
func BenchmarkAgentStart(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for b.Loop() {
		in, out, done := helperServe(b, exec.Command(self), dir)
		if _, err := bufio.NewReader(out).ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		in.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

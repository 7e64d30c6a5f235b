package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// againIndex is the try a handle belongs to: 0 for the first, N for a
// handle ending in ".againN" (".again" is 1).
func againIndex(hd string) int {
	_, tail, ok := strings.Cut(hd, ".again")
	if !ok {
		return 0
	}
	if tail == "" {
		return 1
	}
	n, _ := strconv.Atoi(tail)
	return n
}

// clockHost is an agent whose perftest client fails its first run the way
// perftest does when its CPU clock sample is too noisy on a loaded host.
type clockHost struct {
	name    string
	mu      sync.Mutex
	started []string
	fail    int    // runs left to fail
	tries   int    // runs that fail, as set
	role    string // the end that fails: "client" or "server"
}

func (h *clockHost) Name() string { return h.name }

func (h *clockHost) Send(ctx context.Context, r *rpc.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	result := func(hd string) proto.ProcResult {
		res := proto.ProcResult{Handle: hd}
		switch {
		case strings.Contains(hd, h.role) && h.fail > 0:
			h.fail--
			res.ExitCode, res.Stderr = 1, "Correlation coefficient r^2: 0.193283 < 0.9\nCan't produce a report\n"
		case h.role == "server" && strings.Contains(hd, "client") && againIndex(hd) < h.tries:
			// The client of a server that could not report fails its
			// final exchange (perftest's ethernet_read_keys).
			res.ExitCode, res.Stderr = 1, "ethernet_read_keys: Couldn't read remote address\n Unable to read from socket/rdma_cm\n"
		}
		return res
	}
	if p, res, ok := rpc.Match(r, rpc.ProcStart); ok {
		h.started = append(h.started, p.Handle)
		*res = proto.ProcStarted{Handle: p.Handle, PID: 1}
	} else if p, res, ok := rpc.Match(r, rpc.ProcWait); ok {
		*res = result(p.Handle)
	} else if p, res, ok := rpc.Match(r, rpc.ProcStop); ok {
		*res = result(p.Handle)
	}
	return nil
}

// TestPairClockRetry: a size whose perftest could not measure the CPU clock
// ("Can't produce a report") is run again under new handles, up to
// clockRetries times, and the workload passes once a try reports; a
// failure on every try fails it. Either end may be the one that cannot
// report: a server that cannot also fails its client's final exchange, and
// the run is still taken again. A failure of another kind is not retried.
func TestPairClockRetry(t *testing.T) {
	defer func(p time.Duration) { clockPause = p }(clockPause)
	clockPause = 0
	for _, tt := range []struct {
		role    string
		fails   int
		status  string
		handles []string // the client's handles, in order
	}{
		{role: "client", fails: 0, status: StatusOK, handles: []string{""}},
		{role: "client", fails: 1, status: StatusOK, handles: []string{"", ".again"}},
		{role: "client", fails: 2, status: StatusOK, handles: []string{"", ".again", ".again2"}},
		{role: "client", fails: 3, status: StatusOK, handles: []string{"", ".again", ".again2", ".again3"}},
		{role: "client", fails: 4, status: StatusFailed, handles: []string{"", ".again", ".again2", ".again3"}},
		{role: "server", fails: 1, status: StatusOK, handles: []string{"", ".again"}},
		{role: "server", fails: 4, status: StatusFailed, handles: []string{"", ".again", ".again2", ".again3"}},
	} {
		h := &clockHost{name: "h", fail: tt.fails, tries: tt.fails, role: tt.role}
		var notices []string
		env := &Env{Hosts: map[string]Host{"h": h}, Notify: func(_, m string) { notices = append(notices, m) }}
		w := &Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw"}, ServerHost: "h", ClientHost: "h"}
		w.Sizes = []int64{4096}
		planTrials(w)
		s := &pairWorkload{w: w, build: func(env *Env, u kinds.Planned) (*PairRun, error) {
			size, rep := u.Size, u.Repeat
			return &PairRun{
				Server: ProcSpec{Host: "h", Handle: Handle(w, "server", size, rep), Argv: []string{"ib_write_bw"}, Role: "server"},
				Client: ProcSpec{Host: "h", Handle: Handle(w, "client", size, rep), Argv: []string{"ib_write_bw", "x"}, Role: "client"},
			}, nil
		}}
		err := s.Apply(context.Background(), env)
		name := fmt.Sprintf("%s, %d failures", tt.role, tt.fails)
		if s.out.Status != tt.status {
			t.Errorf("%s: status %q (%v), want %q", name, s.out.Status, err, tt.status)
		}
		base := Handle(w, "client", 4096, 0)
		var clients []string
		for _, hd := range h.started {
			if strings.Contains(hd, "client") {
				clients = append(clients, strings.TrimPrefix(hd, base))
			}
		}
		if !slices.Equal(clients, tt.handles) || len(h.started) != 2*len(tt.handles) {
			t.Errorf("%s: started %q, want a pair under each client handle suffix %q", name, h.started, tt.handles)
		}
		if len(notices) != len(tt.handles)-1 {
			t.Errorf("%s: notices %q, want one per retry", name, notices)
		}
		if tt.status == StatusFailed && tt.role == "client" && (err == nil || !strings.Contains(err.Error(), noClockReport)) {
			t.Errorf("%s: error %v, want the tool's last words", name, err)
		}
	}
}

// partialHost is an agent whose perftest client prints result rows and
// exits with code exit.
type partialHost struct {
	name string
	exit int
}

func (h *partialHost) Name() string { return h.name }

func (h *partialHost) Send(ctx context.Context, r *rpc.Request) error {
	if p, res, ok := rpc.Match(r, rpc.ProcStart); ok {
		*res = proto.ProcStarted{Handle: p.Handle, PID: 1}
	} else if p, res, ok := rpc.Match(r, rpc.ProcWait); ok {
		*res = proto.ProcResult{Handle: p.Handle}
		if strings.Contains(p.Handle, "client") {
			res.ExitCode, res.Stdout = h.exit, " 2  1000  0.000156  0.000144  0.009000\nCompletion with error at client\n"
		}
	} else if p, res, ok := rpc.Match(r, rpc.ProcStop); ok {
		*res = proto.ProcResult{Handle: p.Handle}
	}
	return nil
}

// partialErr stands for toolout.PartialError (steps may not import toolout).
type partialErr struct{}

func (partialErr) Error() string { return "the tool failed after 1 result rows" }

// TestPairKeepsPartialRows: a run that printed rows and then failed (the
// client exited non-zero, or exited 0 and its parser said the run failed
// part-way) fails the workload with the tool's error, and keeps the rows it
// measured as samples marked partial (issue 24: a public ConnectX-3 sweep
// of 12 rows, then "Completion with error", was taken as a success).
func TestPairKeepsPartialRows(t *testing.T) {
	for _, exit := range []int{1, 0} {
		h := &partialHost{name: "h", exit: exit}
		parse := func(tool string, out, stderr []byte, json bool) ([]results.Sample, results.ParseNote, error) {
			if !strings.Contains(string(out), "0.000144") {
				return nil, results.ParseNote{}, nil
			}
			ss := []results.Sample{{Metric: "bw_avg", Value: 0.000144, Unit: "Gb/s", Meta: results.Meta{Size: 2, Extra: map[string]string{"partial": "true"}}}}
			return ss, results.ParseNote{}, partialErr{}
		}
		env := &Env{Hosts: map[string]Host{"h": h}, Parse: parse}
		w := &Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw"}, ServerHost: "h", ClientHost: "h"}
		w.Sizes = []int64{2}
		planTrials(w)
		s := &pairWorkload{w: w, build: func(env *Env, u kinds.Planned) (*PairRun, error) {
			size, rep := u.Size, u.Repeat
			return &PairRun{
				Server: ProcSpec{Host: "h", Handle: Handle(w, "server", size, rep), Argv: []string{"ib_write_bw"}, Role: "server"},
				Client: ProcSpec{Host: "h", Handle: Handle(w, "client", size, rep), Argv: []string{"ib_write_bw", "x"}, Role: "client"},
			}, nil
		}}
		err := s.Apply(context.Background(), env)
		if err == nil || s.out.Status != StatusFailed {
			t.Errorf("exit %d: status %q, error %v: want the workload failed", exit, s.out.Status, err)
		}
		var kept []results.Sample
		for _, smp := range s.out.Samples {
			if smp.Metric == "bw_avg" {
				kept = append(kept, smp)
			}
		}
		if len(kept) != 1 || kept[0].Meta.Extra["partial"] != "true" || kept[0].Meta.Workload != "bw" && kept[0].Meta.Workload != "" {
			t.Errorf("exit %d: samples %+v: want the one measured row kept, marked partial", exit, s.out.Samples)
		}
	}
}

// TestPairHarmlessExit: a client's non-zero exit that its tool says is
// harmless (ProcSpec.Harmless: rping's teardown race) is a clean end; the
// same exit without it fails the workload.
func TestPairHarmlessExit(t *testing.T) {
	for _, harmless := range []bool{true, false} {
		h := &partialHost{name: "h", exit: 255}
		env := &Env{Hosts: map[string]Host{"h": h}}
		w := &Workload{Workload: kinds.Workload{Name: "ping", Slug: "ping", Tool: "rping"}, ServerHost: "h", ClientHost: "h"}
		planTrials(w)
		s := &pairWorkload{w: w, build: func(env *Env, u kinds.Planned) (*PairRun, error) {
			size, rep := u.Size, u.Repeat
			r := &PairRun{
				Server: ProcSpec{Host: "h", Handle: Handle(w, "server", size, rep), Argv: []string{"rping"}, Role: "server"},
				Client: ProcSpec{Host: "h", Handle: Handle(w, "client", size, rep), Argv: []string{"rping", "-c"}, Role: "client"},
			}
			if harmless {
				r.Client.Harmless = func(*proto.ProcResult) string { return "a known teardown race" }
			}
			return r, nil
		}}
		err := s.Apply(context.Background(), env)
		want := StatusOK
		if !harmless {
			want = StatusFailed
		}
		if s.out.Status != want {
			t.Errorf("harmless %v: status %q (%v), want %q", harmless, s.out.Status, err, want)
		}
	}
}

// planTrials gives w the trials a plan would resolve, without argv (the
// tests' builders make their own): each size × repeat with its port.
func planTrials(w *Workload) {
	sizes := w.Sizes
	if len(sizes) == 0 {
		sizes = []int64{0}
	}
	for _, u := range kinds.Trials(&w.Workload, sizes) {
		w.Trials = append(w.Trials, kinds.Planned{Trial: u, Port: kinds.PortFor(w.Index, 0, u.N)})
	}
}

// stallHost is an agent whose client never exits (rping over siw stalled).
// stallHost: every process starts and is never done; with serverStuck, the
// server's start (its readiness wait) never answers either.
type stallHost struct {
	name        string
	serverStuck bool
}

func (h *stallHost) Name() string { return h.name }

func (h *stallHost) Send(ctx context.Context, r *rpc.Request) error {
	if p, res, ok := rpc.Match(r, rpc.ProcStart); ok {
		if h.serverStuck && strings.Contains(p.Handle, "server") {
			<-ctx.Done()
			return ctx.Err()
		}
		*res = proto.ProcStarted{Handle: p.Handle, PID: 1}
	} else if p, res, ok := rpc.Match(r, rpc.ProcWait); ok {
		<-ctx.Done()
		*res = proto.ProcResult{Handle: p.Handle}
		return ctx.Err()
	} else if p, res, ok := rpc.Match(r, rpc.ProcStop); ok {
		*res = proto.ProcResult{Handle: p.Handle, Signal: "killed"}
	}
	return nil
}

// TestPairStallNamed: a trial that runs into its timeout while both ends
// run says first what its family knows such a stall to be (PairRun.Stall:
// rping over siw), and is still a timeout; without Stall the error is as
// before, and a server whose start never ended (its readiness wait: the
// client never ran) is no such stall (review finding).
func TestPairStallNamed(t *testing.T) {
	for _, tc := range []struct {
		stall       string
		serverStuck bool
		named       bool
	}{
		{"rping over siw stalled: a known stall", false, true},
		{"", false, false},
		{"rping over siw stalled: a known stall", true, false},
	} {
		stall := tc.stall
		env := &Env{Hosts: map[string]Host{"h": &stallHost{name: "h", serverStuck: tc.serverStuck}}}
		w := &Workload{Workload: kinds.Workload{Name: "ping", Slug: "ping", Tool: "rping"}, ServerHost: "h", ClientHost: "h"}
		w.Timeout = 50 * time.Millisecond
		planTrials(w)
		s := &pairWorkload{w: w, build: func(env *Env, u kinds.Planned) (*PairRun, error) {
			return &PairRun{
				Server: ProcSpec{Host: "h", Handle: Handle(w, "server", u.Size, u.Repeat), Argv: []string{"rping"}, Role: "server"},
				Client: ProcSpec{Host: "h", Handle: Handle(w, "client", u.Size, u.Repeat), Argv: []string{"rping", "-c"}, Role: "client"},
				Stall:  stall,
			}, nil
		}}
		err := s.Apply(context.Background(), env)
		if s.out.Status != StatusTimedOut || !errors.Is(err, ErrTimedOut) {
			t.Errorf("stall %q: status %q (%v), want a timeout", stall, s.out.Status, err)
		}
		if named := err != nil && stall != "" && strings.Contains(err.Error(), stall); named != tc.named {
			t.Errorf("stall %q, server stuck %v: error %v: named %v, want %v", stall, tc.serverStuck, err, named, tc.named)
		}
	}
}

// lossyHost is an agent whose processes never end on their own: a wait
// returns only when its call's context does. Its Lost channel is the
// test's to close (steps.Lossy).
type lossyHost struct {
	name string
	lost chan struct{}
}

func (h *lossyHost) Name() string          { return h.name }
func (h *lossyHost) Lost() <-chan struct{} { return h.lost }
func (h *lossyHost) LostErr() error {
	return fmt.Errorf("agent on host %q lost: %w: its session ended", h.name, rpc.ErrLost)
}

func (h *lossyHost) Send(ctx context.Context, r *rpc.Request) error {
	if p, res, ok := rpc.Match(r, rpc.ProcStart); ok {
		*res = proto.ProcStarted{Handle: p.Handle, PID: 1}
	} else if _, _, ok := rpc.Match(r, rpc.ProcWait); ok {
		<-ctx.Done()
		return ctx.Err()
	} else if p, res, ok := rpc.Match(r, rpc.ProcStop); ok {
		*res = proto.ProcResult{Handle: p.Handle, Stopped: true}
	}
	return nil
}

// TestPairEndsWhenItsServerIsLost: the server's agent is lost while the
// client runs (CI's failed stop 36: the server VM's kernel panicked, and
// the client waited out its 5 minute timeout). The client's wait ends at
// once with the server host's loss, which wraps rpc.ErrLost (engine/run
// counts it as infrastructure), and is not a timeout. A client host's own
// loss is its wait's own error; a host that cannot say it is lost is not
// watched.
func TestPairEndsWhenItsServerIsLost(t *testing.T) {
	srv := &lossyHost{name: "server", lost: make(chan struct{})}
	cli := &lossyHost{name: "client", lost: make(chan struct{})}
	env := &Env{Hosts: map[string]Host{"server": srv, "client": cli}}
	w := &Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw"}, ServerHost: "server", ClientHost: "client"}
	w.Timeout = 10 * time.Minute
	w.Sizes = []int64{512}
	planTrials(w)
	s := &pairWorkload{w: w, build: func(env *Env, u kinds.Planned) (*PairRun, error) {
		return &PairRun{
			Server: ProcSpec{Host: "server", Handle: Handle(w, "server", u.Size, u.Repeat), Argv: []string{"ib_write_bw"}, Role: "server"},
			Client: ProcSpec{Host: "client", Handle: Handle(w, "client", u.Size, u.Repeat), Argv: []string{"ib_write_bw", "server"}, Role: "client"},
		}, nil
	}}
	time.AfterFunc(50*time.Millisecond, func() { close(srv.lost) })
	done := make(chan error, 1)
	go func() { done <- s.Apply(context.Background(), env) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the client's wait did not end when its server's agent was lost")
	}
	if !errors.Is(err, rpc.ErrLost) || !errors.Is(err, errPeerLost) {
		t.Errorf("error %v, want the server host's loss (rpc.ErrLost)", err)
	}
	if errors.Is(err, ErrTimedOut) || s.out.Status != StatusFailed {
		t.Errorf("status %q, error %v: want a failure, not a timeout", s.out.Status, err)
	}
	if err == nil || !strings.Contains(err.Error(), `host "server"`) {
		t.Errorf("error %v does not name the server's host", err)
	}
}

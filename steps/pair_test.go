package steps

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// clockHost is an agent whose perftest client fails its first run the way
// perftest does when its CPU clock sample is too noisy on a loaded host.
type clockHost struct {
	name    string
	mu      sync.Mutex
	started []string
	fail    int // client runs left to fail
}

func (h *clockHost) Name() string { return h.name }

func (h *clockHost) Call(ctx context.Context, method string, params, result any) error {
	b, _ := json.Marshal(params)
	var p struct{ Handle string }
	_ = json.Unmarshal(b, &p)
	h.mu.Lock()
	defer h.mu.Unlock()
	var out any
	switch method {
	case proto.MethodProcStart:
		h.started = append(h.started, p.Handle)
		out = proto.ProcStarted{Handle: p.Handle, PID: 1}
	case proto.MethodProcWait, proto.MethodProcStop:
		r := proto.ProcResult{Handle: p.Handle}
		if strings.Contains(p.Handle, "client") && h.fail > 0 {
			h.fail--
			r.ExitCode, r.Stderr = 1, "Correlation coefficient r^2: 0.193283 < 0.9\nCan't produce a report\n"
		}
		out = r
	default:
		return nil
	}
	b, _ = json.Marshal(out)
	return json.Unmarshal(b, result)
}

// TestPairClockRetry: a size whose perftest could not measure the CPU clock
// ("Can't produce a report") is run once more under new handles and the
// workload passes; a second such failure fails it.
func TestPairClockRetry(t *testing.T) {
	for _, tt := range []struct {
		fails   int
		status  string
		started int
	}{
		{fails: 1, status: StatusOK, started: 4},
		{fails: 2, status: StatusFailed, started: 4},
		{fails: 0, status: StatusOK, started: 2},
	} {
		h := &clockHost{name: "h", fail: tt.fails}
		var notices []string
		env := &Env{Hosts: map[string]Host{"h": h}, Notify: func(_, m string) { notices = append(notices, m) }}
		w := &Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw", ServerHost: "h", ClientHost: "h"}
		w.Sizes = []int64{4096}
		s := &pairWorkload{w: w, build: func(env *Env, size int64, rep, n int) (*pairRun, error) {
			return &pairRun{
				Server: procSpec{Host: "h", Handle: handle(w, "server", size, rep), Argv: []string{"ib_write_bw"}, Role: "server"},
				Client: procSpec{Host: "h", Handle: handle(w, "client", size, rep), Argv: []string{"ib_write_bw", "x"}, Role: "client"},
			}, nil
		}}
		err := s.Apply(context.Background(), env)
		if s.out.Status != tt.status {
			t.Errorf("%d failures: status %q (%v), want %q", tt.fails, s.out.Status, err, tt.status)
		}
		if len(h.started) != tt.started {
			t.Errorf("%d failures: started %q, want %d processes", tt.fails, h.started, tt.started)
		}
		if tt.fails > 0 && (len(h.started) < 4 || !strings.HasSuffix(h.started[2], ".again") || len(notices) != 1) {
			t.Errorf("%d failures: started %q, notices %q: want the size run again under new handles, said once", tt.fails, h.started, notices)
		}
	}
}

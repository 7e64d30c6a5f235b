package tcp

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// callHost is an agent that records the methods it is asked.
type callHost struct {
	name  string
	mu    sync.Mutex
	calls []string
}

func (h *callHost) Name() string { return h.name }

func (h *callHost) Send(ctx context.Context, r *rpc.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, r.Method())
	if p, res, ok := rpc.Match(r, rpc.TCPServe); ok {
		*res = proto.TCPServing{Port: p.Port}
	} else if p, res, ok := rpc.Match(r, rpc.TCPSend); ok {
		*res = proto.TCPResult{Bytes: p.Bytes, Gbps: 1}
	} else if _, res, ok := rpc.Match(r, rpc.TCPWait); ok {
		*res = proto.TCPResult{}
	}
	return nil
}

// TestFillBeforeServe: a planned argv with a placeholder the run cannot
// fill stops the workload before the server side listens (SECURITY.md:
// before any process starts); a good one serves and sends.
func TestFillBeforeServe(t *testing.T) {
	for _, tc := range []struct {
		name      string
		client    []string
		wantErr   string
		wantCalls int
	}{
		{"filled", nil, "", 1},
		{"unknown placeholder", []string{"tcp.send", "\x00client.addr\x00", "5000", "1024"}, "unknown placeholder", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &steps.Workload{Workload: kinds.Workload{Name: "t", Slug: "t", Tool: "tcp", Options: kinds.Options{Bytes: 1024}},
				ServerHost: "s", ClientHost: "c", ServerAddr: "10.0.0.1"}
			in := kinds.ArgvIn{W: &w.Workload, Port: 5000, Addr: kinds.ServerAddr}
			srv, cli := Kind{}.Argv(in) // as engine/plan resolves it
			if tc.client != nil {
				cli = tc.client
			}
			w.Trials = []kinds.Planned{{Port: 5000, Server: srv, Client: cli}}
			sh, ch := &callHost{name: "s"}, &callHost{name: "c"}
			env := &steps.Env{Hosts: map[string]steps.Host{"s": sh, "c": ch}}
			op, err := newOp(w)
			if err != nil {
				t.Fatal(err)
			}
			err = op.Apply(context.Background(), env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			served := 0
			for _, m := range sh.calls {
				if m == rpc.TCPServe.Name {
					served++
				}
			}
			if served != tc.wantCalls {
				t.Errorf("tcp.serve asked %d times (%q), want %d", served, sh.calls, tc.wantCalls)
			}
		})
	}
}

package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
)

// dialHost is the real in-process agent with a stand-in for rdma_rxe (this
// machine has none) whose rxe devices report the IPv4 address of their
// netdev from ipv4 (the agent's answer on a real host), and a record of the
// address each tcp.send dialed.
type dialHost struct {
	Host
	ipv4   map[string]string // netdev -> its IPv4 ("" = none)
	mu     *sync.Mutex
	dialed *[]string
}

func (h *dialHost) Send(ctx context.Context, req *rpc.Request) error {
	if p, res, ok := rpc.Match(req, rpc.DeviceEnsure); ok {
		*res = proto.DeviceInfo{Name: p.Name, Netdev: p.Netdev, Port: 1, GIDIndex: 1, IPv4: h.ipv4[p.Netdev], ActiveMTU: 1024, Created: true}
		return nil
	}
	if _, _, ok := rpc.Match(req, rpc.DeviceDelete); ok {
		return nil
	}
	if p, _, ok := rpc.Match(req, rpc.TCPSend); ok && (p.Bytes > 0 || p.DurationMs > 0) { // not the link probe's 0 bytes
		h.mu.Lock()
		*h.dialed = append(*h.dialed, fmt.Sprintf("%s:%d", p.Addr, p.Port))
		h.mu.Unlock()
	}
	return h.Host.Send(ctx, req)
}

// TestTCPDialsTheDataNetwork: a tcp workload on SSH hosts dials the IPv4 of
// the server host's rxe netdev (the link the RDMA workloads cross), not the
// host's SSH address; the first rxe in file order when the host has several;
// the SSH address when it has none, saying so; and a clear error when the
// rxe's netdev has no IPv4. The results record the address and why.
func TestTCPDialsTheDataNetwork(t *testing.T) {
	const tcp = `
workload "tcp" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
`
	tests := []struct {
		name     string
		rxes     string
		only     []string
		ipv4     map[string]string
		wantAddr string // dialed, and in the sample's server_addr
		wantFrom string
		wantErr  string // the workload's error instead
	}{
		{name: "rxe on the server", rxes: `rxe "s" {
  host   = host.a
  netdev = "data0"
}
rxe "c" {
  host   = host.b
  netdev = "data0"
}
`, ipv4: map[string]string{"data0": "127.0.0.2"}, wantAddr: "127.0.0.2", wantFrom: "rxe s's netdev"},
		{name: "only the tcp still creates the rxe it dials", only: []string{"tcp"}, rxes: `rxe "s" {
  host   = host.a
  netdev = "data0"
}
`, ipv4: map[string]string{"data0": "127.0.0.2"}, wantAddr: "127.0.0.2", wantFrom: "rxe s's netdev"},
		{name: "several: the first in file order", rxes: `rxe "c" {
  host   = host.b
  netdev = "data0"
}
rxe "s2" {
  host   = host.a
  netdev = "data1"
}
rxe "s" {
  host   = host.a
  netdev = "data0"
}
`, ipv4: map[string]string{"data0": "127.0.0.2", "data1": "127.0.0.3"}, wantAddr: "127.0.0.3", wantFrom: "rxe s2's netdev"},
		{name: "no rxe on the server: its SSH address", rxes: `rxe "c" {
  host   = host.b
  netdev = "data0"
}
`, ipv4: map[string]string{"data0": "127.0.0.2"}, wantAddr: "127.0.0.1", wantFrom: "SSH address: no rxe on host a"},
		{name: "the rxe's netdev has no IPv4", rxes: `rxe "s" {
  host   = host.a
  netdev = "data0"
}
`, ipv4: map[string]string{}, wantErr: `workload "tcp" (tcp): rxe "s" on host "a" has no IPv4 address on data0 for the client to reach`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bed := newPipeBed(t)
			var mu sync.Mutex
			var dialed []string
			conn := ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
				h, err := bed.Connect(ctx, tg, runID)
				if err != nil {
					return nil, err
				}
				return &dialHost{Host: h, ipv4: tt.ipv4, mu: &mu, dialed: &dialed}, nil
			})
			l := loadLab(t, twoHosts+tt.rxes+tcp)
			res := runPlanned(context.Background(), t, l, plan.Options{Only: tt.only}, Options{Connector: conn, Out: filepath.Join(t.TempDir(), "run"), NoReport: true, Preflight: noPreflight})
			r := readRun(t, res.Dir)
			if tt.wantErr != "" {
				if len(r.Workloads) != 1 || r.Workloads[0].Status != results.StatusFailed || !strings.Contains(r.Workloads[0].Error, tt.wantErr) {
					t.Fatalf("workloads %+v, want failed with %q", r.Workloads, tt.wantErr)
				}
				if len(dialed) != 0 {
					t.Errorf("dialed %v, want nothing", dialed)
				}
				return
			}
			if res.Code != ExitOK {
				t.Fatalf("code %d, err %v", res.Code, res.Err)
			}
			if len(dialed) != 1 || !strings.HasPrefix(dialed[0], tt.wantAddr+":") {
				t.Errorf("tcp.send dialed %v, want [%s:port]", dialed, tt.wantAddr)
			}
			n := 0
			for _, s := range r.Samples {
				if s.Metric != "tcp_bw" {
					continue
				}
				n++
				if s.Meta.Extra["server_addr"] != tt.wantAddr || s.Meta.Extra["server_addr_from"] != tt.wantFrom {
					t.Errorf("sample extra %v, want server_addr %s from %q", s.Meta.Extra, tt.wantAddr, tt.wantFrom)
				}
				// The port the agent's server listened on, which the client
				// dialed: what names the connection in a capture.
				if len(dialed) == 1 && tt.wantAddr+":"+s.Meta.Extra[results.ServerPortExtra] != dialed[0] {
					t.Errorf("sample extra %v, want server_port the dialed %s", s.Meta.Extra, dialed[0])
				}
			}
			if n != 1 {
				t.Errorf("%d tcp_bw samples, want 1", n)
			}
			// The plan the run wrote says where the address comes from.
			var p struct {
				Steps []struct{ ID, Description string }
			}
			b, err := os.ReadFile(filepath.Join(res.Dir, "plan.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, s := range p.Steps {
				if s.ID == "b/workload-client/tcp" {
					found = strings.Contains(s.Description, tt.wantFrom)
					t.Log(s.Description)
				}
			}
			if !found {
				t.Errorf("plan.json: the tcp client step does not say %q", tt.wantFrom)
			}
		})
	}
}

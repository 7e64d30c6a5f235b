package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// fabricKernel stands in for the hosts' RDMA devices: siw and rxe links it
// creates and deletes (by type), and devices that exist before the run
// (found), which rdma.use reports and which must never be deleted.
type fabricKernel struct {
	mu      sync.Mutex
	devs    map[string]string // host/name -> type
	found   map[string]bool
	created []string
	deleted []string
	used    []string // rdma.use calls: host/name:port
}

type fabricHost struct {
	Host
	k *fabricKernel
}

func (h *fabricHost) Send(ctx context.Context, req *rpc.Request) error {
	k := h.k
	if p, res, ok := rpc.Match(req, rpc.DeviceEnsure); ok {
		k.mu.Lock()
		defer k.mu.Unlock()
		typ := p.Type
		if typ == "" {
			typ = "rxe"
		}
		id := h.Name() + "/" + p.Name
		info := proto.DeviceInfo{Name: p.Name, Netdev: p.Netdev, Port: 1, IPv4: "127.0.0.1", ActiveMTU: 1024, Driver: typ, Transport: map[string]string{"rxe": "RoCE", "siw": "iWARP"}[typ]}
		if _, ok := k.devs[id]; !ok {
			k.devs[id] = typ
			k.created = append(k.created, id+" ("+typ+")")
			info.Created = true
		}
		*res = info
		return nil
	}
	if p, res, ok := rpc.Match(req, rpc.RDMAUse); ok {
		k.mu.Lock()
		defer k.mu.Unlock()
		id := h.Name() + "/" + p.Name
		k.used = append(k.used, fmt.Sprintf("%s:%d", id, p.Port))
		if !k.found[id] {
			return &proto.Error{Code: proto.CodeNotFound, Message: "use RDMA device " + p.Name + ": no such device"}
		}
		*res = proto.DeviceInfo{Name: p.Name, Netdev: "lo", Port: p.Port, GIDIndex: 3, IPv4: "127.0.0.1", ActiveMTU: 4096, Driver: "hw", Transport: "RoCE"}
		return nil
	}
	if p, _, ok := rpc.Match(req, rpc.DeviceDelete); ok {
		k.mu.Lock()
		defer k.mu.Unlock()
		id := h.Name() + "/" + p.Name
		k.deleted = append(k.deleted, id)
		delete(k.devs, id)
		return nil
	}
	return h.Host.Send(ctx, req)
}

func fabricConnector(bed *pipeBed, k *fabricKernel) Connector {
	return ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
		h, err := bed.Connect(ctx, tg, runID)
		if err != nil {
			return nil, err
		}
		return &fabricHost{Host: h, k: k}, nil
	})
}

// TestRunSIWAndFoundDevice: a siw block's device is created with type siw
// and deleted after the run; an rdma block's device is used (rdma.use with
// its port), journaled as found, and never deleted: not by the run, not by
// `rlab down` on a run whose teardown did not happen.
func TestRunSIWAndFoundDevice(t *testing.T) {
	const src = twoHosts + `
siw "iw" {
  host   = host.a
  netdev = "lo"
}
rdma "nic" {
  host   = host.b
  device = "mlx5_0"
  port   = 2
}
siw "kept" {
  host   = host.b
  netdev = "lo"
  name   = "iw_keep"
  keep   = true
}
workload "x" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`
	k := &fabricKernel{devs: map[string]string{"b/mlx5_0": "hw"}, found: map[string]bool{"b/mlx5_0": true}}
	out := filepath.Join(t.TempDir(), "r")
	res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: fabricConnector(newPipeBed(t), k), Out: out, NoReport: true, Preflight: noPreflight})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	slices.Sort(k.created)
	if want := []string{"a/siw_lo (siw)", "b/iw_keep (siw)"}; !slices.Equal(k.created, want) {
		t.Errorf("created %v, want %v", k.created, want)
	}
	if want := []string{"b/mlx5_0:2"}; !slices.Equal(k.used, want) {
		t.Errorf("rdma.use calls %v, want %v", k.used, want)
	}
	if want := []string{"a/siw_lo"}; !slices.Equal(k.deleted, want) {
		t.Errorf("deleted %v, want %v (never the found device, nor the kept one)", k.deleted, want)
	}
	st := readState(t, out)
	var found, siw bool
	for _, e := range st.Effects {
		switch e.ID {
		case "mlx5_0":
			found = true
			if e.Created || e.Undone || e.Pending {
				t.Errorf("found device journaled %+v; want found (not created), not undone", e)
			}
		case "siw_lo":
			siw = siw || (e.Created && e.Undone)
		}
	}
	if !found || !siw {
		t.Errorf("journal: found device %v, siw created and undone %v: %+v", found, siw, st.Effects)
	}

	// A run whose teardown never happened: rlab down deletes the siw
	// device it created, and leaves the found one.
	j, err := runstate.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Update(func(s *runstate.State) {
		s.TornDown = nil
		for i := range s.Effects {
			s.Effects[i].Undone = false
		}
	}); err != nil {
		t.Fatal(err)
	}
	k.deleted = nil
	k.devs["a/siw_lo"] = "siw"
	dres, err := Down(context.Background(), out, DownOptions{Connector: fabricConnector(newPipeBed(t), k)})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	if want := []string{"a/siw_lo"}; !slices.Equal(k.deleted, want) {
		t.Errorf("down deleted %v, want %v (undone %v)", k.deleted, want, dres.Undone)
	}
	if _, ok := k.devs["b/mlx5_0"]; !ok {
		t.Error("the found device is gone")
	}
}

// TestRunFoundDeviceMissing: a device an rdma block names that the host does
// not have fails the run with the host, device and port named.
func TestRunFoundDeviceMissing(t *testing.T) {
	const src = twoHosts + `
rdma "nic" {
  host   = host.b
  device = "mlx5_9"
}
workload "x" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`
	k := &fabricKernel{devs: map[string]string{}, found: map[string]bool{}}
	res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: fabricConnector(newPipeBed(t), k), Out: filepath.Join(t.TempDir(), "r"), NoReport: true, Preflight: noPreflight})
	if res.Code == ExitOK || res.Err == nil {
		t.Fatalf("code %d, err %v: want a failure", res.Code, res.Err)
	}
	for _, want := range []string{`"mlx5_9"`, "port 1", `host "b"`, "no such device"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q lacks %q", res.Err, want)
		}
	}
	if len(k.deleted) != 0 {
		t.Errorf("deleted %v", k.deleted)
	}
}

package rping

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/steps"
)

// The rping server is ready when its rdma_cm id listens; over siw also when
// siw's TCP socket listens on the port (IWARP), which rxe never asks.
func TestServerReady(t *testing.T) {
	for _, tc := range []struct {
		transport string
		want      proto.Ready
	}{
		{"RoCE", proto.Ready{RDMACMListen: 7174}},
		{"", proto.Ready{RDMACMListen: 7174}},
		{"InfiniBand", proto.Ready{RDMACMListen: 7174}},
		{"iWARP", proto.Ready{RDMACMListen: 7174, IWARP: true}},
	} {
		d := &proto.DeviceInfo{Transport: tc.transport}
		if got := serverReady(steps.RDMAEnd{Server: d, Client: d, Port: 7174}); *got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.transport, *got, tc.want)
		}
	}
}

// A timed-out rping names siw's known stall when an end is iWARP (with the
// server's kernel when its facts say it), and nothing over rxe.
func TestSIWStallNamed(t *testing.T) {
	w := &steps.Workload{}
	w.ServerHost = "server"
	env := &steps.Env{Facts: map[string]*proto.Facts{"server": {Kernel: "6.1.0-28-amd64"}}}
	siw, rxe := &proto.DeviceInfo{Transport: "iWARP"}, &proto.DeviceInfo{Transport: "RoCE"}
	if got := siwStall(env, w, steps.RDMAEnd{Server: rxe, Client: rxe}); got != "" {
		t.Errorf("rxe: %q, want none", got)
	}
	got := siwStall(env, w, steps.RDMAEnd{Server: siw, Client: siw})
	for _, want := range []string{"known stall of siw", "6.1.0-28-amd64", "unread in the server's siw TCP socket", "run it again"} {
		if !strings.Contains(got, want) {
			t.Errorf("siw: %q lacks %q", got, want)
		}
	}
}

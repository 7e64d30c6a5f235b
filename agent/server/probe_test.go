package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestDefaultProbes: the agent's own list (for a request that names no
// programs) is well formed and holds no workload tool: those come from the
// controller (engine/remote.FactsParams).
func TestDefaultProbes(t *testing.T) {
	ps, err := newProbeSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rdma", "ibv_devinfo", "ibv_devices", "tcpdump", "modprobe"}
	if got := ps.names(); !slices.Equal(got, want) {
		t.Errorf("default probes %v, want %v", got, want)
	}
	for _, n := range []string{"rdma", "tcpdump", "modprobe"} {
		if _, ok := ps.versions[n]; !ok {
			t.Errorf("%s: not asked its version", n)
		}
	}
}

// TestProbeListChecked: a probe list naming a path or carrying a bad
// pattern is a bad request, not a program run.
func TestProbeListChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe proto.Probe
		want  string
	}{
		{"path", proto.Probe{Name: "/bin/sh"}, "not a program name"},
		{"dotdot", proto.Probe{Name: ".."}, "not a program name"},
		{"empty", proto.Probe{}, "not a program name"},
		{"pattern", proto.Probe{Name: "x", Args: []string{"-V"}, Pattern: "("}, "version pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newProbeSet([]proto.Probe{tc.probe})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newProbeSet(%+v) = %v, want an error with %q", tc.probe, err, tc.want)
			}
			s := &Server{}
			params, _ := json.Marshal(proto.FactsParams{Probe: []proto.Probe{tc.probe}})
			if _, err := s.facts(context.Background(), nil, params); err == nil {
				t.Errorf("facts with probe %+v: no error", tc.probe)
			}
		})
	}
}

// TestProbeListFollowed: the agent looks for exactly the programs the
// request names (here one that every host has and one no host has).
func TestProbeListFollowed(t *testing.T) {
	ps, err := newProbeSet([]proto.Probe{{Name: "sh"}, {Name: "rlab-no-such-program"}})
	if err != nil {
		t.Fatal(err)
	}
	tools, _, _ := collectToolsOpt(context.Background(), toolsOptions{probes: ps})
	var got []string
	for n := range tools {
		got = append(got, n)
	}
	if !slices.Equal(got, []string{"sh"}) {
		t.Errorf("found %v, want [sh]", got)
	}
}

package tcp

import (
	"math"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// TestNewStep: the plan's line says where the client dials and how much
// it sends; a tcp workload without a server is refused.
func TestNewStep(t *testing.T) {
	w := steps.Workload{Workload: kinds.Workload{Name: "base", Tool: "tcp"}, ServerHost: "a", ClientHost: "b", DialDevice: "ra"}
	s, err := Kind{}.NewOp(&w)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Describe(), "tcp base: host a (server) <- host b (client) at the IPv4 of rxe ra's netdev, 1GiB"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	if _, err := (Kind{}).NewOp(&steps.Workload{Workload: kinds.Workload{Name: "x", Tool: "tcp"}}); err == nil || !strings.Contains(err.Error(), "no server host") {
		t.Errorf("no server: err = %v", err)
	}
}

// TestDesc: throughput is one metric in Gb/s; its old MiB/s expect name
// reads it scaled (1 Gb/s = 10^9/8/2^20 MiB/s), and the retired MiB/s metric
// maps to it.
func TestDesc(t *testing.T) {
	d := Kind{}.Desc()
	if len(d.Metrics) != 1 || d.Metrics[0].Name != "tcp_bw" || d.Metrics[0].Unit != "Gb/s" {
		t.Fatalf("metrics %+v", d.Metrics)
	}
	var scale float64
	for _, a := range d.Metrics[0].Aliases {
		if a.Name == "tcp_mibps" {
			scale = a.Scale
		}
	}
	if math.Abs(scale-119.20928955078125) > 1e-9 {
		t.Errorf("tcp_mibps scale %v, want 119.209 (MiB/s per Gb/s)", scale)
	}
	if d.Retired["tcp_bw_mib"] != "tcp_bw" {
		t.Errorf("retired %v", d.Retired)
	}
}

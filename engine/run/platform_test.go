package run

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestPlatforms: the run records once per host what it ran on, for every
// host a workload or sample names; a host without facts gets an empty entry,
// so every host a sample names is a key.
func TestPlatforms(t *testing.T) {
	facts := map[string]*proto.Facts{
		"server": {Kernel: "6.8.0-1015-aws", Platform: proto.Platform{Virtualization: "amazon", Vendor: "Amazon EC2", Product: "c5.large",
			CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz", DistroID: "ubuntu", DistroIDLike: []string{"debian"}, DistroVersion: "22.04", RDMACore: "39.0"}},
	}
	doc := &results.Run{
		Workloads: []results.Workload{{Name: "probe", Hosts: []string{"probe"}}},
		Samples: []results.Sample{
			{Metric: "bw_avg", Meta: results.Meta{Hosts: []string{"server", "client"}}},
			{Metric: "bw_avg", Meta: results.Meta{Hosts: []string{"server", "client"}}},
			{Metric: "wall_time", Meta: results.Meta{}},
		},
	}
	want := map[string]results.Platform{
		"server": {Virtualization: "amazon", Vendor: "Amazon EC2", Product: "c5.large", CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz",
			Kernel: "6.8.0-1015-aws", Distro: "ubuntu 22.04", RDMACore: "39.0"},
		"client": {},
		"probe":  {},
	}
	if d := cmp.Diff(want, platforms(doc, facts)); d != "" {
		t.Errorf("platforms (-want +got):\n%s", d)
	}
	if got := platforms(&results.Run{}, facts); got != nil {
		t.Errorf("a run naming no host got platforms %v", got)
	}
}

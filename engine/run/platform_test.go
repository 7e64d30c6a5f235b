package run

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestAddPlatforms: each sample records, parallel to its hosts, what each
// host ran on; a host without facts keeps only its name.
func TestAddPlatforms(t *testing.T) {
	facts := map[string]*proto.Facts{
		"server": {Kernel: "6.8.0-1015-aws", Platform: proto.Platform{Virtualization: "amazon", Vendor: "Amazon EC2", Product: "c5.large",
			CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz", DistroID: "ubuntu", DistroIDLike: []string{"debian"}, DistroVersion: "22.04", RDMACore: "39.0"}},
	}
	ss := []results.Sample{
		{Metric: "bw_avg", Meta: results.Meta{Hosts: []string{"server", "client"}}},
		{Metric: "wall_time", Meta: results.Meta{}},
	}
	addPlatforms(ss, facts)
	want := []results.Platform{
		{Host: "server", Virtualization: "amazon", Vendor: "Amazon EC2", Product: "c5.large", CPUModel: "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz",
			Kernel: "6.8.0-1015-aws", Distro: "ubuntu 22.04", RDMACore: "39.0"},
		{Host: "client"},
	}
	if d := cmp.Diff(want, ss[0].Meta.Platforms); d != "" {
		t.Errorf("platforms (-want +got):\n%s", d)
	}
	if ss[1].Meta.Platforms != nil {
		t.Errorf("a sample without hosts got platforms %v", ss[1].Meta.Platforms)
	}
}

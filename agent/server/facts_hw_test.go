package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/sysfs/*/facts.golden.json")

// hwFacts is what facts make of one recorded tree: the devices as the
// facts method reports them, and the transport each port is used with
// (what the rdma block and preflight go by).
type hwFacts struct {
	Devices    []proto.RDMADevice `json:"devices"`
	Transports map[string]string  `json:"transports"` // "device/port" -> RoCE, InfiniBand, iWARP or unspecified
}

// useSysfs points the agent's sysfs roots at a recorded tree.
func useSysfs(t *testing.T, dir string) {
	t.Helper()
	oldIB, oldNet := sysClassIB, sysClassNet
	sysClassIB, sysClassNet = filepath.Join(dir, "class", "infiniband"), filepath.Join(dir, "class", "net")
	t.Cleanup(func() { sysClassIB, sysClassNet = oldIB, oldNet })
}

// TestFactsOfHardware reads the recorded sysfs trees of irdma (RoCE and
// iWARP), bnxt_re and efa (testdata/sysfs; testdata/sysfs/SOURCES says where
// each value came from) and compares what facts make of them with
// facts.golden.json (-update rewrites it). Beside the golden, what each
// tree must show: efa's port is neither RoCE nor InfiniBand (link layer
// "Unknown"), irdma's LID 1 on an Ethernet port is not reported, unused
// (zero) GID slots are left out.
func TestFactsOfHardware(t *testing.T) {
	cases, err := filepath.Glob("testdata/sysfs/*/class")
	if err != nil || len(cases) < 3 {
		t.Fatalf("found %d recorded trees (%v), want irdma, bnxt_re and efa", len(cases), err)
	}
	for _, c := range cases {
		dir := filepath.Dir(c)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			useSysfs(t, dir)
			devs, err := readRDMADevices()
			if err != nil {
				t.Fatal(err)
			}
			got := hwFacts{Devices: devs, Transports: map[string]string{}}
			for _, d := range devs {
				for _, p := range d.Ports {
					got.Transports[fmt.Sprintf("%s/%d", d.Name, p.Port)] = portTransport(d, p)
				}
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetIndent("", "  ")
			if err := enc.Encode(got); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, "facts.golden.json")
			if *updateGolden {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestFactsOfHardware -update writes it)", err)
			}
			if d := cmp.Diff(string(want), b.String()); d != "" {
				t.Errorf("%s (-want +got):\n%s", golden, d)
			}
			for _, d := range devs {
				for _, p := range d.Ports {
					if p.LinkLayer == "Ethernet" && p.LID != 0 {
						t.Errorf("%s port %d: LID %d on an Ethernet port", d.Name, p.Port, p.LID)
					}
					for _, g := range p.GIDs {
						if g.GID == "::" {
							t.Errorf("%s port %d: a zero GID slot kept", d.Name, p.Port)
						}
					}
				}
			}
		})
	}
}

// TestUseEFA: an rdma block naming an EFA device gets an error that says
// what the device is and why rlab's workloads cannot use it, not a RoCE
// GID hint ("give its netdev an IPv4 address") that cannot help.
func TestUseEFA(t *testing.T) {
	useSysfs(t, "testdata/sysfs/efa")
	_, err := useDevice("efa_0", 1)
	var pe *proto.Error
	if err == nil || !errors.As(err, &pe) || pe.Code != proto.CodeUnsupported {
		t.Fatalf("use efa_0: %v, want %s", err, proto.CodeUnsupported)
	}
	for _, w := range []string{`"efa_0" port 1`, "link layer Unknown", "node type UNSPECIFIED", "neither RoCE, InfiniBand nor iWARP", "EFA"} {
		if !strings.Contains(pe.Message, w) {
			t.Errorf("error %q lacks %q", pe.Message, w)
		}
	}
	if strings.Contains(pe.Message, "IPv4") {
		t.Errorf("error %q gives the RoCE hint", pe.Message)
	}
}

package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/roce"
)

// TestNamedFilters: a capture's filter may name its purpose; the lab
// model carries the pcap expansion, and tcpdump, given the expansion,
// keeps of a real capture's frames exactly the ones the name promises (as
// engine/roce decodes them): roce-cm the RDMA-CM MADs on QP1, roce-data
// the other RoCEv2 packets, iwarp every TCP frame.
func TestNamedFilters(t *testing.T) {
	dir := t.TempDir()
	labFile := filepath.Join(dir, "lab.hcl")
	src := `lab "t" {
  description = "named capture filters"
}
host "a" {
  address = "192.0.2.1"
  user    = "root"
}
capture "cm" {
  host   = host.a
  netdev = "eth1"
  filter = "roce-cm"
}
capture "raw" {
  host   = host.a
  netdev = "eth1"
  filter = "udp port 4791"
}
`
	if err := os.WriteFile(labFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, diags := Load([]string{labFile}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if c := l.Captures[0]; c.Filter != NamedFilters["roce-cm"] || c.FilterName != "roce-cm" {
		t.Errorf("capture cm: filter %q (%q), want the roce-cm expansion", c.Filter, c.FilterName)
	}
	if c := l.Captures[1]; c.Filter != "udp port 4791" || c.FilterName != "" {
		t.Errorf("capture raw: filter %q (%q), want it as written", c.Filter, c.FilterName)
	}

	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump not installed: the expansions are not checked against captures")
	}
	cases := []struct {
		name, capture string
		keep          func(p *roce.Packet) bool
	}{
		{"roce-cm", "../../testdata/pcap/synth-rc-ud-cm.pcap", func(p *roce.Packet) bool { return p.HasBTH && p.BTH.DestQP == 1 }},
		{"roce-data", "../../testdata/pcap/synth-rc-ud-cm.pcap", func(p *roce.Packet) bool { return p.HasBTH && p.BTH.DestQP != 1 }},
		{"roce-data", "../../testdata/pcap/roce-ib_write_bw-10x4KiB.pcap", func(p *roce.Packet) bool { return p.HasBTH && p.BTH.DestQP != 1 }},
		{"iwarp", "../../testdata/iwarp/iwarp-markers-crc.pcap", func(p *roce.Packet) bool { return p.Proto == roce.ProtoTCP }},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+filepath.Base(tc.capture), func(t *testing.T) {
			var want []int // wire lengths of the frames the name promises, in order
			if _, err := roce.ScanFile(tc.capture, func(p *roce.Packet) error {
				if tc.keep(p) {
					want = append(want, p.WireLen)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatalf("%s has no frame for %s: nothing to check", tc.capture, tc.name)
			}
			out := filepath.Join(t.TempDir(), "out.pcap")
			cmd := exec.Command(tcpdump, "-r", tc.capture, "-w", out, NamedFilters[tc.name])
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tcpdump %q: %v: %s", NamedFilters[tc.name], err, b)
			}
			var got []int
			if _, err := roce.ScanFile(out, func(p *roce.Packet) error {
				if !tc.keep(p) {
					t.Errorf("frame %d (wire %d bytes) kept, which %s should not keep", p.Number, p.WireLen, tc.name)
				}
				got = append(got, p.WireLen)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("tcpdump kept %d frames, want %d", len(got), len(want))
			}
		})
	}
}

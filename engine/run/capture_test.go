package run

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// countTCP returns the TCP packets to or from port in a pcap file.
func countTCP(t *testing.T, path string, port int) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatalf("read pcap %s: %v", path, err)
	}
	// gopacket holds the link type in a uint8: LINUX_SLL2 (276) reads as 20.
	var hdr [24]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		t.Fatal(err)
	}
	sll2 := binary.LittleEndian.Uint32(hdr[20:]) == 276
	n := 0
	for {
		data, _, err := rd.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read pcap %s: %v", path, err)
		}
		var p gopacket.Packet
		if sll2 && len(data) > 20 { // tcpdump -i any: gopacket decodes no LINUX_SLL2
			first := layers.LayerTypeIPv4
			if data[0] == 0x86 && data[1] == 0xdd {
				first = layers.LayerTypeIPv6
			}
			p = gopacket.NewPacket(data[20:], first, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		} else {
			p = gopacket.NewPacket(data, rd.LinkType(), gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		}
		if tcp, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok && (int(tcp.SrcPort) == port || int(tcp.DstPort) == port) {
			n++
		}
	}
	return n
}

// TestRunCaptures runs real tcpdump (through the in-process agent, on lo)
// around a tcp workload: a whole-run capture filtered on the workload's port
// one scoped to it with `during`, one scoped to two workloads (the handle
// once held a '+' the agent refuses), and one on tcpdump's pseudo-device
// "any" (once refused by preflight), all pulled into captures/.
func TestRunCaptures(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("capturing needs root")
	}
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump not installed")
	}
	port := kinds.BasePort + kinds.PortsPerWorkload*1 // workload index 1, first run
	src := twoHosts + `
workload "first" {
  tool = "exec"
  host = host.a
  command = ["true"]
}
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "4MiB"
}
capture "all" {
  host   = host.a
  netdev = "lo"
  filter = "tcp port ` + itoa(port) + `"
}
capture "bulk_only" {
  host    = host.b
  netdev  = "lo"
  filter  = "tcp"
  snaplen = 96
  during  = [workload.bulk]
}
capture "any" {
  host   = host.a
  netdev = "any"
  filter = "tcp port ` + itoa(port) + `"
}
capture "per" {
  count  = 2
  host   = [host.a, host.b][count.index]
  netdev = "lo"
  filter = "tcp port ` + itoa(port) + `"
  during = [workload.bulk]
}
capture "small" {
  host     = host.b
  netdev   = "lo"
  filter   = "tcp port ` + itoa(port) + `"
  snaplen  = 262144
  max_size = "1MiB"
  during   = [workload.bulk]
}
capture "both" {
  host   = host.b
  netdev = "lo"
  filter = "tcp port ` + itoa(port) + `"
  during = [workload.first, workload.bulk]
}
`
	res, _ := runLab(t, src, Options{})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	for _, c := range []struct {
		host, file string
		min        int
	}{
		{"a", "cap.all.pcap", 10},
		{"b", "cap.bulk_only.bulk.pcap", 10},
		{"a", "cap.any.pcap", 10},             // tcpdump -i any (Linux cooked capture)
		{"b", "cap.both.first-bulk.pcap", 10}, // scoped to two workloads
		{"a", "cap.per.0.bulk.pcap", 10},      // count = 2: one per host
		{"b", "cap.per.1.bulk.pcap", 10},
	} {
		// tcpdump's ring (-C/-W) numbers its files: cap.all.pcap0, ...
		files, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", c.host, "captures", c.file+"*"))
		n := 0
		for _, f := range files {
			n += countTCP(t, f, port)
		}
		if n < c.min || len(files) == 0 {
			all, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "*", "*", "*"))
			stderr, _ := os.ReadFile(filepath.Join(res.Dir, "hosts", c.host, "logs", strings.TrimSuffix(c.file, ".pcap")+".tcpdump.stderr"))
			t.Errorf("%s on host %s: %d TCP packets on port %d in %v, want the transfer's (run dir: %v); tcpdump: %s", c.file, c.host, n, port, files, all, stderr)
		}
	}
	// max_size bounds what a capture keeps: 1 MiB of a 4 MiB transfer
	// captured whole (tcpdump's ring of one file, at most one packet over).
	small, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "b", "captures", "cap.small.bulk.pcap*"))
	var total int64
	for _, f := range small {
		if st, err := os.Stat(f); err == nil {
			total += st.Size()
		}
	}
	if total == 0 || total > 1<<20+70000 {
		t.Errorf("capture with max_size 1MiB kept %d bytes in %v, want 1..%d", total, small, 1<<20+70000)
	}
	// results.json names, per workload, the files of the captures scoped
	// to it alone: bulk's own four, not the whole-run ones nor "both".
	doc, err := results.ReadRun(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string][]string{}
	for _, w := range doc.Workloads {
		for _, f := range w.Captures {
			if _, err := os.Stat(filepath.Join(res.Dir, filepath.FromSlash(f))); err != nil {
				t.Errorf("workload %s: capture %s: %v", w.Name, f, err)
			}
			own[w.Name] = append(own[w.Name], strings.TrimRight(f, "0123456789"))
		}
	}
	wantOwn := map[string][]string{"bulk": {"hosts/b/captures/cap.bulk_only.bulk.pcap", "hosts/a/captures/cap.per.0.bulk.pcap",
		"hosts/b/captures/cap.per.1.bulk.pcap", "hosts/b/captures/cap.small.bulk.pcap"}}
	for w := range own {
		slices.Sort(own[w])
		own[w] = slices.Compact(own[w]) // a ring's files: one stem
	}
	slices.Sort(wantOwn["bulk"])
	if diff := cmp.Diff(wantOwn, own); diff != "" {
		t.Errorf("captures of each workload alone (-want +got):\n%s", diff)
	}
	ents, _ := os.ReadDir(filepath.Join(res.Dir, "hosts", "a", "logs"))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".pcap") {
			t.Errorf("capture file %s landed in logs/", e.Name())
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

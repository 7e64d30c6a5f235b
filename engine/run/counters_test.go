package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestRunCounters: around a tcp workload on in-process agents, the kernel
// counters of the netdev each end reaches the data address by (here lo)
// are read before and after; the deltas land in results.json as samples
// named by the kernel (tx_packets, on host and device), in summary.md's
// "what the stack saw", and an expect reads them.
func TestRunCounters(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "4MiB"
  expect {
    condition = result.tx_packets > 0 && result.rx_dropped >= 0
    message   = "no packets left lo"
  }
}
`, Options{}, true)
	if res.Code != ExitOK {
		t.Fatalf("code %d, err %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	got := map[string]results.Sample{}
	for _, s := range r.Samples {
		if results.IsCounter(s) {
			got[s.Metric+"@"+strings.Join(s.Meta.Hosts, ",")] = s
		}
	}
	for _, host := range []string{"a", "b"} {
		s, ok := got["tx_packets@"+host]
		if !ok {
			t.Errorf("no tx_packets delta of host %s: %v", host, got)
			continue
		}
		if s.Value <= 0 || s.Unit != "packets" || s.Meta.Workload != "bulk" || len(s.Meta.Devices) != 1 || s.Meta.Devices[0] != "lo" || s.Meta.Extra["counter"] != "statistics" {
			t.Errorf("tx_packets of %s = %+v, want > 0 packets on lo", host, s)
		}
		if b := got["tx_bytes@"+host]; b.Value < 4<<20 || b.Unit != "bytes" {
			t.Errorf("tx_bytes of %s = %+v, want at least the 4 MiB sent over lo", host, b)
		}
	}
	wl := r.Workloads[0]
	if len(wl.Expects) != 1 || !wl.Expects[0].Held {
		t.Errorf("expect on tx_packets: %+v", wl.Expects)
	}
	for _, e := range wl.Expects {
		if e.Size != 4<<20 {
			t.Errorf("expect evaluated at size %d: counters must not add a size of their own", e.Size)
		}
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Kernel counters (after minus before the workload)", "| a | lo | `tx_packets` |", "| b | lo | `rx_bytes` |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	html, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"What the stack saw", "<td>tx_packets</td>", "traffic counter(s) moved"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// The measures' table keeps its columns: no counter among them.
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| size |") && strings.Contains(line, "packets") {
			t.Errorf("a counter among the tcp table's columns: %s", line)
		}
	}
}

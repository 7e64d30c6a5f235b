package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestHostFactsBounded: a host's facts of 12,000 netdevs named alike and
// 12,000 devices on that name (1.1 MB, within proto.MaxValues) made each
// netdev's row list every device: 1 GB allocated to build the report
// (SECURITY 142; 25,000 each, still within the bound, about 4 GB). The
// rows are cut to maxFactRows, a cell's names to maxRowNames, the rest
// counted; an honest host's netdev lists its devices.
func TestHostFactsBounded(t *testing.T) {
	for _, n := range []int{2, 12000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var f proto.Facts
			for i := 0; i < n; i++ {
				f.Netdevs = append(f.Netdevs, proto.Netdev{Name: "eth0", Addrs: []string{"10.0.0.1/24"}})
				f.RDMA = append(f.RDMA, proto.RDMADevice{Name: fmt.Sprintf("d%05d", i), Parent: "eth0"})
			}
			b, _ := json.Marshal(f)
			if err := proto.CheckValues(b, proto.MaxValues); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "hosts/h"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "hosts/h/facts.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			d, err := Build(dir, Options{NoGraphviz: true})
			runtime.ReadMemStats(&m1)
			if err != nil {
				t.Fatal(err)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > 128<<20 {
				t.Errorf("%d netdevs and devices: %d MiB allocated to build the report", n, a>>20)
			}
			if len(d.Hosts) != 1 || len(d.Hosts[0].Netdevs) == 0 {
				t.Fatalf("hosts %+v", d.Hosts)
			}
			h := d.Hosts[0]
			if n == 2 {
				if h.Netdevs[0].Devices != "d00000 d00001" || len(h.Errors) != 0 {
					t.Errorf("an honest host's netdev lists %q, errors %q", h.Netdevs[0].Devices, h.Errors)
				}
				return
			}
			if len(h.Netdevs) > maxFactRows || len(h.RDMA) > maxFactRows || !strings.HasSuffix(h.Netdevs[0].Devices, fmt.Sprintf("and %d more", maxFactRows-maxRowNames)) {
				t.Errorf("%d netdev rows, %d device rows, a row lists %.80q…", len(h.Netdevs), len(h.RDMA), h.Netdevs[0].Devices)
			}
			if !strings.Contains(strings.Join(h.Notes, "\n"), "12000 netdevs, 11000 more than shown") {
				t.Errorf("notes %q: want the rows left out counted", h.Notes)
			}
			if len(h.Errors) != 0 {
				t.Errorf("errors %q: rows left out of a host's facts are a note, not an error (a class report folds a host with errors out of its ready students)", h.Errors)
			}
		})
	}
}

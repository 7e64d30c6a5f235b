package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpectCounters: an expect of an RDMA workload reads the kernel's
// counters by their names (result.rcvd_seq_err); a mistyped one is an
// error that suggests the name and says where the counters are described,
// without listing dozens of names; a tcp workload reads only its netdev's.
func TestExpectCounters(t *testing.T) {
	const hosts = `lab "x" {}
host "a" { address = "192.0.2.1" }
host "b" { address = "192.0.2.2" }
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
`
	for _, tc := range []struct {
		name, workload string
		want           []string // in the error's detail; none: loads
	}{
		{"rdma reads rcvd_seq_err", `tool = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect { condition = result.rcvd_seq_err == 0 && result.tx_dropped == 0 }`, nil},
		{"a mistyped counter", `tool = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect { condition = result.rcvd_seq_errs == 0 }`, []string{`Did you mean "rcvd_seq_err"?`, "kernel counters of its devices", "labs/README.md"}},
		{"tcp has no rxe counters", `tool = "tcp"
  server = host.a
  client = host.b
  expect { condition = result.rcvd_seq_err == 0 }`, []string{"tcp_bw", "rx_packets", "10 in all"}},
		{"tcp reads its connection's retransmissions", `tool = "tcp"
  server = host.a
  client = host.b
  expect { condition = result.tcpi_total_retrans == 0 && result.tx_dropped == 0 }`, nil},
		{"rdma has no tcp connection", `tool = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect { condition = result.tcpi_total_retrans == 0 }`, []string{"kernel counters of its devices"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			if err := os.WriteFile(p, []byte(hosts+"workload \"w\" {\n  "+tc.workload+"\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := Load([]string{p}, LoadOptions{})
			if len(tc.want) == 0 {
				if diags.HasErrors() {
					t.Fatalf("diagnostics: %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != "Unsupported result attribute" {
				t.Fatalf("diagnostics %v, want one Unsupported result attribute", diags)
			}
			for _, w := range tc.want {
				if !strings.Contains(diags[0].Detail, w) {
					t.Errorf("detail %q lacks %q", diags[0].Detail, w)
				}
			}
			if len(diags[0].Detail) > 400 {
				t.Errorf("detail of %d bytes lists every counter: %s", len(diags[0].Detail), diags[0].Detail)
			}
		})
	}
}

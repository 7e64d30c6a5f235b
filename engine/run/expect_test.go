package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// TestRunSkippedExpect: the expect of a workload that preflight skipped was
// not evaluated, so it is reported as skipped, not as "did not hold": not in
// the run's error (stderr), not under Problems in summary.md, not a JUnit
// failure, and counted apart in the summary table and the report.
func TestRunSkippedExpect(t *testing.T) {
	bed := newPipeBed(t)
	l := loadLab(t, twoHosts+`
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
  expect {
    condition = result.exit_code == 0
    message   = "x exits 0"
  }
}`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "r"),
		Preflight: func(*lab.Lab, map[string]*proto.Facts) []preflight.Problem {
			return []preflight.Problem{{Host: "a", Code: preflight.CodeNoRXE, What: "kernel has no rdma_rxe module", Fix: "install linux-modules-extra"}}
		}})
	if res.Code != ExitInfra || res.Err == nil {
		t.Fatalf("code %d err %v, want 2", res.Code, res.Err)
	}
	if strings.Contains(res.Err.Error(), "did not hold") {
		t.Errorf("run error says the skipped expect did not hold: %v", res.Err)
	}
	if len(res.Expects) != 1 || !res.Expects[0].Skipped || res.Expects[0].Held {
		t.Errorf("expects %+v, want one skipped", res.Expects)
	}
	r := readRun(t, res.Dir)
	if len(r.Workloads) != 1 || len(r.Workloads[0].Expects) != 1 || !r.Workloads[0].Expects[0].Skipped {
		t.Fatalf("results.json workloads %+v, want x with its expect skipped", r.Workloads)
	}
	sum, err := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sum), "did not hold") || !strings.Contains(string(sum), "| 1 skipped |") {
		t.Errorf("summary.md reports the skipped expect wrongly:\n%s", sum)
	}
	ju, err := os.ReadFile(filepath.Join(res.Dir, results.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ju), "did not hold") || strings.Contains(string(ju), `type="expect"`) || strings.Count(string(ju), "<skipped") != 2 {
		t.Errorf("junit.xml: want the workload and its expect skipped, no expect failure:\n%s", ju)
	}
	d, err := report.Build(res.Dir, report.Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Expects.Held != 0 || d.Expects.Failed != 0 || d.Expects.Skipped != 1 {
		t.Errorf("report counts %+v, want 1 skipped", d.Expects)
	}
	for _, p := range d.Problems {
		if strings.Contains(p.What, "did not hold") {
			t.Errorf("report problem %q for a skipped expect", p.What)
		}
	}
}

// TestExpectWithUnits (issue 25): an expect threshold written with its unit,
// as a view or a tool prints it, holds or fails on the recorded values as
// the same threshold in the metric's own unit would: 24.95 Mb/s is 0.02495
// Gb/s, 3 MB/s is 24 Mb/s, 1.5 ms is 1500 usec, 761 pps is 0.000761 Mpps.
func TestExpectWithUnits(t *testing.T) {
	const devices = `
variable "min_bw" {
  default = "20 Mb/s"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
`
	recorded := map[string]map[string]float64{ // tool: metric: value in its unit
		"ib_write_bw":     {"bw_avg": 0.02495, "msg_rate": 0.000761},
		"ib_send_lat":     {"lat_p99": 1500},
		"ibv_rc_pingpong": {"pp_bw": 950},
		"exec":            {"duration": 1.5},
	}
	tests := []struct {
		tool, cond string
		held       bool
	}{
		{"ib_write_bw", `result.bw_avg >= gbps("24.95 Mb/s")`, true}, // copied from a view in Mb/s
		{"ib_write_bw", `result.bw_avg >= 0.02495`, true},            // the same threshold in Gb/s
		{"ib_write_bw", `result.bw_avg > gbps("24.96 Mb/s")`, false},
		{"ib_write_bw", `result.bw_avg > gbps("3 MB/s")`, true},    // bytes: 24 Mb/s
		{"ib_write_bw", `result.bw_avg > gbps("3.2 MB/s")`, false}, // 25.6 Mb/s
		{"ib_write_bw", `result.bw_avg > gbps("3 MiB/s")`, false},  // 25.17 Mb/s
		{"ib_write_bw", `result.bw_avg > gbps(var.min_bw)`, true},
		{"ib_write_bw", `result.bw_avg < gbps("1 Gbps") && result.msg_rate >= mpps("761 pps")`, true},
		{"ib_write_bw", `result.msg_rate > 0.99 * mpps("0.762 kpps")`, true},
		{"ib_write_bw", `result.msg_rate > mpps("0.762 kpps")`, false},
		{"ib_send_lat", `result.lat_p99 <= usec("1.5 ms")`, true},
		{"ib_send_lat", `result.lat_p99 < usec("1.5ms")`, false},
		{"ib_send_lat", `result.lat_p99 < usec("1500001 ns")`, true},
		{"ibv_rc_pingpong", `result.pp_bw > mbps("0.9 Gb/s")`, true},
		{"ibv_rc_pingpong", `result.pp_bw > mbps("1 Gb/s")`, false},
		{"exec", `result.duration <= seconds("1500 ms")`, true},
		{"exec", `result.duration < seconds("1.4 s")`, false},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			ends := "server = rxe.a\n  client = rxe.b"
			if tt.tool == "exec" {
				ends = `host = host.a
  command = ["true"]`
			}
			l := loadLab(t, twoHosts+devices+`
workload "w" {
  tool = "`+tt.tool+`"
  `+ends+`
  expect {
    condition = `+tt.cond+`
  }
}`)
			var ss []results.Sample
			for m, v := range recorded[tt.tool] {
				ss = append(ss, results.Sample{Metric: m, Value: v, Meta: results.Meta{Workload: "w", Tool: tt.tool, Size: 65536}})
			}
			e := l.Workloads[0].Expects[0]
			held, diags := evalOne(e, ResultObject(tt.tool, ss, 65536))
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if held != tt.held {
				t.Errorf("held = %v, want %v (recorded %v)", held, tt.held, recorded[tt.tool])
			}
		})
	}
}

// TestExpectUnitsEveryMetric (issue 25): for every metric of every tool
// recorded in a unit a unit function gives, the number a view prints (cut
// to 4 digits) pasted with its unit into that function holds as
// `result.M >= fn("<number> <unit>")` on the value it was printed from,
// and 1% more does not.
func TestExpectUnitsEveryMetric(t *testing.T) {
	checked := 0
	for _, tool := range kinds.All() {
		if tool.HostOrPair {
			continue // program: its metrics are the lab's own (TestExpectWithUnits' style covers them)
		}
		ends := "server = host.a\n  client = host.b"
		switch {
		case tool.RDMA:
			ends = "server = rxe.a\n  client = rxe.b"
		case tool.OneHost:
			ends = "host = host.a\n  command = [\"true\"]"
		}
		for i, name := range kinds.MetricsOf(tool.Name) {
			m, _ := kinds.MetricByName(name)
			fn := lab.UnitFuncFor(m.Unit)
			if fn == "" {
				continue // a count or an exit code
			}
			v := []float64{0.024956123, 658.41234, 0.00076123456, 14.277777}[i%4]
			printed := results.FormatValue(v)
			p, _ := strconv.ParseFloat(printed, 64)
			for _, c := range []struct {
				cond string
				held bool
			}{
				{fmt.Sprintf(`result.%s >= %s("%s %s")`, name, fn, printed, m.Unit), true},
				{fmt.Sprintf(`result.%s > %s("%s %s")`, name, fn, strconv.FormatFloat(p*1.01, 'g', -1, 64), m.Unit), false},
			} {
				l := loadLab(t, twoHosts+`
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
workload "w" {
  tool = "`+tool.Name+`"
  `+ends+`
  expect {
    condition = `+c.cond+`
  }
}`)
				ss := []results.Sample{{Metric: name, Value: v, Unit: m.Unit, Meta: results.Meta{Workload: "w", Tool: tool.Name, Size: 65536}}}
				held, diags := evalOne(l.Workloads[0].Expects[0], ResultObject(tool.Name, ss, 65536))
				if diags.HasErrors() || held != c.held {
					t.Errorf("%s: %s on %v: held %v, want %v %v", tool.Name, c.cond, v, held, c.held, diags)
				}
				checked++
			}
		}
	}
	t.Logf("%d conditions checked", checked)
	if checked < 20 {
		t.Errorf("%d conditions checked; the families' metrics were not all seen", checked)
	}
}

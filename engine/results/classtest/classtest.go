// Package classtest writes the run directory of a synthetic class run (the
// shape of bench/scale/class-scale.hcl: per student a server/client pair,
// an exec on the server and a TCP transfer between them) through the
// results package's own writer, so tests of `rlab show` and the report can
// check a 500-student run without a fixture of megabytes. Only tests import
// it; it imports engine/results, agent/proto and kinds (the tcp family's
// metric).
package classtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/builtin"
)

// Key is student i's for_each key.
func Key(i int) string { return fmt.Sprintf("s%03d", i) }

// Run is a class run of n students; the students in failed fail, the odd
// ones by a host that could not be reached, the even ones by an expect on
// their transfer that did not hold.
func Run(n int, failed ...int) *results.Run {
	builtin.Register()
	tcpTool, _ := kinds.Lookup("tcp")
	tcpBW := tcpTool.View.Throughput // the tcp family's metric, spelt in its descriptor
	bad := map[int]bool{}
	for _, i := range failed {
		bad[i] = true
	}
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	r := &results.Run{Lab: "class-scale", ID: "2026-11-27T100000Z", Started: start, Duration: 61.5, Status: results.RunOK}
	for i := 0; i < n; i++ {
		k := Key(i)
		srv, cli := fmt.Sprintf("server[%q]", k), fmt.Sprintf("client[%q]", k)
		hello, tcp := fmt.Sprintf("hello[%q]", k), fmt.Sprintf("tcp[%q]", k)
		st := results.Student{Key: k, Folder: "students/" + k, Hosts: []string{srv, cli}, Workloads: []string{hello, tcp}, Status: results.StudentReady, OK: 2}
		hw := results.Workload{Name: hello, Tool: "exec", Status: results.StatusOK, Hosts: []string{srv}, Duration: 0.2,
			Expects: []results.Expect{{Condition: "result.exit_code == 0", Held: true}}}
		tw := results.Workload{Name: tcp, Tool: "tcp", Status: results.StatusOK, Hosts: []string{srv, cli}, Duration: 1.1,
			Expects: []results.Expect{{Condition: "result.tcp_bw_gbps > 0.5", Held: true}}}
		bw := 2.5 + float64(i%7)/10
		switch {
		case bad[i] && i%2 == 1:
			err := fmt.Sprintf("connect host %q: dial tcp 10.77.%d.%d:22: connect: no route to host", cli, i/250, i%250+1)
			hw.Status, hw.Error = results.StatusSkipped, "host "+cli+" unusable"
			tw.Status, tw.Error = results.StatusSkipped, "host "+cli+" unusable"
			hw.Expects[0].Skipped, tw.Expects[0].Skipped = true, true
			hw.Expects[0].Held, tw.Expects[0].Held = false, false
			st.OK, st.Failed, st.Status, st.Reason = 0, 2, results.StudentFailed, err
		case bad[i]:
			bw = 0.07
			got := "tcp_bw_gbps = 0.07"
			tw.Expects[0] = results.Expect{Condition: "result.tcp_bw_gbps > 0.5", Message: "transfer too slow", Value: &got}
			x := results.StudentExpect{Workload: tcp, Expect: tw.Expects[0]}
			st.OK, st.Failed, st.Status, st.FailedExpects = 1, 1, results.StudentFailed, []results.StudentExpect{x}
			st.Reason = "expect on " + x.ExpectText()
		}
		if tw.Status == results.StatusOK {
			r.Samples = append(r.Samples, results.Sample{Metric: tcpBW, Value: bw, Unit: "Gb/s",
				Meta: results.Meta{Workload: tcp, Tool: "tcp", Size: 1 << 20, Hosts: []string{srv, cli}}})
		}
		r.Workloads = append(r.Workloads, hw, tw)
		r.Students = append(r.Students, st)
		if st.Status != results.StudentReady {
			r.Status = results.RunFailed
		}
	}
	return r
}

// WriteDir writes Run(n, failed...) into a new run directory with
// results.json, summary.md and junit.xml (results.WriteRun),
// students.json, and a facts.json for every host, and returns it.
func WriteDir(t testing.TB, n int, failed ...int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "class-scale", "2026-11-27T100000Z")
	r := Run(n, failed...)
	for _, st := range r.Students {
		for j, h := range st.Hosts {
			f := proto.Facts{Hostname: fmt.Sprintf("%s-%d", st.Key, j), Kernel: "6.1.0-56-amd64", OS: "Debian GNU/Linux 12 (bookworm)",
				Netdevs: []proto.Netdev{{Name: "eth0", MTU: 1500, State: "up", Addrs: []string{"10.77.0.1/16"}}}}
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			hd := filepath.Join(dir, "hosts", slug(h))
			if err := os.MkdirAll(hd, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(hd, "facts.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := results.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteStudentsFile(dir, r.Students); err != nil {
		t.Fatal(err)
	}
	return dir
}

// slug is the folder name of a host (server["s001"] -> server.s001), as
// the run engine names them.
func slug(h string) string {
	var b []byte
	for i := 0; i < len(h); i++ {
		switch c := h[i]; c {
		case '[':
			b = append(b, '.')
		case '"', ']':
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

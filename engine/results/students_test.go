package results

import (
	"encoding/xml"
	"reflect"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

func studentsRun() *Run {
	got := "bw_avg_gbps = 0.07"
	return &Run{Lab: "class", ID: "2026-11-26T010000Z", Status: RunFailed,
		Workloads: []Workload{
			{Name: `write_bw["ana"]`, Tool: "ib_write_bw", Status: StatusOK, Hosts: []string{`server["ana"]`, `client["ana"]`}},
			{Name: `write_bw["bo|b"]`, Tool: "ib_write_bw", Status: StatusOK, Hosts: []string{`server["bo|b"]`, `client["bo|b"]`}},
		},
		Samples: []Sample{
			{Metric: "bw_avg", Value: 5.1, Unit: "Gb/s", Meta: Meta{Workload: `write_bw["ana"]`, Tool: "ib_write_bw", Size: 65536}},
			{Metric: "bw_avg", Value: 0.07, Unit: "Gb/s", Meta: Meta{Workload: `write_bw["bo|b"]`, Tool: "ib_write_bw", Size: 65536}},
		},
		Students: []Student{
			{Key: "ana", Folder: "students/ana", Hosts: []string{"bastion", `server["ana"]`, `client["ana"]`}, Workloads: []string{`write_bw["ana"]`}, OK: 1, Status: StudentReady},
			{Key: "bo|b\x1b[2J", Folder: "students/bo_b_2J", Hosts: []string{"bastion", `server["bo|b"]`, `client["bo|b"]`}, Workloads: []string{`write_bw["bo|b"]`}, Failed: 1, Status: StudentFailed,
				Reason:        `expect on workload "write_bw[\"bo|b\"]": wanted result.bw_avg_gbps > 1 at 64 KiB: got bw_avg_gbps = 0.07 (too slow)`,
				FailedExpects: []StudentExpect{{Workload: `write_bw["bo|b"]`, Expect: Expect{Condition: "result.bw_avg_gbps > 1", Message: "too slow", Size: 65536, Value: &got}}}},
		},
	}
}

func TestStudentsOutputs(t *testing.T) {
	r := studentsRun()
	var b strings.Builder
	if err := WriteStudentsTable(&b, r.Students, true, false); err != nil {
		t.Fatal(err)
	}
	j, err := JUnit(r)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "students-table.golden.txt", []byte(b.String()))
	checkGolden(t, "students-summary.golden.md", Summary(r, ""))
	checkGolden(t, "students-junit.golden.xml", j)
	if strings.Contains(b.String(), "\x1b") {
		t.Error("a key's control characters reached the terminal")
	}
	var root JUnitSuites
	if err := xml.Unmarshal(j, &root); err != nil {
		t.Fatal(err)
	}
	if len(root.Suites) != 2 || root.Suites[1].Tests != 2 || root.Suites[1].Failures != 1 || root.Tests != 4 {
		t.Errorf("junit suites %+v", root)
	}
}

func TestForStudent(t *testing.T) {
	r := studentsRun()
	mine := r.ForStudent(r.Students[1])
	if len(mine.Workloads) != 1 || mine.Workloads[0].Name != `write_bw["bo|b"]` || len(mine.Samples) != 1 || mine.Samples[0].Value != 0.07 ||
		len(mine.Students) != 1 || mine.Status != RunFailed || !strings.Contains(mine.Error, "too slow") {
		t.Errorf("ForStudent = %+v", mine)
	}
	if ana := r.ForStudent(r.Students[0]); ana.Status != RunOK || ana.Error != "" || len(ana.Samples) != 1 {
		t.Errorf("ForStudent(ana) = %+v", ana)
	}
	// A student's results.json holds the platforms of their own hosts only.
	r.Platforms = map[string]Platform{"bastion": {Kernel: "b"}, `server["ana"]`: {Kernel: "a"}, `server["bo|b"]`: {Kernel: "c"}}
	want := map[string]Platform{"bastion": {Kernel: "b"}, `server["bo|b"]`: {Kernel: "c"}}
	if got := r.ForStudent(r.Students[1]).Platforms; !reflect.DeepEqual(got, want) {
		t.Errorf("platforms of bo|b's run: %v, want %v", got, want)
	}
	// Nor the run's artifacts: the run lists those its folder holds.
	r.Artifacts = []Artifact{{Host: `server["ana"]`, Path: "hosts/server.ana/captures/cap.c.pcap", Type: ArtifactCapture}}
	if got := r.ForStudent(r.Students[1]).Artifacts; got != nil {
		t.Errorf("artifacts of bo|b's run: %v, want none", got)
	}
}

// TestStudentsTableBidi: a received run's student key, status and expects
// reach the terminal with no character termsafe escapes (SECURITY 116): a
// right-to-left override (U+202E), an isolate and a line separator were
// printed raw by rlab show --students, reordering the rest of the line.
func TestStudentsTableBidi(t *testing.T) {
	const bad = "k\u202eevil\u2067x\u2028y\x1b[2J\u009b1m"
	got := "v"
	ss := []Student{{Key: bad, Hosts: []string{"h"}, Workloads: []string{"w"}, Failed: 1, Status: StudentFailed, Reason: bad,
		FailedExpects: []StudentExpect{{Workload: bad, Expect: Expect{Condition: bad, Message: bad, Value: &got}}}}}
	var b strings.Builder
	if err := WriteStudentsTable(&b, ss, true, true); err != nil {
		t.Fatal(err)
	}
	if termsafe.Block(b.String()) != b.String() {
		t.Errorf("the table holds characters a terminal acts on:\n%q", b.String())
	}
	if !strings.Contains(b.String(), "k?evil?x?y?[2J?1m") {
		t.Errorf("the key is not shown with each control as '?':\n%q", b.String())
	}
}

// TestStudentsTableLongKey: one long student key does not pad every row
// (SECURITY 121): a 1 MB results.json of one 100 KB key beside 9,990
// others made rlab show --students print 1 GB with 2.1 GB of memory.
func TestStudentsTableLongKey(t *testing.T) {
	ss := []Student{{Key: strings.Repeat("k", 100_000), Status: StudentFailed, Failed: 1}}
	for i := range 9_990 {
		ss = append(ss, Student{Key: "s" + strings.Repeat("x", i%7), Status: StudentFailed, Failed: 1})
	}
	var b strings.Builder
	if err := WriteStudentsTable(&b, ss, false, true); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 4<<20 {
		t.Errorf("%d bytes for %d students", b.Len(), len(ss))
	}
}

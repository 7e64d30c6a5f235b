package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/attrib"
	"github.com/rlab-dev/rlab/engine/roce"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

const (
	mixedRun    = "../../testdata/attrib/mixed"
	recordedRun = "../../testdata/report/run"
	tcpPortRun  = "../../testdata/attrib/tcpport"
)

// TestPcapRunNamesConnections: `rlab pcap RUN` names every connection of
// the run's captures after the workload that made it: by time window
// (and the RDMA-CM REQ/REP) on the composed run of four recorded
// captures, by the QPN perftest printed on a real run whose capture was
// taken in another run (no window holds it), and by the port each tcp
// workload's server listened on (results.json) on a recorded capture of two
// tcp workloads run as a group, whose windows are one. The text is a
// golden file.
func TestPcapRunNamesConnections(t *testing.T) {
	for _, tc := range []struct {
		name, run string
		want      map[string]string // connection -> workload, by
	}{
		{"mixed", mixedRun, map[string]string{
			"10.99.0.2 -> 10.99.0.1 QP 0x000011": "write_bw, time window",
			"10.99.0.1 -> 10.99.0.2 QP 0x000011": "write_bw, time window",
			"10.99.0.2 -> 10.99.0.1 QP 0x000015": "pingpong, time window",
			"10.99.0.1 -> 10.99.0.2 QP 0x000015": "pingpong, time window",
			"10.99.0.2 -> 10.99.0.1 QP 0x000001": "rping, time window",
			"10.99.0.1 -> 10.99.0.2 QP 0x000001": "rping, time window",
			"10.99.0.2 -> 10.99.0.1 QP 0x000018": "rping, time window, set up by RDMA-CM",
			"10.99.0.1 -> 10.99.0.2 QP 0x000018": "rping, time window, set up by RDMA-CM",
			"10.10.1.1:42742 <-> 10.10.1.2:9999": "siw_rping, time window",
		}},
		{"tcpport", tcpPortRun, map[string]string{
			"127.0.0.1:55664 <-> 127.0.0.1:18515": "write_bw, time window",
			"127.0.0.1:45190 <-> 127.0.0.1:40001": "tcp_small, port 40001 in its results",
			"127.0.0.1:32980 <-> 127.0.0.1:40002": "tcp_big, port 40002 in its results",
		}},
		{"recorded", recordedRun, map[string]string{
			"10.99.0.2 -> 10.99.0.1 QP 0x00001a": "write_bw, QPN 0x00001a in its output",
			"10.99.0.1 -> 10.99.0.2 QP 0x00001a": "write_bw, QPN 0x00001a in its output",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runPcap(t, "--json", tc.run)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var doc struct {
				Run struct {
					Connections []struct {
						Connection string   `json:"connection"`
						Workloads  []string `json:"workloads"`
						By         string   `json:"by"`
					} `json:"connections"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := map[string]string{}
			for _, c := range doc.Run.Connections {
				got[c.Connection] = strings.Join(c.Workloads, ", ") + ", " + c.By
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("connections by workload (-want +got):\n%s", d)
			}
			text, err := runPcap(t, tc.run)
			if err != nil {
				t.Fatal(err)
			}
			text = text[strings.Index(text, "workloads of the run"):]
			golden := filepath.Join("testdata", "pcaprun", tc.name+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), text); d != "" {
				t.Errorf("text (-golden +got), rerun with -update if meant:\n%s", d)
			}
		})
	}
}

// TestPcapIOGraphMarksWorkloads: the IO graph of a run's capture draws a
// band for each workload that ran while the capture did.
func TestPcapIOGraphMarksWorkloads(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "io.svg")
	if out, err := runPcap(t, "--iograph", svg, "--interval", "1s", mixedRun); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"write_bw", "pingpong", "rping", "siw_rping"} {
		if !strings.Contains(string(b), `data-workload="`+w+`"`) {
			t.Errorf("the IO graph marks no window of %s", w)
		}
	}
}

// TestPcapFlowSelection: --qp, --conn, --from/--to and --workload choose
// the ladder's packets; --retransmits shows the resends and NAKs.
func TestPcapFlowSelection(t *testing.T) {
	lossy := "../../testdata/report/lossy/hosts/server/captures/cap.roce.1.rdma.1.pcap"
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings
		not  []string
		rows int // arrows drawn, -1: not checked
	}{
		{"qp", []string{"--qp", "0x15", "--flow", "30", mixedRun}, []string{"QP 0x000015"}, []string{"QP 0x000011", "QP 0x000018", "iWARP MPA frames"}, 20},
		{"qp and time", []string{"--qp", "0x18", "--from", "23.37", "--to", "23.375", mixedRun}, []string{"first 6 RoCEv2 packets"}, []string{"QP 0x000001,"}, 6},
		{"workload", []string{"--workload", "pingpong", mixedRun}, []string{"first 20 RoCEv2 packets", "QP 0x000015"}, []string{"QP 0x000011"}, 20},
		{"iwarp workload", []string{"--workload", "siw_rping", mixedRun}, []string{"iWARP MPA frames and FPDUs between 10.10.1.1:42742", "MPA Request"}, []string{"RoCEv2 packets between"}, 7},
		{"conn by ports", []string{"--conn", "10.10.1.2:9999-10.10.1.1:42742", "3", mixedRun}, []string{"first 3 iWARP"}, nil, 3},
		{"conn elsewhere", []string{"--conn", "10.0.0.1-10.0.0.2", mixedRun}, []string{"no RoCEv2 packets in the selection"}, nil, 0},
		{"retransmits", []string{"--retransmits", "5", lossy}, []string{"first 5 resent RoCEv2 packets and NAKs", "NAK PSN sequence error", "RDMA WRITE Middle PSN 14850219"}, nil, 5},
		{"no retransmits", []string{"--retransmits", mixedRun}, []string{"no resent RoCEv2 packets or NAKs"}, nil, 0},
		// tshark -Y tcp.analysis.retransmission names the same frame 15, seq 1254, 724 bytes.
		{"iwarp retransmits", []string{"--retransmits", "../../testdata/iwarp/iwarp-markers-crc.pcap"},
			[]string{"first 1 retransmitted TCP segments of iWARP between 10.99.0.1:40001 and 10.99.0.2:4210", "    15 ", "seq 1254, 724 bytes"}, []string{"RoCEv2 packets"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runPcap(t, tc.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			ladder := out
			if i := strings.Index(out, "\nfirst "); i >= 0 {
				ladder = out[i:]
			} else if i := strings.Index(out, "\nno "); i >= 0 {
				ladder = out[i:]
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, ladder)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(ladder, w) {
					t.Errorf("ladder has %q:\n%s", w, ladder)
				}
			}
			if n := strings.Count(ladder, "--|") + strings.Count(ladder, "->|"); tc.rows >= 0 && n != tc.rows {
				t.Errorf("%d arrows, want %d:\n%s", n, tc.rows, ladder)
			}
		})
	}
	// The resent packets the ladder shows are those the summary counts.
	sum := roce.NewSummary()
	if _, err := roce.ScanFile(lossy, func(p *roce.Packet) error { sum.Add(p); return nil }); err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, f := range sum.Flows {
		want += f.Retransmits + f.NAKs
	}
	out, err := runPcap(t, "--retransmits", "100000", lossy)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(strings.Count(out, "--|") + strings.Count(out, "->|")); n != want || want == 0 {
		t.Errorf("--retransmits drew %d arrows; the summary counts %d resent PSNs and NAKs", n, want)
	}
}

func TestPcapFlowSelectionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad qp", []string{"--qp", "zz", mixedRun}, "--qp"},
		{"qp too wide", []string{"--qp", "0x1000000", mixedRun}, "24 bits"},
		{"bad conn", []string{"--conn", "a-b", mixedRun}, "--conn"},
		{"bad from", []string{"--from", "soon", mixedRun}, "--from"},
		{"to before from", []string{"--from", "2", "--to", "1", mixedRun}, "before --from"},
		{"workload outside a run", []string{"--workload", "w", pcapFixture}, "not in a run directory"},
		{"unknown workload", []string{"--workload", "nope", mixedRun}, "it has: write_bw, pingpong, rping, siw_rping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runPcap(t, tc.args...)
			var ee *exitError
			if err == nil || !errors.As(err, &ee) || ee.code != exitFail || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (output %q), want exit %d saying %q", err, out, exitFail, tc.want)
			}
		})
	}
}

// TestPcapHostileRun: a received run directory whose events.jsonl names
// workloads with terminal escapes and whose results.json points its logs
// out of the directory: rlab pcap prints the names escaped and reads no
// file outside the run.
func TestPcapHostileRun(t *testing.T) {
	dir := t.TempDir()
	caps := filepath.Join(dir, "hosts", "server", "captures")
	if err := os.MkdirAll(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	pcap, err := os.ReadFile(filepath.Join(mixedRun, "hosts/server/captures/cap.all.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(caps, "cap.all.pcap"), pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(" local address: LID 0000 QPN 0x000011 PSN 0x1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	events := `{"time":"2026-11-25T23:03:02.9Z","type":"step.start","workload":"evil\u001b]0;pwned\u0007\n\rname"}` + "\n" +
		`{"time":"2026-11-25T23:03:03.6Z","type":"step.end","workload":"evil\u001b]0;pwned\u0007\n\rname"}` + "\n" +
		"\x1b[2J garbage\n"
	results := `{"schema":2,"lab":"l","id":"x","workloads":[{"name":"evil\u001b]0;pwned\u0007\n\rname","tool":"t\u001b[31m","logs":["` + secret + `","../../` + filepath.Base(filepath.Dir(secret)) + `/secret"]}],"samples":[]}`
	for name, body := range map[string]string{"events.jsonl": events, "results.json": results} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{dir}, {"--json", dir}} {
		out, err := runPcap(t, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if termsafe.Block(out) != out {
			t.Errorf("rlab pcap %v printed raw control characters:\n%q", args, out)
		}
		if strings.Contains(out, "0x000011 in its output") {
			t.Errorf("a QPN was read from a log outside the run:\n%s", out)
		}
		if args[0] == dir && !strings.Contains(out, `evil\x1b]0;pwned\x07\n\rname`) {
			t.Errorf("the workload's name is not shown escaped:\n%s", out)
		}
	}
	// No events.jsonl at all: windows from results.json, a note, no error.
	os.Remove(filepath.Join(dir, "events.jsonl"))
	out, err := runPcap(t, dir)
	if err != nil || !strings.Contains(out, "note: the run has no events.jsonl") {
		t.Errorf("without events.jsonl: %v\n%s", err, out)
	}
}

// TestPcapRunReadOnce: `rlab pcap RUN` of a run directory with many
// captures reads the run's workloads (events.jsonl, results.json, the
// tool logs) once, not once per capture, and -json writes the captures'
// documents as it goes, still one JSON array. Before, a received run of
// 1,001 tiny captures beside an events.jsonl of 10,000 workloads (2 MB)
// read and parsed it 1,001 times: `rlab pcap --json` past 300 s and
// 2.4 GB (killed), the text past 300 s; each events.jsonl may be 256 MiB.
func TestPcapRunReadOnce(t *testing.T) {
	dir := t.TempDir()
	caps := filepath.Join(dir, "hosts", "server", "captures")
	if err := os.MkdirAll(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"events.jsonl", "results.json"} {
		b, err := os.ReadFile(filepath.Join(mixedRun, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pcap, err := os.ReadFile(filepath.Join(mixedRun, "hosts/server/captures/cap.all.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		if err := os.WriteFile(filepath.Join(caps, fmt.Sprintf("cap.c%d.pcap", i)), pcap, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loads := 0
	defer func(f func(string) (*attrib.Run, error)) { loadRun = f }(loadRun)
	loadRun = func(dir string) (*attrib.Run, error) {
		loads++
		return attrib.Load(dir)
	}
	for _, args := range [][]string{{dir}, {"--json", dir}} {
		loads = 0
		out, err := runPcap(t, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if loads != 1 {
			t.Errorf("rlab pcap %v read the run %d times for %d captures, want once", args, loads, n)
		}
		if args[0] != "--json" {
			continue
		}
		var docs []struct {
			Run struct {
				Workloads []attrib.Workload `json:"workloads"`
			} `json:"run"`
		}
		if err := json.Unmarshal([]byte(out), &docs); err != nil || len(docs) != n {
			t.Fatalf("-json: %d documents (%v), want an array of %d:\n%.300s", len(docs), err, n, out)
		}
		for _, d := range docs {
			if len(d.Run.Workloads) != 4 {
				t.Errorf("-json: a capture with %d workloads of its run, want 4", len(d.Run.Workloads))
			}
		}
		if !strings.HasPrefix(out, "[\n  {\n    \"") || !strings.HasSuffix(out, "}\n]\n") {
			t.Errorf("-json array not laid out as json.MarshalIndent writes it: %q … %q", out[:20], out[len(out)-20:])
		}
	}
}

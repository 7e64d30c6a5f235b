package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout"
)

// parseNoteClient is a bidirectional ib_write_bw client report (perftest -b
// prints "Bidirectional" in its title and sums both directions) with lines
// the parser does not read: a warning, a line a newer perftest might print
// and one carrying a terminal escape (a hostile host). Composed from the
// recorded rxe report (testdata/toolout/ib_write_bw.client.txt).
const parseNoteClient = `---------------------------------------------------------------------------------------
                    RDMA_Write Bidirectional BW Test
 Dual-port       : OFF		Device         : rxe0
 Number of qps   : 1		Transport type : IB
 Connection type : RC		Using SRQ      : OFF
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 1
---------------------------------------------------------------------------------------
 Device not recognized to implement inline feature. Disabling it
 a line perftest 26 may print
 evil ` + "\x1b[2J\x1b]0;owned\x07" + ` line
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1000             0.16               0.15		     0.000286
---------------------------------------------------------------------------------------
`

// TestParseNotesReachTheRun: what the parser did not read, and that the
// numbers are a bidirectional sum, reach results.json (workload parse,
// per run), summary.md (listed under the workload, host text neutralised)
// and the end-of-run table (one NOTE line, the bandwidth labelled).
func TestParseNotesReachTheRun(t *testing.T) {
	fakeTools(t)
	outs := t.TempDir()
	srv, err := os.ReadFile("../../testdata/toolout/ib_write_bw.server.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outs, "ib_write_bw.server.txt"), srv, 0o644)
	os.WriteFile(filepath.Join(outs, "ib_write_bw.client.txt"), []byte(parseNoteClient), 0o644)
	t.Setenv("RLAB_FAKE_OUTPUTS", outs)
	const src = twoHosts + `
rxe "s" {
  host   = host.a
  netdev = "lo"
}
rxe "c" {
  host   = host.b
  netdev = "lo"
}
workload "bidir" {
  tool   = "ib_write_bw"
  server = rxe.s
  client = rxe.c
  sizes  = [65536]
  repeat = 2
  args   = ["-b"]
}
`
	k := &fakeKernel{devs: map[string]string{}}
	res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: rxeConnector(newPipeBed(t), k), Out: filepath.Join(t.TempDir(), "r"),
		NoReport: true, Preflight: noPreflight, Parse: toolout.ParseOutput})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	wl := r.Workloads[0]
	if len(wl.Parse) != 2 {
		t.Fatalf("parse notes %+v, want one per run (2 repeats)", wl.Parse)
	}
	for i, n := range wl.Parse {
		if n.Size != 65536 || n.Repeat != i || !n.Bidirectional {
			t.Errorf("note %d: size %d repeat %d bidirectional %v", i, n.Size, n.Repeat, n.Bidirectional)
		}
		want := []string{"Device not recognized to implement inline feature. Disabling it", "a line perftest 26 may print", "evil \x1b[2J\x1b]0;owned\x07 line"}
		if strings.Join(n.Unread, "\n") != strings.Join(want, "\n") {
			t.Errorf("note %d unread %q, want %q", i, n.Unread, want)
		}
	}
	// results.json holds the line as printed, JSON-escaped.
	raw, _ := os.ReadFile(filepath.Join(res.Dir, results.ResultsFile))
	if !strings.Contains(string(raw), `"parse": [`) || strings.Contains(string(raw), "\x1b") {
		t.Errorf("results.json: no parse member, or a raw escape in it")
	}
	var doc struct {
		Workloads []struct {
			Parse []json.RawMessage `json:"parse"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Workloads[0].Parse) != 2 {
		t.Errorf("results.json workloads[0].parse: %v, %d entries", err, len(doc.Workloads[0].Parse))
	}

	sum, _ := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	for _, want := range []string{
		"Bandwidth and message rate are the sum of both directions (perftest -b).",
		"The parser did not read 3 lines",
		"- `Device not recognized to implement inline feature. Disabling it` (64 KiB, repeat 1; 64 KiB, repeat 2)",
		`evil \x1b[2J\x1b]0;owned\x07 line`,
	} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, sum)
		}
	}
	if strings.ContainsAny(string(sum), "\x1b\x07") {
		t.Errorf("summary.md carries a raw control character")
	}

	var term strings.Builder
	if err := results.WriteHeadline(&term, r); err != nil {
		t.Fatal(err)
	}
	out := term.String()
	for _, want := range []string{"64 KiB 0.15 Gb/s (sum of both directions)", "NOTE bidir: the parser did not read 3 lines of ib_write_bw's output (first: \"Device not recognized"} {
		if !strings.Contains(out, want) {
			t.Errorf("end-of-run output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("end-of-run output carries a raw control character:\n%q", out)
	}
}

// TestRunDefaultsItsParser: a run given no parser (Options.Parse nil) still
// records its samples; before, it silently recorded none and no error.
func TestRunDefaultsItsParser(t *testing.T) {
	fakeTools(t)
	outs := t.TempDir()
	for _, side := range []string{"server", "client"} {
		b, err := os.ReadFile("../../testdata/toolout/ib_write_bw." + side + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(outs, "ib_write_bw."+side+".txt"), b, 0o644)
	}
	t.Setenv("RLAB_FAKE_OUTPUTS", outs)
	const src = twoHosts + `
rxe "s" {
  host   = host.a
  netdev = "lo"
}
rxe "c" {
  host   = host.b
  netdev = "lo"
}
workload "w" {
  tool   = "ib_write_bw"
  server = rxe.s
  client = rxe.c
  sizes  = [65536]
}
`
	k := &fakeKernel{devs: map[string]string{}}
	res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: rxeConnector(newPipeBed(t), k), Out: filepath.Join(t.TempDir(), "r"),
		NoReport: true, Preflight: noPreflight})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	n := 0
	for _, s := range readRun(t, res.Dir).Samples {
		if s.Meta.Workload == "w" && s.Metric == "bw_avg" && s.Value > 0 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d bw_avg samples of w, want 1 (the run parses with engine/toolout when given no parser)", n)
	}
}

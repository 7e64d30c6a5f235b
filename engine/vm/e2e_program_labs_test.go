package vm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestE2EProgramLabs runs the example labs of labs/programs through rlab on
// two VMs with real rxe (issue 23): the project's own C sources are shipped,
// built on each VM, run as a pair (the server first, the client once the
// server says it listens), and their numbers read by the labs' metric
// blocks: the READ returns what the WRITE put; the immediate arrives with
// its data; the bulk WRITE's MiB/s sits beside rlab's TCP transfer. The
// write-read capture, read by rlab pcap, shows the buffer's address and rkey
// from the REP's private data. The VMs are restored from a saved guest
// (RLAB_VM_RESTORE=1): three labs, two VMs each.
func TestE2EProgramLabs(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	for _, tc := range []struct {
		lab     string
		vars    []string
		metrics map[string]float64 // metric -> want (0: any value above 0)
	}{
		{"write-read", nil, map[string]float64{"write_ok": 1, "read_ok": 1}},
		{"write-imm", nil, map[string]float64{"imm_sent": 1, "imm_received": 1, "imm_data_ok": 1}},
		// 16 MiB: TCG moves a few MiB/s.
		{"bulk", []string{"bytes=16777216"}, map[string]float64{"mibps": 0}},
	} {
		t.Run(tc.lab, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			keepOnFailure(t, out)
			args := []string{"run", "--out", out}
			for _, v := range tc.vars {
				args = append(args, "-var", v)
			}
			args = append(args, filepath.Join("labs", "programs", tc.lab+".hcl"))
			cmd := rlabCommand(ctx, t, rlabLimit, bin, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), RestoreEnv+"=1", "SSH_AUTH_SOCK=")
			t0 := time.Now()
			b, err := cmd.CombinedOutput()
			t.Logf("rlab %s (%s):\n%s", strings.Join(args, " "), time.Since(t0).Round(time.Second), b)
			checkNoQEMU(t, out)
			if err != nil {
				t.Fatalf("rlab run: %v", err)
			}
			checkResults(t, out)
			rb, err := os.ReadFile(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			var run results.Run
			if err := json.Unmarshal(rb, &run); err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, s := range run.Samples {
				if _, ok := tc.metrics[s.Metric]; ok {
					got[s.Metric] = s.Value
				}
			}
			for m, want := range tc.metrics {
				v, ok := got[m]
				switch {
				case !ok:
					t.Errorf("no %s sample in results.json", m)
				case want == 0 && v <= 0, want != 0 && v != want:
					t.Errorf("%s = %v, want %v", m, v, want)
				}
			}
			// What TestE2ERealRXE's prog-* ops checked by hand, on the lab's
			// own outputs: the server took the buffer from the private data,
			// its client disconnected cleanly; the client's exact lines; the
			// capture's REP names the buffer the WRITE's (and READ's) RETH
			// and the immediate use.
			checkProgramRun(t, out, &run, tc.lab)
			if tc.lab == "bulk" {
				tcp := false
				for _, s := range run.Samples {
					tcp = tcp || s.Meta.Tool == "tcp" && s.Source == results.SourceTool
				}
				if !tcp {
					t.Error("no tcp sample beside the bulk WRITE")
				}
				t.Logf("bulk WRITE %.2f MiB/s", got["mibps"])
			}
			if tc.lab == "write-read" {
				pc := rlabCommand(ctx, t, rlabLimit, bin, "pcap", out)
				pb, err := pc.CombinedOutput()
				t.Logf("rlab pcap:\n%s", pb)
				if err != nil {
					t.Fatalf("rlab pcap: %v", err)
				}
				for _, want := range []string{"rkey", "RDMA WRITE", "RDMA READ"} {
					if !strings.Contains(string(pb), want) {
						t.Errorf("rlab pcap of the write-read capture does not mention %q", want)
					}
				}
			}
		})
	}
}

// progBulkAnyRE is progBulkRE for the byte count a lab chose.
var progBulkAnyRE = regexp.MustCompile(`(?m)^RDMA client wrote (\d+) bytes in ([0-9.]+) s \(([0-9.]+) MiB/s\)$`)

// checkProgramRun checks what a labs/programs run left in its folder: the
// server's and the client's standard output (each workload's logs, read
// by the host they ran on) and, for write-read and write-imm, the capture
// with checkProgramCapture. These were TestE2ERealRXE's prog-* ops, which
// built and ran the same programs by hand on a second pair.
func checkProgramRun(t *testing.T, out string, run *results.Run, lab string) {
	t.Helper()
	stdout := map[string]string{} // host -> its processes' stdout
	for _, w := range run.Workloads {
		for _, rel := range w.Logs {
			if !strings.HasSuffix(rel, ".stdout") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(out, rel))
			if err != nil {
				t.Error(err)
				continue
			}
			for _, h := range []string{"server", "client"} {
				if slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), h) {
					stdout[h] += string(b)
				}
			}
		}
	}
	srv, cli := stdout["server"], stdout["client"]
	if !progAccRE.MatchString(srv) || !regexp.MustCompile(`(?m)^client disconnected$`).MatchString(srv) {
		t.Errorf("server: no accept with the buffer in the private data, or no disconnect: %q", srv)
	}
	var cliRE []*regexp.Regexp
	capture := ""
	switch lab {
	case "write-read":
		cliRE, capture = []*regexp.Regexp{progWriteRE, progReadRE}, "cap.cm_and_data"
	case "write-imm":
		cliRE, capture = []*regexp.Regexp{regexp.MustCompile(`(?m)^RDMA_WRITE_WITH_IMM complete: 4096 bytes, immediate ` + progImm + `$`)}, "cap.imm"
		if !progImmRE.MatchString(srv) {
			t.Errorf("server: the immediate %s did not arrive with the data: %q", progImm, srv)
		}
	case "bulk":
		cliRE = []*regexp.Regexp{progBulkAnyRE}
	}
	for _, re := range cliRE {
		if !re.MatchString(cli) {
			t.Errorf("client: no line matching %s in %q", re, cli)
		}
	}
	if capture == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(out, "hosts", "*", "captures", capture+".*"))
	if len(files) == 0 {
		t.Errorf("no capture %s in %s", capture, out)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkProgramCapture(lab == "write-read", lab == "write-imm")(b); err != nil {
			t.Errorf("capture %s: %v", filepath.Base(f), err)
		}
	}
}

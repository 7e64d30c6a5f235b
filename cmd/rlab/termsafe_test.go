package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/results"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/steps"
)

// hostileText is what a hostile host sends: a window title (OSC 0), a screen
// clear, a clipboard write (OSC 52), an 8-bit CSI and a bidi override. The
// engine side (errors, events, summary.md from a run against a real hostile
// host) is engine/sectest TestHostTextNeutralised; this is the CLI's printing.
const hostileText = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b2J\u202eevil"

func TestHostTextNeutralisedCLI(t *testing.T) {
	runDir := t.TempDir()
	os.WriteFile(filepath.Join(runDir, results.ResultsFile), []byte(`{"lab":"x","workloads":[],"samples":[]}`), 0o600)
	os.WriteFile(filepath.Join(runDir, results.SummaryFile), []byte("# run\n\nerror: "+hostileText+"\n"), 0o600)
	tests := []struct {
		name  string
		print func(w *bytes.Buffer) error
	}{
		{"facts table (patched kernel, netdev, device, tool, error)", func(w *bytes.Buffer) error {
			f := &proto.Facts{Kernel: "6.1.0" + hostileText, Arch: "x86_64" + hostileText, RXEModule: hostileText,
				Netdevs: []proto.Netdev{{Name: "eth1" + hostileText, MTU: 1500, Addrs: []string{hostileText}}},
				RDMA:    []proto.RDMADevice{{Name: "rxe0" + hostileText, Driver: "rxe", Parent: hostileText}},
				Tools:   map[string]proto.Tool{"ib_write_bw" + hostileText: {}}, Platform: proto.Platform{Product: hostileText, DistroID: hostileText}}
			return writeFactsTable(w, []remote.Result{{Name: "h", Facts: f}, {Name: "g", Err: errors.New("connect: " + hostileText + "\nmore")}})
		}},
		{"status lines", func(w *bytes.Buffer) error {
			printOutcomes(w, &runengine.Result{Outcomes: []*steps.Outcome{{Workload: "w", Tool: "exec", Status: "failed", Error: "stderr: " + hostileText}}}, false)
			return nil
		}},
		{"rlab show replays summary.md", func(w *bytes.Buffer) error {
			cmd := newShowCmd()
			cmd.SetOut(w)
			cmd.SetErr(w)
			cmd.SetArgs([]string{runDir})
			return cmd.Execute()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.print(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if i := strings.IndexFunc(out, func(r rune) bool {
				return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x80 && r <= 0x9f) || r == 0x202e
			}); i >= 0 {
				t.Errorf("printed a raw control character at %d:\n%q", i, out)
			}
			if !strings.Contains(out, `\x1b]0;pwned\x07`) {
				t.Errorf("the host's text is not shown escaped:\n%s", out)
			}
		})
	}
}

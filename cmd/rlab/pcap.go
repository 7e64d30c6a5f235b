package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/iograph"
	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/roce"
)

func newPcapCmd() *cobra.Command {
	var (
		asJSON   bool
		flowN    int
		svgPath  string
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pcap [FILE... | FOLDER | RUN]",
		Short: "Summarise a RoCEv2 capture: connections, opcodes, NAKs, retransmissions, a ladder diagram, an IO graph",
		Long: `pcap decodes a pcap or pcapng capture (RoCEv2 on UDP 4791 over Ethernet, VLAN,
IPv4 or IPv6; TCP is counted beside it) without Wireshark, and prints per connection
(addresses and destination QP) and per opcode: packets, bytes, payload bytes, first
and last time; NAKs, RNR NAKs, retransmitted PSNs and CNPs; the RDMA-CM messages on
QP1; how many frames the snaplen truncated or were malformed; and the ICRC of
every RoCEv2 packet captured whole, recomputed and checked.

The files of one capture's ring (tcpdump -C/-W: cap.roce.pcap0 … cap.roce.pcap3)
are read as one capture, in the order of their first packets; files of different
captures are summarised one after another. A FOLDER (a host's captures/ folder)
means the captures in it; a RUN (a run directory, LAB/ID as rlab runs prints it, a
run id or a lab name) means every capture of the run; nothing means every capture
of the newest run under runs/.

--flow N draws the first N packets between the two ends as a ladder diagram.
--iograph FILE.svg writes throughput over time (bits/s per --interval) for all
RoCEv2, each operation class and TCP (of one capture).`,
		Example: `  rlab pcap runs/quickstart/2026-11-26T100000Z/hosts/server/captures/cap.roce.pcap
  rlab pcap cap.roce.pcap0 cap.roce.pcap1 cap.roce.pcap2 cap.roce.pcap3
  rlab pcap runs/quickstart/2026-11-26T100000Z/hosts/server/captures/
  rlab pcap quickstart/2026-11-26T100000Z     # every capture of the run
  rlab pcap --flow 30 cap.roce.pcap`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// "--flow 30 FILE" and "FILE --flow 30": pflag gives an optional
			// value only with "=", so take the count from the arguments.
			if cmd.Flags().Changed("flow") {
				if n, rest, ok := flowCountArg(args); ok {
					flowN, args = n, rest
				}
			}
			if interval <= 0 {
				return withCode(exitFail, fmt.Errorf("--interval must be positive, got %s", interval))
			}
			groups, err := pcapInputs(cmd, args)
			if err != nil {
				return withCode(exitFail, err)
			}
			if svgPath != "" && len(groups) > 1 {
				return withCode(exitFail, fmt.Errorf("--iograph draws one capture, and %d were given: name one capture's files", len(groups)))
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			var docs []any
			for gi, files := range groups {
				sum := roce.NewSummary()
				sum.File = strings.Join(files, " ")
				var ladder *roce.Ladder
				if flowN > 0 {
					ladder = roce.NewLadder(flowN)
				}
				var graph *iograph.Builder
				if svgPath != "" {
					graph = iograph.NewBuilder(interval)
				}
				if len(files) > 1 {
					files = report.OrderCaptureFiles(files)
				}
				res, err := report.ScanCapture(files, func(p *roce.Packet) error {
					sum.Add(p)
					if ladder != nil {
						ladder.Add(p)
					}
					if graph != nil {
						graph.Add(p)
					}
					return nil
				})
				if err != nil {
					return withCode(exitFail, err)
				}
				sum.CutShort = res.CutShort
				sum.Finish()
				switch {
				case asJSON && ladder != nil:
					// The summary's fields and the ladder's arrows in one object.
					docs = append(docs, struct {
						*roce.Summary
						Files  []string         `json:"files"`
						Ladder []roce.LadderRow `json:"ladder"`
					}{sum, files, ladder.Rows()})
				case asJSON:
					docs = append(docs, struct {
						*roce.Summary
						Files []string `json:"files"`
					}{sum, files})
				default:
					if gi > 0 {
						fmt.Fprintln(out)
					}
					if len(files) > 1 {
						fmt.Fprintf(out, "one capture in %d files, read in time order: %s\n", len(files), termText(strings.Join(files, ", ")))
					}
					err = roce.WriteText(out, sum)
					if err == nil && ladder != nil {
						fmt.Fprintln(out)
						err = ladder.WriteLadder(out)
					}
				}
				if err != nil {
					return withCode(exitFail, fmt.Errorf("write summary of %q: %w", sum.File, err))
				}
				if graph != nil {
					if err := writeGraph(svgPath, graph.Graph()); err != nil {
						return withCode(exitFail, err)
					}
				}
			}
			if asJSON {
				e := json.NewEncoder(out)
				e.SetIndent("", "  ")
				var err error
				if len(docs) == 1 {
					err = e.Encode(docs[0])
				} else {
					err = e.Encode(docs)
				}
				if err != nil {
					return withCode(exitFail, fmt.Errorf("write summary: %w", err))
				}
			}
			return out.Flush()
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON (an array when there are several captures)")
	f.IntVar(&flowN, "flow", 0, "draw a ladder diagram of the first N packets (--flow alone: 20)")
	f.Lookup("flow").NoOptDefVal = "20"
	f.StringVar(&svgPath, "iograph", "", "write an IO graph (SVG) to this file")
	f.DurationVar(&interval, "interval", 100*time.Millisecond, "IO graph bucket width")
	return cmd
}

// pcapInputs turns pcap's arguments into captures, each the list of its
// files: files as given (a ring's files grouped), a folder's capture
// files, or every capture of a run (the newest run without arguments).
func pcapInputs(cmd *cobra.Command, args []string) ([][]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(f string) error {
		if seen[f] {
			return fmt.Errorf("%s is given twice", f)
		}
		seen[f] = true
		files = append(files, f)
		return nil
	}
	captureFolder := func(dir string) ([]string, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range ents {
			if !e.IsDir() && report.IsCaptureFile(e.Name()) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
		return out, nil
	}
	runCaptures := func(run string) ([]string, error) {
		hosts, err := filepath.Glob(filepath.Join(run, "hosts", "*", "captures"))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, h := range hosts {
			fs, err := captureFolder(h)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("run %s has no captures (hosts/*/captures/ is empty)", run)
		}
		return out, nil
	}
	if len(args) == 0 {
		args = []string{""}
	}
	for _, a := range args {
		var got []string
		st, err := os.Stat(a)
		switch {
		case a != "" && err == nil && !st.IsDir():
			got = []string{a}
		case a != "" && err == nil && !isRunDir(a):
			got, err = captureFolder(a)
			if err == nil && len(got) == 0 {
				if run, _, rerr := results.ResolveRun(results.DefaultRunsRoot, a); rerr == nil {
					got, err = runCaptures(run)
				} else {
					err = fmt.Errorf("%s holds no capture files (*.pcap, *.pcapN, *.pcapng) and no runs", a)
				}
			}
		default:
			run, note, rerr := results.ResolveRun(results.DefaultRunsRoot, a)
			if rerr != nil {
				if a != "" && strings.Contains(a, ".pcap") {
					return nil, fmt.Errorf("read capture %q: %w", a, os.ErrNotExist)
				}
				return nil, rerr
			}
			if note != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "pcap: %s\n", termText(note))
			}
			got, err = runCaptures(run)
		}
		if err != nil {
			return nil, err
		}
		for _, f := range got {
			if err := add(f); err != nil {
				return nil, err
			}
		}
	}
	return report.GroupCaptureFiles(files), nil
}

func isRunDir(d string) bool {
	_, err := os.Stat(filepath.Join(d, results.ResultsFile))
	return err == nil
}

// flowCountArg finds the argument that is the --flow count (a positive
// number that is not a file) and returns the others.
func flowCountArg(args []string) (int, []string, bool) {
	for i, a := range args {
		if n, err := strconv.Atoi(a); err == nil && n > 0 {
			if _, err := os.Stat(a); err == nil {
				continue
			}
			return n, append(append([]string(nil), args[:i]...), args[i+1:]...), true
		}
	}
	return 0, args, false
}

func writeGraph(path string, g *iograph.Graph) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write IO graph: %w", err)
	}
	w := bufio.NewWriter(f)
	err = iograph.WriteSVG(w, g)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write IO graph %q: %w", path, err)
	}
	return nil
}

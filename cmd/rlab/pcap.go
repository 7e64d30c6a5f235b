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
	"github.com/rlab-dev/rlab/engine/iwarp"
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
		Short: "Summarise a RoCEv2 or iWARP capture: connections, opcodes, NAKs, retransmissions, a ladder diagram, an IO graph",
		Long: `pcap decodes a pcap or pcapng capture (RoCEv2 on UDP 4791 over Ethernet, VLAN,
IPv4 or IPv6; TCP is counted beside it) without Wireshark, and prints per connection
(addresses and destination QP) and per opcode: packets, bytes, payload bytes, first
and last time; NAKs, RNR NAKs, retransmitted PSNs and CNPs; the RDMA-CM messages on
QP1; how many frames the snaplen truncated or were malformed; and the ICRC of
every RoCEv2 packet captured whole, recomputed and checked.

iWARP (soft-iWARP, siw) is found in any TCP connection by its MPA handshake
("MPA ID Req Frame", "MPA ID Rep Frame"), or, for a connection set up before the
capture began (said so), by its FPDU headers: per connection the MPA Request and
Reply (revision, markers, CRC, private data, MPAv2 IRD/ORD), and per direction the
FPDUs per RDMAP opcode (packets, bytes, payload, first and last time), the CRC32c
of every FPDU captured whole when the connection negotiated CRCs, Terminate
messages, and TCP retransmissions, out-of-order segments, zero windows and the
bytes the snaplen cut or no frame carried.

The files of one capture's ring (tcpdump -C/-W: cap.roce.pcap0 … cap.roce.pcap3)
are read as one capture, in the order of their first packets; files of different
captures are summarised one after another. A FOLDER (a host's captures/ folder)
means the captures in it; a RUN (a run directory, LAB/ID as rlab runs prints it, a
run id or a lab name) means every capture of the run; nothing means every capture
of the newest run under runs/.

--flow N draws the first N packets between the two ends as a ladder diagram
(and the first N MPA frames and FPDUs of the first iWARP connection).
--iograph FILE.svg writes throughput over time (bits/s per --interval) for all
RoCEv2, each operation class, TCP and iWARP (its FPDUs also in WRITE, READ and
SEND) (of one capture).`,
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
				// iWARP rides the same pass over the frames: its analyzer
				// reassembles the TCP streams the decoder hands it.
				iw := iwarp.NewAnalyzer()
				var iwLadder *iwarp.Ladder
				if flowN > 0 {
					iwLadder = iwarp.NewLadder(flowN)
				}
				iw.OnEvent = func(e *iwarp.Event) {
					if iwLadder != nil {
						iwLadder.Add(e)
					}
					if graph != nil && e.MPA == nil {
						graph.AddIWARP(e.Time, e.Bytes, iwarp.IOSeries(e.Seg.Opcode))
					}
				}
				if len(files) > 1 {
					files = report.OrderCaptureFiles(files)
				}
				res, err := report.ScanCapture(files, func(p *roce.Packet) error {
					sum.Add(p)
					iw.Add(p)
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
				iws := iw.Finish()
				var iwDoc *iwarpDoc
				if len(iws.Conns) > 0 {
					iwDoc = &iwarpDoc{Summary: iws}
					if iwLadder != nil {
						iwDoc.Ladder = iwLadder.Rows()
					}
				}
				switch {
				case asJSON && ladder != nil:
					// The summary's fields and the ladder's arrows in one object.
					docs = append(docs, struct {
						*roce.Summary
						Files  []string         `json:"files"`
						Ladder []roce.LadderRow `json:"ladder"`
						IWARP  *iwarpDoc        `json:"iwarp,omitempty"`
					}{sum, files, ladder.Rows(), iwDoc})
				case asJSON:
					docs = append(docs, struct {
						*roce.Summary
						Files []string  `json:"files"`
						IWARP *iwarpDoc `json:"iwarp,omitempty"`
					}{sum, files, iwDoc})
				default:
					if gi > 0 {
						fmt.Fprintln(out)
					}
					if len(files) > 1 {
						fmt.Fprintf(out, "one capture in %d files, read in time order: %s\n", len(files), termText(strings.Join(files, ", ")))
					}
					err = roce.WriteText(out, sum)
					if err == nil && iwDoc != nil {
						fmt.Fprintln(out)
						err = iwarp.WriteText(out, iws, sum.First)
					}
					if err == nil && ladder != nil && (sum.RoCEPackets > 0 || iwDoc == nil) {
						fmt.Fprintln(out)
						err = ladder.WriteLadder(out)
					}
					if err == nil && iwLadder != nil && iwDoc != nil {
						fmt.Fprintln(out)
						err = iwLadder.WriteLadder(out)
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
		// The captures results.json's artifacts list (older runs: by name).
		doc, _ := results.ReadRun(run)
		rels, err := results.CapturesOf(doc, run, report.IsCaptureFile)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, rel := range rels {
			out = append(out, filepath.Join(run, filepath.FromSlash(rel)))
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

// iwarpDoc is the iWARP part of a capture's JSON summary.
type iwarpDoc struct {
	*iwarp.Summary
	Ladder []iwarp.LadderRow `json:"ladder,omitempty"`
}

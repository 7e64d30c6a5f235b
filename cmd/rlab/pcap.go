package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/engine/attrib"
	"github.com/rlab-dev/rlab/engine/iograph"
	"github.com/rlab-dev/rlab/engine/iwarp"
	"github.com/rlab-dev/rlab/engine/report"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/roce"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runevent"
	"github.com/rlab-dev/rlab/engine/termsafe"
)

func newPcapCmd() *cobra.Command {
	var (
		asJSON   bool
		flowN    int
		svgPath  string
		interval time.Duration
		sel      flowSelection
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

A capture inside a run directory (RUN/hosts/HOST/captures/) is read with its
run: the workloads' time windows (events.jsonl), the QPNs their tools printed
(perftest's and the pingpongs' "local address ... QPN" lines) and the port each
tcp workload's server listened on (results.json) name the workload behind each
RoCEv2 QP flow, iWARP connection and other TCP connection (a QP an RDMA-CM REQ
or REP announced counts from that message), and the IO graph marks each
workload's window.

--flow N draws the first N packets between the two ends as a ladder diagram
(and the first N MPA frames and FPDUs of the first iWARP connection). --qp,
--conn, --from/--to and --workload choose which packets it draws (--flow 20
unless given); --retransmits draws only resent RoCEv2 request packets and NAKs, and
retransmitted TCP segments of iWARP connections.
--iograph FILE.svg writes throughput over time (bits/s per --interval) for all
RoCEv2, each operation class, TCP and iWARP (its FPDUs also in WRITE, READ and
SEND) (of one capture).`,
		Example: `  rlab pcap runs/quickstart/2026-11-26T100000Z/hosts/server/captures/cap.roce.pcap
  rlab pcap cap.roce.pcap0 cap.roce.pcap1 cap.roce.pcap2 cap.roce.pcap3
  rlab pcap runs/quickstart/2026-11-26T100000Z/hosts/server/captures/
  rlab pcap quickstart/2026-11-26T100000Z     # every capture of the run
  rlab pcap --flow 30 cap.roce.pcap
  rlab pcap --workload write_bw --qp 0x11 quickstart/2026-11-26T100000Z
  rlab pcap --conn 10.99.0.1-10.99.0.2 --from 1.5 --to 2 cap.roce.pcap
  rlab pcap --retransmits 50 cap.roce.pcap`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// "--flow 30 FILE" and "FILE --flow 30": pflag gives an optional
			// value only with "=", so take the count from the arguments.
			if cmd.Flags().Changed("flow") || sel.any() {
				if n, rest, ok := flowCountArg(args); ok {
					flowN, args = n, rest
				}
			}
			if interval <= 0 {
				return withCode(exitFail, fmt.Errorf("--interval must be positive, got %s", interval))
			}
			if err := sel.parse(); err != nil {
				return withCode(exitFail, err)
			}
			if sel.any() && flowN == 0 {
				flowN = 20
			}
			groups, err := pcapInputs(cmd, args)
			if err != nil {
				return withCode(exitFail, err)
			}
			if svgPath != "" && len(groups) > 1 {
				return withCode(exitFail, fmt.Errorf("--iograph draws one capture, and %d were given: name one capture's files", len(groups)))
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			// With several captures, -json writes each one's document as it
			// is made (an array, as json.MarshalIndent writes one), not all
			// of them at the end: every document carries its run's
			// workloads, and a received run directory may hold thousands of
			// captures beside thousands of workloads.
			docs := 0
			emit := func(v any) error {
				if len(groups) == 1 {
					return writeJSON(out, v)
				}
				b, err := json.MarshalIndent(v, "  ", "  ")
				if err != nil {
					return err
				}
				sep := ",\n  "
				if docs == 0 {
					sep = "[\n  "
				}
				docs++
				out.WriteString(sep)
				_, err = out.Write(termsafe.JSON(b))
				return err
			}
			// Each run directory is read once (attrib.Load reads its
			// events.jsonl, results.json and tool logs, each up to
			// rundir.MaxFile), not once per capture in it.
			runs := map[string]*attrib.Run{}
			one := func(gi int, files []string) error {
				var err error
				sum := roce.NewSummary()
				sum.File = strings.Join(files, " ")
				// A capture inside a run directory (hosts/H/captures/)
				// has its workloads to be named after.
				var run *attrib.Run
				if dir := runOfCapture(files[0]); dir != "" {
					if run = runs[dir]; run == nil {
						if run, err = loadRun(dir); err != nil {
							return withCode(exitFail, err)
						}
						runs[dir] = run
					}
				}
				keepRoCE, keepIWARP, err := sel.filters(run)
				if err != nil {
					return withCode(exitFail, err)
				}
				var ladder *roce.Ladder
				if flowN > 0 {
					ladder = roce.NewLadder(flowN)
					ladder.Keep, ladder.Resent = keepRoCE, sel.resent
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
					iwLadder.Keep, iwLadder.Resent = keepIWARP, sel.resent
					if sel.resent {
						iw.OnResent = iwLadder.Add
					}
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
				// Without a ladder, which draws packets in file order, every
				// core reads the capture (report.AnalyzeSplit); the merge
				// makes what one pass makes.
				var split *report.Analysis
				if workers := splitWorkers(); flowN == 0 && workers > 0 {
					var iv time.Duration
					if graph != nil {
						iv = interval
					}
					a, ok, err := report.AnalyzeSplit(files, workers, iv, true)
					if err != nil {
						return withCode(exitFail, err)
					}
					if ok {
						split = a
					}
				}
				var iws *iwarp.Summary
				if split != nil {
					split.Summary.File = sum.File
					sum, iws = split.Summary, split.IWARP
				} else {
					res, err := report.ScanCapture(files, func(p *roce.Packet) error {
						if sel.t0.IsZero() {
							sel.t0 = p.Time
						}
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
					iws = iw.Finish()
				}
				var named []attrib.Named
				if run != nil {
					named = run.Capture(sum, iws)
				}
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
					err = emit(struct {
						*roce.Summary
						Files  []string         `json:"files"`
						Ladder []roce.LadderRow `json:"ladder"`
						IWARP  *iwarpDoc        `json:"iwarp,omitempty"`
						Run    *runDoc          `json:"run,omitempty"`
					}{sum, files, ladder.Rows(), iwDoc, newRunDoc(run, named)})
				case asJSON:
					err = emit(struct {
						*roce.Summary
						Files []string  `json:"files"`
						IWARP *iwarpDoc `json:"iwarp,omitempty"`
						Run   *runDoc   `json:"run,omitempty"`
					}{sum, files, iwDoc, newRunDoc(run, named)})
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
					if err == nil && run != nil {
						fmt.Fprintln(out)
						err = attrib.WriteText(out, run, named, sum.First)
					}
					// With a selection, draw the ladders it found packets
					// for (the RoCEv2 one, saying so, when neither).
					roceRows := ladder != nil && len(ladder.Rows()) > 0
					iwRows := iwLadder != nil && len(iwLadder.Rows()) > 0
					drawRoCE := ladder != nil && (sum.RoCEPackets > 0 || iwDoc == nil)
					drawIW := iwLadder != nil && iwDoc != nil
					if sel.any() {
						drawRoCE = ladder != nil && (roceRows || !iwRows)
						drawIW = iwRows
					}
					if err == nil && drawRoCE {
						fmt.Fprintln(out)
						err = ladder.WriteLadder(out)
					}
					if err == nil && drawIW {
						fmt.Fprintln(out)
						err = iwLadder.WriteLadder(out)
					}
				}
				if err != nil {
					return withCode(exitFail, fmt.Errorf("write summary of %q: %w", sum.File, err))
				}
				if graph != nil {
					var g *iograph.Graph
					if split != nil {
						g = split.IO
					} else {
						g = graph.Graph()
					}
					if run != nil {
						for _, w := range run.Windows(sum.First, sum.Last) {
							g.Marks = append(g.Marks, iograph.Mark{Name: w.Name, Start: w.Start, End: w.End})
						}
					}
					if err := writeGraph(svgPath, g); err != nil {
						return withCode(exitFail, err)
					}
				}
				return nil
			}
			for gi, files := range groups {
				err := one(gi, files)
				if err == nil {
					continue
				}
				// What was written stays written, and the document stays
				// one: with several captures, -json ends its array with the
				// failed capture's files and error, and closes it.
				if asJSON && len(groups) > 1 {
					if eerr := emit(struct {
						Files []string `json:"files"`
						Error string   `json:"error"`
					}{files, err.Error()}); eerr == nil {
						out.WriteString("\n]\n")
					}
				}
				if ferr := out.Flush(); ferr != nil {
					return withCode(exitFail, ferr)
				}
				return err
			}
			if asJSON && len(groups) > 1 {
				if docs == 0 {
					out.WriteString("[]\n")
				} else {
					out.WriteString("\n]\n")
				}
			}
			return out.Flush()
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON (an array when there are several captures, ended by {files, error} at one that cannot be read)")
	f.IntVar(&flowN, "flow", 0, "draw a ladder diagram of the first N packets (--flow alone: 20)")
	f.Lookup("flow").NoOptDefVal = "20"
	f.StringVar(&sel.qp, "qp", "", "the ladder shows this connection's QPs only: QPN[,QPN] (hex 0x11 or decimal; both ends' when they differ)")
	f.StringVar(&sel.conn, "conn", "", "the ladder shows this connection only: ADDR-ADDR (RoCEv2) or ADDR:PORT-ADDR:PORT (iWARP), either order")
	f.StringVar(&sel.from, "from", "", "the ladder starts at this time: seconds since the capture's first frame (1.5, 1.5s, 300ms)")
	f.StringVar(&sel.to, "to", "", "the ladder ends at this time, as --from")
	f.StringVar(&sel.workload, "workload", "", "the ladder shows this workload's time window (a capture in a run directory)")
	f.BoolVar(&sel.resent, "retransmits", false, "the ladder shows only resent RoCEv2 request packets and NAKs, and retransmitted TCP segments of iWARP")
	f.StringVar(&svgPath, "iograph", "", "write an IO graph (SVG) to this file")
	f.DurationVar(&interval, "interval", 100*time.Millisecond, "IO graph bucket width")
	return cmd
}

// splitWorkers is how many workers read a capture split by flow
// (report.AnalyzeSplit): one per core, one on one core too, where the
// split scan's reader costs less CPU than the sequential one (gopacket's
// pcapgo) for the same output (BENCHMARKS.md, "Why 2 cores cost less CPU
// than one"); 0, the sequential reader, only when a test asks for it
// (pcapSequential).
func splitWorkers() int {
	if pcapSequential {
		return 0
	}
	return max(1, runtime.GOMAXPROCS(0))
}

// pcapSequential makes rlab pcap read every capture with the sequential
// reader, for tests that compare the split scan with it.
var pcapSequential bool

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
	// A capture found in a folder or a run (not named by the user) is read
	// only when it is a regular file of that folder or run (engine/rundir,
	// as report reads them): a received run directory's symlink to a file
	// of the reader's is skipped, and said.
	confined := func(dir, rel string) bool {
		f, err := rundir.Open(dir, rel)
		if err == nil {
			if err = rundir.CheckCapture(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "pcap: skipped %s: %s\n", termText(filepath.Join(dir, filepath.FromSlash(rel))), termText(confinedErr(err)))
			return false
		}
		f.Close()
		return true
	}
	captureFolder := func(dir string) ([]string, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range ents {
			if !e.IsDir() && report.IsCaptureFile(e.Name()) && confined(dir, e.Name()) {
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
			if confined(run, rel) {
				out = append(out, filepath.Join(run, filepath.FromSlash(rel)))
			}
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

// confinedErr is why rundir refused a file, without the path it names
// (the caller names it).
func confinedErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
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

// loadRun reads a run directory's workloads (a variable for the test that
// counts the reads).
var loadRun = attrib.Load

// runDoc is the run part of a capture's JSON summary: its workloads and
// the capture's connections named after them.
type runDoc struct {
	*attrib.Run
	Connections []attrib.Named `json:"connections"`
}

func newRunDoc(r *attrib.Run, named []attrib.Named) *runDoc {
	if r == nil {
		return nil
	}
	if named == nil {
		named = []attrib.Named{}
	}
	var first, last time.Time
	for i, n := range named {
		if i == 0 || n.First.Before(first) {
			first = n.First
		}
		if n.Last.After(last) {
			last = n.Last
		}
	}
	return &runDoc{r.Listed(first, last), named}
}

// runOfCapture returns the run directory a capture file sits in
// (RUN/hosts/HOST/captures/FILE), or "" when it is not in one.
func runOfCapture(file string) string {
	caps := filepath.Dir(file)
	hosts := filepath.Dir(filepath.Dir(caps))
	if filepath.Base(caps) != "captures" || filepath.Base(hosts) != "hosts" {
		return ""
	}
	run := filepath.Dir(hosts)
	if isRunDir(run) {
		return run
	}
	if _, err := os.Stat(filepath.Join(run, runevent.File)); err == nil {
		return run
	}
	return ""
}

// flowSelection is what --qp, --conn, --from, --to, --workload and
// --retransmits choose for the ladder.
type flowSelection struct {
	qp, conn, from, to, workload string
	resent                       bool

	qpns     []uint32
	addrs    [2]netip.Addr
	ports    [2]netip.AddrPort
	byPort   bool
	fromD    time.Duration
	toD      time.Duration
	hasFrom  bool
	hasTo    bool
	t0       time.Time // the capture's first frame, set while scanning
	winStart time.Time // --workload's window
	winEnd   time.Time
}

func (s *flowSelection) any() bool {
	return s.qp != "" || s.conn != "" || s.from != "" || s.to != "" || s.workload != "" || s.resent
}

func (s *flowSelection) parse() error {
	if s.qp != "" {
		for _, f := range strings.Split(s.qp, ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 0, 32)
			if err != nil || v > 0xffffff {
				return fmt.Errorf("--qp %q: want QP numbers such as 0x11 or 0x11,0x12 (24 bits)", termText(s.qp))
			}
			s.qpns = append(s.qpns, uint32(v))
		}
	}
	if s.conn != "" {
		a, b, ok := strings.Cut(s.conn, "-")
		if ap, err := netip.ParseAddrPort(a); ok && err == nil {
			bp, err := netip.ParseAddrPort(b)
			if err != nil {
				return fmt.Errorf("--conn %q: want ADDR:PORT-ADDR:PORT for a TCP (iWARP) connection", termText(s.conn))
			}
			s.ports, s.byPort = [2]netip.AddrPort{ap, bp}, true
			s.addrs = [2]netip.Addr{ap.Addr(), bp.Addr()}
		} else {
			aa, err1 := netip.ParseAddr(a)
			ba, err2 := netip.ParseAddr(b)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("--conn %q: want ADDR-ADDR (the two ends of a RoCEv2 connection) or ADDR:PORT-ADDR:PORT (IPv6 as [::1]:4000)", termText(s.conn))
			}
			s.addrs = [2]netip.Addr{aa, ba}
		}
	}
	var err error
	if s.from != "" {
		if s.fromD, err = parseOffset(s.from); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		s.hasFrom = true
	}
	if s.to != "" {
		if s.toD, err = parseOffset(s.to); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
		s.hasTo = true
	}
	if s.hasFrom && s.hasTo && s.toD < s.fromD {
		return fmt.Errorf("--to %s is before --from %s", s.toD, s.fromD)
	}
	return nil
}

// parseOffset reads "1.5" (seconds) or a Go duration ("1.5s", "300ms").
func parseOffset(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e9 {
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want seconds since the capture's first frame (1.5) or a duration (1.5s, 300ms)", termText(v))
	}
	return d, nil
}

// filters returns the ladder's selections (nil: all), resolving
// --workload in run.
func (s *flowSelection) filters(run *attrib.Run) (func(*roce.Packet) bool, func(*iwarp.Event) bool, error) {
	s.winStart, s.winEnd = time.Time{}, time.Time{}
	if s.workload != "" {
		if run == nil {
			return nil, nil, fmt.Errorf("--workload %q: the capture is not in a run directory (RUN/hosts/HOST/captures/), so no workload is known", termText(s.workload))
		}
		var names []string
		for _, w := range run.Workloads {
			if w.Name == s.workload {
				s.winStart, s.winEnd = w.Start, w.End
			}
			names = append(names, w.Name)
		}
		if s.winStart.IsZero() {
			return nil, nil, fmt.Errorf("--workload %q: the run has no such workload with a window; it has: %s", termText(s.workload), strings.Join(names, ", "))
		}
	}
	if s.qp == "" && s.conn == "" && s.from == "" && s.to == "" && s.workload == "" {
		return nil, nil, nil
	}
	inTime := func(t time.Time) bool {
		if !s.winStart.IsZero() && (t.Before(s.winStart.Add(-attrib.Slack)) || t.After(s.winEnd.Add(attrib.Slack))) {
			return false
		}
		off := t.Sub(s.t0)
		return (!s.hasFrom || off >= s.fromD) && (!s.hasTo || off <= s.toD)
	}
	ends := func(a, b netip.Addr) bool {
		return s.conn == "" || a == s.addrs[0] && b == s.addrs[1] || a == s.addrs[1] && b == s.addrs[0]
	}
	keepRoCE := func(p *roce.Packet) bool {
		if s.byPort || !ends(p.Src, p.Dst) || !inTime(p.Time) {
			return false
		}
		if len(s.qpns) > 0 {
			for _, q := range s.qpns {
				if p.BTH.DestQP == q {
					return true
				}
			}
			return false
		}
		return true
	}
	keepIWARP := func(e *iwarp.Event) bool {
		if len(s.qpns) > 0 || !inTime(e.Time) {
			return false
		}
		d := e.Conn.Dirs[0]
		if s.byPort {
			return d.Src == s.ports[0] && d.Dst == s.ports[1] || d.Src == s.ports[1] && d.Dst == s.ports[0]
		}
		return ends(d.Src.Addr(), d.Dst.Addr())
	}
	return keepRoCE, keepIWARP, nil
}

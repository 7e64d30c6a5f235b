package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rlab-dev/rlab/engine/iograph"
	"github.com/rlab-dev/rlab/engine/roce"
	"github.com/spf13/cobra"
)

func newPcapCmd() *cobra.Command {
	var (
		asJSON   bool
		flowN    int
		svgPath  string
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pcap FILE",
		Short: "Summarise a RoCEv2 capture: connections, opcodes, NAKs, retransmissions, a ladder diagram, an IO graph",
		Long: `pcap decodes a pcap or pcapng capture (RoCEv2 on UDP 4791 over Ethernet, VLAN,
IPv4 or IPv6; TCP is counted beside it) without Wireshark, and prints per connection
(addresses and destination QP) and per opcode: packets, bytes, payload bytes, first
and last time; NAKs, RNR NAKs, retransmitted PSNs and CNPs; the RDMA-CM messages on
QP1; how many frames the snaplen truncated or were malformed; and the ICRC of
every RoCEv2 packet captured whole, recomputed and checked.

--flow N draws the first N packets between the two ends as a ladder diagram.
--iograph FILE.svg writes throughput over time (bits/s per --interval) for all
RoCEv2, each operation class and TCP.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// "--flow 30 FILE" and "FILE --flow 30": pflag gives an optional
			// value only with "=", so take the count from the arguments.
			if len(args) == 2 {
				n, file, ok := flowCountArg(args)
				if !ok || !cmd.Flags().Changed("flow") {
					return withCode(exitFail, fmt.Errorf("expected one capture file, got %q", args))
				}
				flowN, args = n, []string{file}
			}
			if interval <= 0 {
				return withCode(exitFail, fmt.Errorf("--interval must be positive, got %s", interval))
			}
			sum := roce.NewSummary()
			sum.File = args[0]
			var ladder *roce.Ladder
			if flowN > 0 {
				ladder = roce.NewLadder(flowN)
			}
			var graph *iograph.Builder
			if svgPath != "" {
				graph = iograph.NewBuilder(interval)
			}
			res, err := roce.ScanFile(args[0], func(p *roce.Packet) error {
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
			out := bufio.NewWriter(cmd.OutOrStdout())
			switch {
			case asJSON && ladder != nil:
				// The summary's fields and the ladder's arrows in one object.
				e := json.NewEncoder(out)
				e.SetIndent("", "  ")
				err = e.Encode(struct {
					*roce.Summary
					Ladder []roce.LadderRow `json:"ladder"`
				}{sum, ladder.Rows()})
			case asJSON:
				err = roce.WriteJSON(out, sum)
			default:
				err = roce.WriteText(out, sum)
			}
			if err == nil && ladder != nil && !asJSON {
				fmt.Fprintln(out)
				err = ladder.WriteLadder(out)
			}
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return withCode(exitFail, fmt.Errorf("write summary of %q: %w", args[0], err))
			}
			if graph != nil {
				if err := writeGraph(svgPath, graph.Graph()); err != nil {
					return withCode(exitFail, err)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	f.IntVar(&flowN, "flow", 0, "draw a ladder diagram of the first N packets (--flow alone: 20)")
	f.Lookup("flow").NoOptDefVal = "20"
	f.StringVar(&svgPath, "iograph", "", "write an IO graph (SVG) to this file")
	f.DurationVar(&interval, "interval", 100*time.Millisecond, "IO graph bucket width")
	return cmd
}

// flowCountArg finds which of two arguments is the --flow count.
func flowCountArg(args []string) (int, string, bool) {
	for i, a := range args {
		if n, err := strconv.Atoi(a); err == nil && n > 0 {
			return n, args[1-i], true
		}
	}
	return 0, "", false
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

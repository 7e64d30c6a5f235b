package attrib

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// WriteText writes the run's workloads and the capture's connections
// named after them, times in seconds since first (the capture's first
// frame). Every name was made safe to print when it was read.
func WriteText(w io.Writer, r *Run, named []Named, first time.Time) error {
	all := r
	r = r.Listed(first, lastOf(named))
	b := &strings.Builder{}
	rel := func(t time.Time) string { return fmt.Sprintf("%.6f", t.Sub(first).Seconds()) }
	fmt.Fprintf(b, "workloads of the run (windows in seconds since the capture's first frame)\n")
	tw := termsafe.NewTable(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  workload\ttool\tstart\tend\tQPNs in its output")
	for _, wl := range r.Workloads {
		var qs []string
		for _, q := range wl.QPNs {
			qs = append(qs, fmt.Sprintf("0x%06x", q))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", wl.Name, dash(wl.Tool), rel(wl.Start), rel(wl.End), dash(strings.Join(qs, " ")))
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	fmt.Fprintf(b, "\nconnections by workload\n")
	tw = termsafe.NewTable(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  transport\tconnection\tpackets\tfirst\tlast\tworkload\tby")
	unnamed := 0
	for _, n := range named {
		if len(n.Workloads) == 0 {
			unnamed++
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%s\n", n.Transport, n.Conn, n.Packets, rel(n.First), rel(n.Last), n.Name(), dash(n.By))
	}
	tw.Flush()
	outside := len(named) > 0 && len(all.Workloads) > 0 && len(all.Windows(first, lastOf(named))) == 0
	if unnamed > 0 {
		fmt.Fprintf(b, "  %d connections fall in no workload's window and carry no QPN a tool printed\n", unnamed)
	}
	if outside {
		b.WriteString("  no workload's window overlaps this capture (taken in another run, or the capture host's clock is off): only QPNs can name its connections\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func lastOf(named []Named) time.Time {
	var t time.Time
	for _, n := range named {
		if n.Last.After(t) {
			t = n.Last
		}
	}
	return t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package results

import (
	"strings"
	"testing"
)

// TestSummaryImpairment: summary.md says, for each workload that ran under
// an impairment, which (name, netem parameters, netdev and host, as the
// run tagged its samples), as report.html does; an unimpaired workload
// says nothing of it. The compact summary of a large lab has a column.
func TestSummaryImpairment(t *testing.T) {
	const lossy = `loss["1"]: loss 1% delay 2ms on eth1 of server`
	sample := func(wl, impair string) Sample {
		s := Sample{Metric: "bw_avg", Value: 0.5, Unit: "Gb/s", Meta: Meta{Workload: wl, Tool: "ib_write_bw", Size: 65536, Hosts: []string{"server", "client"}}}
		if impair != "" {
			one := 1.0
			s.Meta.Extra, s.Meta.ImpairLoss = map[string]string{ImpairExtra: impair}, &one
		}
		return s
	}
	r := &Run{Lab: "lossy", Status: RunOK,
		Workloads: []Workload{{Name: `write["0"]`, Tool: "ib_write_bw", Status: StatusOK}, {Name: `write["1"]`, Tool: "ib_write_bw", Status: StatusOK}},
		Samples:   []Sample{sample(`write["0"]`, ""), sample(`write["1"]`, lossy)},
	}
	md := string(Summary(r, ""))
	_, impaired, ok := strings.Cut(md, "## "+mdText(`write["1"]`)+" (ib_write_bw)\n\n")
	if !ok || !strings.HasPrefix(impaired, "Under impairment: "+mdText(lossy)+".\n") {
		t.Errorf("the impaired workload's section does not start with its impairment:\n%s", md)
	}
	if n := strings.Count(md, "Under impairment"); n != 1 {
		t.Errorf("%d impairment lines, want 1 (the unimpaired workload has none):\n%s", n, md)
	}

	// A class-sized lab: one row per workload, the impairment in a column.
	big := &Run{Lab: "sweep", Status: RunOK}
	for i := 0; i < compactAt; i++ {
		name := "w" + strings.Repeat("x", i)
		imp := ""
		if i == 1 {
			imp = lossy
		}
		big.Workloads = append(big.Workloads, Workload{Name: name, Tool: "ib_write_bw", Status: StatusOK})
		big.Samples = append(big.Samples, sample(name, imp))
	}
	md = string(Summary(big, ""))
	for _, want := range []string{
		"| workload | hosts | status | expects | impairment | size | bw_avg |\n|---|---|---|---|---|---:|---:|\n",
		"| wx |  | ok | – | " + mdCell(lossy) + " | 64 KiB |",
		"| w |  | ok | – |  | 64 KiB |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("compact summary lacks %q:\n%s", want, md)
		}
	}
	// Without any impaired workload, no such column.
	big.Samples[1] = sample("wx", "")
	if md = string(Summary(big, "")); strings.Contains(md, "impairment") {
		t.Errorf("an unimpaired run has an impairment column:\n%s", md)
	}
}

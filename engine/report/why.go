package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/roce"
)

// "Slow because of what", per workload (issue 17 item 4): the impairment in
// force, the kernel's trouble counters that moved, and the wire analysis of
// the captures taken during that workload alone, side by side. The loss
// sweep's table (loss.go) puts the same cells beside each point.

// Why is the one-glance answer of a workload: each cell already worded.
type Why struct {
	Impair string `json:"impair"` // "none" when no impairment was in force
	// Trouble lists the trouble counters (results.CounterTrouble) that
	// moved, summed per host ("out_of_seq_request 120 on server"); "none of
	// N moved", or "not read".
	Trouble string `json:"trouble"`
	// Wire is the analysis of the captures scoped to the workload alone;
	// "no capture of its own" without one.
	Wire string `json:"wire"`
	// The wire's numbers, for the loss table's own columns; nil without a
	// capture of its own.
	Retransmits *int64 `json:"retransmitted_psns,omitempty"`
	NAKs        *int64 `json:"naks,omitempty"`
}

// wireSum is the sum over the flows of the summaries of a workload's own
// captures: go-back-N resends, NAKs (by code), RNR NAKs, CNPs.
type wireSum struct {
	files, packets, retrans, naks, rnr, cnps int64
	codes                                    map[uint8]int64
}

// wireOfSummary keeps of a capture's summary what the workloads' "why"
// reads, so a report does not hold every capture's summary (flows, CM
// messages, per-flow maps) until the end.
func wireOfSummary(s *roce.Summary) *wireSum {
	w := &wireSum{files: 1, packets: s.RoCEPackets, codes: map[uint8]int64{}}
	flows := s.Flows
	if s.Overflow != nil {
		flows = append(flows[:len(flows):len(flows)], s.Overflow)
	}
	for _, fl := range flows {
		w.retrans += fl.Retransmits
		w.naks += fl.NAKs
		w.rnr += fl.RNRNAKs
		w.cnps += fl.CNPs
		for c, n := range fl.NAKCodes {
			w.codes[c] += n
		}
	}
	return w
}

// wireOf sums the analysis of the given capture files (a ring's files share
// one analysis, counted once); ok is false when none was read.
func (b *builder) wireOf(files []string) (wireSum, bool) {
	w := wireSum{codes: map[uint8]int64{}}
	seen := map[*wireSum]bool{}
	for _, f := range files {
		s := b.wire[f]
		if s == nil || seen[s] {
			continue
		}
		seen[s] = true
		w.files += s.files
		w.packets += s.packets
		w.retrans += s.retrans
		w.naks += s.naks
		w.rnr += s.rnr
		w.cnps += s.cnps
		for c, n := range s.codes {
			w.codes[c] += n
		}
	}
	return w, w.files > 0
}

func (w wireSum) String() string {
	naks := fmt.Sprintf("%d NAKs", w.naks) + nakCodeText(w.codes)
	return fmt.Sprintf("%d RoCEv2 packets: %d retransmitted PSNs, %s, %d RNR NAKs, %d CNPs", w.packets, w.retrans, naks, w.rnr, w.cnps)
}

// troubleOf words the trouble counters among a workload's counter samples:
// those that moved, summed per counter and host, in the vocabulary's order.
func troubleOf(samples []results.Sample) string {
	type key struct{ counter, host string }
	sum := map[key]float64{}
	var order []key
	read := 0
	for _, s := range samples {
		if !results.IsCounter(s) {
			continue
		}
		c, ok := results.CounterByName(s.Metric)
		if !ok || c.Class != results.CounterTrouble {
			continue
		}
		read++
		if s.Value == 0 {
			continue
		}
		k := key{s.Metric, strings.Join(s.Meta.Hosts, ",")}
		if _, ok := sum[k]; !ok {
			order = append(order, k)
		}
		sum[k] += s.Value
	}
	if read == 0 {
		return "not read"
	}
	if len(order) == 0 {
		return fmt.Sprintf("none of %d moved", read)
	}
	rank := map[string]int{}
	for i, c := range results.Counters {
		rank[c.Name] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].counter != order[j].counter {
			return rank[order[i].counter] < rank[order[j].counter]
		}
		return order[i].host < order[j].host
	})
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = k.counter + " " + results.FormatValue(sum[k])
		if k.host != "" {
			parts[i] += " on " + k.host
		}
	}
	return strings.Join(parts, ", ")
}

// why fills each workload's Why: for every workload that ran under an
// impairment, read counters or has captures of its own.
func (b *builder) why() {
	for i := range b.d.Workloads {
		w := &b.d.Workloads[i]
		ss := b.samples[w.Name]
		y := &Why{Impair: w.Impair, Trouble: troubleOf(ss), Wire: "no capture of its own"}
		if y.Impair == "" {
			y.Impair = "none"
		}
		ws, ok := b.wireOf(b.own[w.Name])
		switch {
		case ok:
			y.Wire = ws.String()
			y.Retransmits, y.NAKs = &ws.retrans, &ws.naks
		case len(b.own[w.Name]) > 0 && b.notAnalysed[b.own[w.Name][0]]:
			y.Wire = fmt.Sprintf("its captures are past the %d this report analyses (see Captures)", maxCaptures)
		case len(b.own[w.Name]) > 0:
			y.Wire = "its captures could not be read (see Captures)"
		}
		if w.Impair == "" && y.Trouble == "not read" && len(b.own[w.Name]) == 0 {
			continue
		}
		w.Why = y
	}
}

package results

import (
	"math"
	"sort"
	"strings"
)

// Key identifies the samples that are repeats of one measurement: the same
// workload, metric and message size between the same hosts. Repeats of a run
// and the same measurement in another run share a Key.
type Key struct {
	Workload string `json:"workload"`
	Tool     string `json:"tool"`
	Metric   string `json:"metric"`
	Size     int64  `json:"size,omitempty"`
	Hosts    string `json:"hosts,omitempty"` // Meta.Hosts joined with ","
}

// KeyOf returns the Key of a sample.
func KeyOf(s Sample) Key {
	return Key{Workload: s.Meta.Workload, Tool: s.Meta.Tool, Metric: s.Metric, Size: s.Meta.Size, Hosts: strings.Join(s.Meta.Hosts, ",")}
}

// Agg is the repeats of one measurement folded: the median is the figure
// rlab reports and compares, min and max show the spread.
type Agg struct {
	Key
	Unit   string    `json:"unit"`
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"` // in repeat order
}

// Aggregate folds samples into one Agg per Key. The order is stable: workloads
// in order of first appearance, then metrics in the order of Metrics(), then
// sizes ascending, then tool names: a total order over Key.
func Aggregate(samples []Sample) []Agg {
	type entry struct {
		agg     Agg
		repeats []int
	}
	byKey := map[Key]*entry{}
	wlOrder := map[string]int{}
	for _, s := range samples {
		k := KeyOf(s)
		if _, ok := wlOrder[k.Workload]; !ok {
			wlOrder[k.Workload] = len(wlOrder)
		}
		e := byKey[k]
		if e == nil {
			e = &entry{agg: Agg{Key: k, Unit: s.Unit}}
			byKey[k] = e
		}
		e.agg.Values = append(e.agg.Values, s.Value)
		e.repeats = append(e.repeats, s.Meta.Repeat)
	}
	out := make([]Agg, 0, len(byKey))
	for _, e := range byKey {
		// values in repeat order (stable for equal repeats)
		idx := make([]int, len(e.repeats))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return e.repeats[idx[a]] < e.repeats[idx[b]] })
		vals := make([]float64, len(idx))
		for i, j := range idx {
			vals[i] = e.agg.Values[j]
		}
		a := e.agg
		a.Values = vals
		a.N = len(vals)
		a.Median = Median(vals)
		a.Min, a.Max = vals[0], vals[0]
		for _, v := range vals {
			a.Min = math.Min(a.Min, v)
			a.Max = math.Max(a.Max, v)
		}
		out = append(out, a)
	}
	ms := Metrics()
	mIdx := make(map[string]int, len(ms))
	for i, m := range ms {
		mIdx[m.Name] = i
	}
	metricIndex := func(name string) int {
		if i, ok := mIdx[name]; ok {
			return i
		}
		return len(ms)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Workload != b.Workload {
			return wlOrder[a.Workload] < wlOrder[b.Workload]
		}
		if a.Hosts != b.Hosts {
			return a.Hosts < b.Hosts
		}
		if ma, mb := metricIndex(a.Metric), metricIndex(b.Metric); ma != mb {
			return ma < mb
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		// The same workload under two tool names (a hand-edited file):
		// the order is still one, not map order.
		return a.Tool < b.Tool
	})
	return out
}

// Median returns the median of v (the mean of the middle two for an even
// count); 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

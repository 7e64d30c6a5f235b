package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/rundir"
)

// hostFacts is the part of a host's facts.json (agent/proto.Facts, written
// by the run as hosts/<host>/facts.json) that decides whether two runs'
// numbers can be compared. It is read here by its JSON shape: only these
// fields are built (Tools is proto.Tools, which refuses a map of more
// than proto.MaxTools).
type hostFacts struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	OS       string `json:"os"`
	Platform struct {
		Product  string `json:"product"`
		RDMACore string `json:"rdma_core"`
	} `json:"platform"`
	Tools proto.Tools `json:"tools"`
}

// runHosts reads the facts of every host of a run directory, by the host's
// folder name; hosts whose facts cannot be read map to nil.
func runHosts(dir string) map[string]*hostFacts {
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(dir, "hosts"))
	if err != nil {
		return nil
	}
	out := map[string]*hostFacts{}
	// One facts.json under many hosts' names (hard links, or symlinks
	// inside the run directory) is read once (SECURITY 119).
	seen := rundir.Files{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		var f hostFacts
		rel := filepath.Join("hosts", e.Name(), "facts.json")
		if !seen.First(filepath.Join(dir, rel)) {
			out[e.Name()] = nil
			continue
		}
		b, err := rundir.ReadFile(dir, rel)
		if err == nil {
			err = proto.CheckValues(b, proto.MaxValues)
		}
		if err != nil || json.Unmarshal(b, &f) != nil {
			out[e.Name()] = nil
			continue
		}
		out[e.Name()] = &f
	}
	return out
}

// runWarnings says how runs a and b differ in what they ran on: the lab, the
// hosts, and each common host's machine type (DMI product: the EC2
// instance type), kernel, OS, rdma-core and tool versions (from facts),
// and the tool versions the samples recorded.
func runWarnings(a, b *Run) []string {
	var w []string
	if a.Lab != b.Lab {
		w = append(w, fmt.Sprintf("the runs are of different labs (%q and %q); only same-named workloads match", a.Lab, b.Lab))
	}
	ha, hb := runHosts(a.Dir), runHosts(b.Dir)
	if len(ha) > 0 && len(hb) > 0 {
		na, nb := sortedKeys(ha), sortedKeys(hb)
		if strings.Join(na, ",") != strings.Join(nb, ",") {
			w = append(w, fmt.Sprintf("the runs have different hosts: A %s, B %s", strings.Join(na, ", "), strings.Join(nb, ", ")))
		}
		for _, h := range na {
			fa, fb := ha[h], hb[h]
			if fa == nil || fb == nil {
				continue
			}
			diff := func(what, va, vb string) {
				if va != vb && va != "" && vb != "" {
					w = append(w, fmt.Sprintf("host %q: %s %s in A, %s in B", h, what, factText(va), factText(vb)))
				}
			}
			diff("hostname", fa.Hostname, fb.Hostname)
			diff("machine type", fa.Platform.Product, fb.Platform.Product)
			diff("kernel", fa.Kernel, fb.Kernel)
			diff("OS", fa.OS, fb.OS)
			diff("rdma-core", fa.Platform.RDMACore, fb.Platform.RDMACore)
			tools := map[string]bool{}
			for t := range fa.Tools {
				tools[t] = true
			}
			for _, t := range sortedKeys(tools) {
				if vb, ok := fb.Tools[t]; ok {
					diff(t, fa.Tools[t].Version, vb.Version)
				}
			}
		}
	}
	// The version each workload's tool reported, for runs without facts.
	va, vb := toolVersions(a), toolVersions(b)
	for _, wl := range sortedKeys(va) {
		if v, ok := vb[wl]; ok && v != va[wl] && (len(ha) == 0 || len(hb) == 0) {
			w = append(w, fmt.Sprintf("workload %q: tool version %s in A, %s in B", wl, factText(va[wl]), factText(v)))
		}
	}
	return w
}

// factText is a value read on a host, quoted when it holds anything but
// printable characters, so a hostile facts.json cannot move the terminal's
// cursor through a warning.
func factText(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// toolVersions maps each workload to the tool version its samples recorded.
func toolVersions(r *Run) map[string]string {
	out := map[string]string{}
	for _, s := range r.Samples {
		if s.Meta.ToolVersion != "" {
			out[s.Meta.Workload] = s.Meta.ToolVersion
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

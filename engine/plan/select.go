package plan

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
)

// Selection happens here, once: Options.Only (and Options.Check) limit the
// lab to what a run runs before it is planned, and Plan.Selected is that
// lab; the run executes the plan and selects nothing itself.

// InstanceKey splits an instance's reference name (`write_bw["ana"]`,
// `server[0]`, `bastion`) into its block label and for_each key; keyed is
// false for a block without for_each. A count index is not a key: students
// are named, and `--only 0` would read as nothing a user means. engine/lab
// formats keys with %q, so strconv.Unquote reads them back exactly.
func InstanceKey(name string) (block, key string, keyed bool) {
	i := strings.IndexByte(name, '[')
	if i < 0 || !strings.HasSuffix(name, "]") {
		return name, "", false
	}
	block, inner := name[:i], name[i+1:len(name)-1]
	if k, err := strconv.Unquote(inner); err == nil && strings.HasPrefix(inner, `"`) {
		return block, k, true
	}
	return block, "", false // count index
}

// selection is what --only picked: workloads, and the rxe devices and
// captures named by a student key (their hosts come with them).
type selection struct {
	workloads map[*lab.Workload]bool
	rxes      map[*lab.Device]bool
	captures  map[*lab.Capture]bool
}

// Prefixes that force how an --only value is read, for a value that is both
// a workload name and a student key.
const (
	onlyWorkloadPrefix = "workload:"
	onlyKeyPrefix      = "key:"
)

// selectOnly reads --only values: each is a workload name (every instance of
// a for_each workload), a full instance address (`write_bw["ana"]`, or its
// slug `write_bw.ana`), or a for_each key (`ana`: every workload, rxe device
// and capture of that student). A value that is both a workload name and a
// key is refused, naming the two readings; an unknown value gets a
// did-you-mean. nil means no --only: run everything.
func selectOnly(l *lab.Lab, only []string) (*selection, error) {
	var vals []string
	for _, v := range only {
		if v = strings.TrimSpace(v); v != "" {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	blocks := map[string]bool{}
	keys := map[string]bool{}
	for _, w := range l.Workloads {
		b, k, keyed := InstanceKey(w.Name)
		blocks[b] = true
		if keyed {
			keys[k] = true
		}
	}
	for _, x := range l.Devices {
		if _, k, keyed := InstanceKey(x.Name); keyed {
			keys[k] = true
		}
	}
	for _, c := range l.Captures {
		if _, k, keyed := InstanceKey(c.Name); keyed {
			keys[k] = true
		}
	}
	for _, h := range l.Hosts {
		if _, k, keyed := InstanceKey(h.Name); keyed {
			keys[k] = true
		}
	}
	sel := &selection{workloads: map[*lab.Workload]bool{}, rxes: map[*lab.Device]bool{}, captures: map[*lab.Capture]bool{}}
	for _, v := range vals {
		asName, asKey := true, true
		word := v
		isName := blocks[v] || l.WorkloadByName(v) != nil || workloadBySlug(l, v) != nil
		isKey := keys[v]
		switch {
		case isName && isKey:
			return nil, fmt.Errorf("--only %q is ambiguous in lab %q: it is both a workload name and a student (for_each) key; write %s%s for the workload or %s%s for the student",
				v, l.Name, onlyWorkloadPrefix, v, onlyKeyPrefix, v)
		case isName || isKey:
			asName, asKey = isName, isKey
		case strings.HasPrefix(v, onlyWorkloadPrefix):
			word, asKey = strings.TrimPrefix(v, onlyWorkloadPrefix), false
		case strings.HasPrefix(v, onlyKeyPrefix):
			word, asName = strings.TrimPrefix(v, onlyKeyPrefix), false
		}
		n := 0
		if asName {
			for _, w := range l.Workloads {
				b, _, _ := InstanceKey(w.Name)
				if b == word || w.Name == word || w.Slug == word {
					sel.workloads[w] = true
					n++
				}
			}
		}
		if asKey {
			for _, w := range l.Workloads {
				if _, k, keyed := InstanceKey(w.Name); keyed && k == word {
					sel.workloads[w] = true
					n++
				}
			}
			for _, x := range l.Devices {
				if _, k, keyed := InstanceKey(x.Name); keyed && k == word {
					sel.rxes[x] = true
					n++
				}
			}
			for _, c := range l.Captures {
				if _, k, keyed := InstanceKey(c.Name); keyed && k == word {
					sel.captures[c] = true
					n++
				}
			}
		}
		if n == 0 {
			return nil, unknownOnly(l, v, blocks, keys)
		}
	}
	return sel, nil
}

func workloadBySlug(l *lab.Lab, s string) *lab.Workload {
	for _, w := range l.Workloads {
		if w.Slug == s {
			return w
		}
	}
	return nil
}

// maxListed bounds the names an error lists (a class has 200 students).
const maxListed = 12

func unknownOnly(l *lab.Lab, v string, blocks, keys map[string]bool) error {
	names := sortedKeys(blocks)
	ks := sortedKeys(keys)
	var near []string
	for _, c := range append(append([]string{}, names...), ks...) {
		if d := lab.EditDistance(strings.ToLower(v), strings.ToLower(c)); d > 0 && d <= min(len(v)/3, 3) {
			near = append(near, strconv.Quote(c))
		}
	}
	for _, w := range l.Workloads {
		if strings.EqualFold(w.Name, v) || strings.EqualFold(w.Slug, v) {
			near = append(near, strconv.Quote(w.Name))
		}
	}
	near = slices.Compact(near)
	if len(near) > 5 {
		near = near[:5]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--only %q: lab %q has no workload, instance or student key of that name", v, l.Name)
	if len(near) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", strings.Join(near, " or "))
	}
	fmt.Fprintf(&b, " (workloads: %s", listSome(names))
	if len(ks) > 0 {
		fmt.Fprintf(&b, "; student keys: %s", listSome(ks))
	}
	b.WriteString(")")
	return fmt.Errorf("%s", b.String())
}

func listSome(s []string) string {
	if len(s) <= maxListed {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:maxListed], ", "), len(s)-maxListed)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// selectLab is l limited to what a run with these --only values (and a
// student check) runs: the selected workloads, the rxe devices they use
// (all of the lab's on a full run, a student's with their key), the
// captures and impairments of the hosts these use and scoped to no workload
// outside the selection (a check takes no captures), and those hosts with
// the jump hosts they go through. With no --only and no check it is l.
func selectLab(l *lab.Lab, only []string, check bool) (*lab.Lab, error) {
	sel, err := selectOnly(l, only)
	if err != nil {
		return nil, err
	}
	if sel == nil && !check {
		return l, nil
	}
	usedHost := map[*lab.Host]bool{}
	usedDevice := map[*lab.Device]bool{}
	selected := map[*lab.Workload]bool{}
	withExpects := false
	if check {
		for _, w := range l.Workloads {
			if (sel == nil || sel.workloads[w]) && len(w.Expects) > 0 {
				withExpects = true
			}
		}
	}
	sub := *l
	sub.Hosts, sub.Workloads, sub.Devices, sub.Captures, sub.Impairs = nil, nil, nil, nil, nil
	for _, w := range l.Workloads {
		if sel != nil && !sel.workloads[w] {
			continue
		}
		if withExpects && len(w.Expects) == 0 {
			continue // a check runs the workloads that say what they expect
		}
		selected[w] = true
		sub.Workloads = append(sub.Workloads, w)
		for _, h := range w.Hosts() {
			usedHost[h] = true
		}
		// A tcp workload's server rxe is the data link it dials (ServerDial).
		for _, x := range []*lab.Device{w.ServerDevice, w.ClientDevice, l.ServerDial(w).Device} {
			if x != nil {
				usedDevice[x] = true
			}
		}
	}
	switch {
	case sel == nil:
		// A full run prepares every rxe device and capture the lab declares.
		for _, x := range l.Devices {
			usedDevice[x] = true
		}
		if !check {
			for _, c := range l.Captures {
				usedHost[c.Host] = true
			}
		}
	default:
		// A student key brings that student's rxe devices and captures
		// (and so their hosts), and nothing of the other students.
		for x := range sel.rxes {
			usedDevice[x] = true
		}
		if !check {
			for c := range sel.captures {
				usedHost[c.Host] = true
			}
		}
	}
	for _, x := range l.Devices {
		if usedDevice[x] {
			usedHost[x.Host] = true
			sub.Devices = append(sub.Devices, x)
		}
	}
	inSelection := func(during []*lab.Workload) bool {
		return len(during) == 0 || slices.ContainsFunc(during, func(w *lab.Workload) bool { return selected[w] })
	}
	for _, c := range l.Captures {
		if usedHost[c.Host] && !check && inSelection(c.During) {
			sub.Captures = append(sub.Captures, c)
		}
	}
	for _, im := range l.Impairs {
		if usedHost[im.Host] && inSelection(im.During) {
			sub.Impairs = append(sub.Impairs, im)
		}
	}
	// Its hosts: those its parts use, and the jump hosts they go through.
	keep := map[*lab.Host]bool{}
	for h := range usedHosts(&sub) {
		for j := h; j != nil && !keep[j]; j = j.JumpHost {
			keep[j] = true
		}
	}
	for _, h := range l.Hosts {
		if keep[h] {
			sub.Hosts = append(sub.Hosts, h)
		}
	}
	return &sub, nil
}

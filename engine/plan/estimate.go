package plan

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/rlab-dev/rlab/kinds"
)

// The phases of a run, measured on the cached demo (issue 27: `make demo`,
// two TCG-emulated VMs on the project's shared 2-core machine: boot 65.4 s,
// connect 8.2–9.2 s, rxe 8.7 s, fetch 3.8 s, the rest (preflight, captures,
// counters) 2.5 s, teardown 8.6 s). Under TCG the VMs share the machine's
// cores, so each phase costs its share per VM. Hosts that are not local VMs
// work at once, each on its own CPUs: their phases are short and do not
// grow with their number (bounded by --parallel, 64 hosts at once).
const (
	// BootTCG is the boot of one local VM under TCG (software emulation):
	// 65 s for two booting at once.
	BootTCG = 32500 * time.Millisecond
	// RestoreTCG is the start of one local VM restored from a saved guest
	// under TCG (engine/vm snapshot.go): the boot phase took 3.8 s for two
	// on a quiet machine (bench/restore/run.sh, BENCHMARKS.md).
	RestoreTCG = 1900 * time.Millisecond
	// BootKVM is the boot of one local VM with KVM: not measured on the
	// project machine (it has no KVM); a Debian guest's kernel and systemd
	// with hardware virtualisation.
	BootKVM = 10 * time.Second

	connectVM  = 4600 * time.Millisecond // SSH, agent upload and start, facts, in a TCG guest
	rxeVM      = 4400 * time.Millisecond // modprobe rdma_rxe, create the device
	fetchVM    = 3200 * time.Millisecond // fetch and the rest
	teardownVM = 4300 * time.Millisecond

	connectHosts = 2 * time.Second // SSH and the agent's first start, all hosts at once
	phaseHosts   = time.Second     // rxe, fetch, teardown on hosts that are not local VMs
)

// Accelerators an estimate may assume for local VMs (engine/vm's names).
const (
	AccelTCG = "tcg"
	AccelKVM = "kvm"
)

// Estimate is how long a run of a plan should take, part by part, and what
// the figures assume. It is an estimate: a loaded machine, a slow link or a
// tool that retries takes longer; real hardware and KVM run the workloads
// sooner.
type Estimate struct {
	Total time.Duration
	// WithKVM is the total were the local VMs to boot with KVM, when the
	// estimate assumes TCG for some (0 otherwise).
	WithKVM time.Duration
	Parts   []EstimatePart
	// Workloads are the workloads' own estimates, in file order; the
	// "workloads" part is the longest chain of them that runs one after
	// another (workloads on disjoint hosts run at the same time).
	Workloads []EstimatePart
	Assumes   []string
	// Warnings are what the estimate foresees going wrong: a workload
	// whose run would outlast its timeout.
	Warnings []string
}

// EstimatePart is one phase or workload: its time and how it was counted.
type EstimatePart struct {
	What string
	Time time.Duration
	How  string
	// Chain marks the workloads' part: the longest chain of them.
	Chain bool `json:",omitempty"`
}

// Estimate estimates a run of p, assuming local VMs run with accel
// (AccelTCG or AccelKVM), and start from saved guests where restoredVM says so
// (restoredVM nil: every VM boots). The caller knows the images: engine/vm restores a
// VM unless RLAB_VM_RESTORE=0 or its image lacks iproute2 (the minimal one).
func (p *Plan) Estimate(accel string, restoredVM func(*lab.Host) bool) *Estimate {
	e := &Estimate{}
	var vms, restored, hosts int
	for _, h := range p.Hosts {
		switch {
		case h.JumpOnly:
		case h.VM:
			vms++
			if restoredVM != nil && h.Ref != nil && restoredVM(h.Ref) {
				restored++
			}
		default:
			hosts++
		}
	}
	rxeVMs, rxeHosts := 0, 0
	seen := map[*lab.Host]bool{}
	for _, r := range p.Selected.Devices {
		if r.Host == nil || seen[r.Host] {
			continue
		}
		seen[r.Host] = true
		if r.Host.VM != nil {
			rxeVMs++
		} else {
			rxeHosts++
		}
	}
	perVM := func(each time.Duration, n int, other time.Duration, m int) time.Duration {
		d := time.Duration(n) * each
		if m > 0 {
			d = max(d, other)
		}
		return d
	}
	if vms > 0 {
		boot, how := BootTCG, fmt.Sprintf("%s per VM under TCG (software emulation), the VMs sharing this machine's cores: 65 s measured for two", spokenSeconds(BootTCG))
		if accel == AccelKVM {
			boot, how = BootKVM, fmt.Sprintf("%s per VM with KVM", spokenSeconds(BootKVM))
		}
		if restored == vms && accel != AccelKVM {
			boot, how = RestoreTCG, fmt.Sprintf("%s per VM restored from a saved guest under TCG: 3.8 s measured for two (the first run of an image and VM size boots and saves one guest first, about %s more)", spokenSeconds(RestoreTCG), spokenSeconds(BootTCG))
		} else if restored > 0 && accel != AccelKVM {
			how += fmt.Sprintf("; %d of them restored from a saved guest, counted as booted", restored)
		}
		e.add("boot", plural(vms, "local VM"), time.Duration(vms)*boot, how)
	}
	if n := vms + hosts; n > 0 {
		e.add("connect", plural(n, "host"), perVM(connectVM, vms, connectHosts, hosts), vmHow(vms, connectVM, hosts, connectHosts))
	}
	if n := rxeVMs + rxeHosts; n > 0 {
		e.add("rxe", plural(n, "device"), perVM(rxeVM, rxeVMs, phaseHosts, rxeHosts), vmHow(rxeVMs, rxeVM, rxeHosts, phaseHosts))
	}
	e.workloads(p)
	if n := vms + hosts; n > 0 {
		e.add("fetch", "and the rest", perVM(fetchVM, vms, phaseHosts, hosts), vmHow(vms, fetchVM, hosts, phaseHosts))
		e.add("teardown", "", perVM(teardownVM, vms, phaseHosts, hosts), vmHow(vms, teardownVM, hosts, phaseHosts))
	}
	for _, pt := range e.Parts {
		e.Total += pt.Time
	}
	if vms > 0 && accel != AccelKVM && restored < vms {
		e.WithKVM = e.Total - time.Duration(vms)*(BootTCG-BootKVM)
	}
	if vms > 0 {
		if accel == AccelKVM {
			e.Assumes = append(e.Assumes, "local VMs boot with KVM")
		} else {
			e.Assumes = append(e.Assumes, "local VMs run under TCG (software emulation, no KVM)")
		}
	}
	e.Assumes = append(e.Assumes, "each tool at the pace of Soft-RoCE between two TCG VMs on a shared 2-core machine (its family's Pace, BENCHMARKS.md): real hardware and KVM are faster")
	for _, s := range p.Steps {
		if s.Action == Provision {
			e.Assumes = append(e.Assumes, "provisioning not counted (installing packages took 1–2 min per VM in TestE2EProvision)")
			break
		}
	}
	return e
}

func (e *Estimate) add(what, detail string, d time.Duration, how string) {
	if detail != "" {
		what += " " + detail
	}
	e.Parts = append(e.Parts, EstimatePart{What: what, Time: d, How: how})
}

func vmHow(vms int, each time.Duration, hosts int, other time.Duration) string {
	var parts []string
	if vms > 0 {
		parts = append(parts, spokenSeconds(each)+" per local VM under TCG")
	}
	if hosts > 0 {
		parts = append(parts, spokenSeconds(other)+" for the hosts that are not local VMs, all at once")
	}
	return strings.Join(parts, "; ")
}

// workloads estimates each workload (its family's Pace over its sizes and
// repeats) and the longest chain of them through the plan's DAG: a step
// ends its workload's time after the latest of the steps it waits for.
func (e *Estimate) workloads(p *Plan) {
	own := map[*lab.Workload]time.Duration{}
	for _, w := range p.Selected.Workloads {
		d, how, warn := workloadTime(w)
		if warn != "" {
			e.Warnings = append(e.Warnings, warn)
		}
		own[w] = d
		e.Workloads = append(e.Workloads, EstimatePart{What: w.Name, Time: d, How: how})
	}
	if len(own) == 0 {
		return
	}
	end := map[string]time.Duration{}
	var span time.Duration
	for _, s := range p.Steps { // topological order
		var at time.Duration
		for _, d := range s.DependsOn {
			at = max(at, end[d])
		}
		if s.Workload != nil && (s.Action == WorkloadClient || s.Action == WorkloadRun) {
			at += own[s.Workload]
		}
		end[s.ID] = at
		span = max(span, at)
	}
	how := "one after another where they share a host, at the same time otherwise"
	e.add(plural(len(own), "workload"), "", span, how)
	e.Parts[len(e.Parts)-1].Chain = true
}

// workloadTime is one workload's estimate: each size × repeat at its
// family's pace, in the order the step runs them (every repeat of a size,
// then the next size). The timeout bounds each of them: a size that would
// take longer ends the workload there (timed out), which the estimate
// says, as it says a family that declares no pace.
func workloadTime(w *lab.Workload) (d time.Duration, how, warn string) {
	t, _ := kinds.Lookup(w.Tool)
	sizes := w.Sizes
	if !t.Sizes || len(sizes) == 0 {
		sizes = []int64{0}
	}
	reps := max(w.Repeat, 1)
	how = w.Tool + ": "
	if t.Pace == (kinds.Pace{}) {
		return 0, how + "its family declares no pace (kinds.Pace): not counted", ""
	}
	if len(sizes) > 1 || sizes[0] != 0 {
		how += plural(len(sizes), "size") + " × "
	}
	how += plural(reps, "repeat") + ", " + t.Pace.Rule(w.Options)
	onVM := false
	for _, h := range w.Hosts() {
		onVM = onVM || h.VM != nil
	}
	capped := false
	for _, s := range sizes {
		u := t.Pace.Run(w.Options, s)
		if w.Timeout > 0 && u > w.Timeout {
			if onVM { // at the pace assumed, which is a TCG VM's
				at := ""
				if s > 0 {
					at = " at " + kinds.SizeText(s)
				}
				warn = fmt.Sprintf("workload %s%s: one run would take about %s under TCG, past its timeout (%s): it would likely time out there and end", w.Name, at, u.Round(time.Second), w.Timeout)
				return d + w.Timeout, how, warn
			}
			// Hosts that are not TCG VMs are likely faster: the
			// timeout bounds each run.
			u, capped = w.Timeout, true
		}
		d += time.Duration(reps) * u
	}
	if capped {
		how += ", at most its timeout (" + w.Timeout.String() + ") each"
	}
	return d, how, ""
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// spokenSeconds says a phase figure in seconds ("4.6 s", "65 s").
func spokenSeconds(d time.Duration) string {
	s := d.Seconds()
	if s == math.Trunc(s) {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

// About says a duration as a person would estimate it: "about 40 s" (to 5
// s) under a minute and a half, "about 3 min" (to the minute) under an hour,
// "about 2 h 10 min" (to 10 min) beyond.
func About(d time.Duration) string {
	switch {
	case d < 90*time.Second:
		s := int(math.Round(d.Seconds()/5)) * 5
		return fmt.Sprintf("about %d s", max(s, 5))
	case d < time.Hour:
		return fmt.Sprintf("about %d min", int(math.Round(d.Minutes())))
	}
	m := int(math.Round(d.Minutes()/10)) * 10
	if m%60 == 0 {
		return fmt.Sprintf("about %d h", m/60)
	}
	return fmt.Sprintf("about %d h %d min", m/60, m%60)
}

// total says the total, and what KVM would make of it.
func (e *Estimate) total() string {
	s := About(e.Total)
	if e.WithKVM > 0 && About(e.WithKVM) != s {
		s += " (" + About(e.WithKVM) + " if the VMs boot with KVM)"
	}
	return s
}

// Line is the estimate in one line, as `rlab run` says it at the start.
func (e *Estimate) Line() string {
	var parts []string
	for _, pt := range e.Parts {
		parts = append(parts, pt.What+" "+spokenSeconds(pt.Time.Round(time.Second)))
	}
	accel := ""
	if len(e.Assumes) > 1 {
		accel = e.Assumes[0] + ", "
	}
	return termsafe.Line(fmt.Sprintf("estimate: %s: %s; assuming %stools at the pace of Soft-RoCE in TCG VMs (rlab plan shows how it is counted)", e.total(), strings.Join(parts, ", "), accel))
}

// workloadLine is a line of the workloads' estimates: one workload, or the
// instances of a for_each workload in a row that take the same time the
// same way (a class's 30 students).
type workloadLine struct {
	what, time, how string
}

func (e *Estimate) workloadLines() []workloadLine {
	var out []workloadLine
	var n int
	base := func(name string) string { b, _, _ := strings.Cut(name, "["); return b }
	for i, wl := range e.Workloads {
		if i > 0 {
			prev := e.Workloads[i-1]
			if base(prev.What) == base(wl.What) && prev.Time == wl.Time && prev.How == wl.How && strings.Contains(wl.What, "[") {
				n++
				last := &out[len(out)-1]
				last.what = fmt.Sprintf("%s (%d instances)", base(wl.What), n)
				last.time = wl.Time.Round(time.Second).String() + " each"
				continue
			}
		}
		n = 1
		out = append(out, workloadLine{wl.What, wl.Time.Round(time.Second).String(), wl.How})
	}
	return out
}

// maxEstimateWidth is the widest the estimate's first column is padded
// to; a longer name is written whole, past it.
const maxEstimateWidth = 60

// WriteText prints the estimate as `rlab plan` does after the plan.
func (e *Estimate) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Estimated time: %s\n", e.total())
	lines := e.workloadLines()
	width := 0
	for _, pt := range e.Parts {
		width = max(width, utf8.RuneCountInString(pt.What))
	}
	for _, l := range lines {
		width = max(width, 2+utf8.RuneCountInString(l.what))
	}
	// A lab's for_each key is in its instances' names: one long key must
	// not pad every line to its length (SECURITY 123: a 100 KB key among
	// 1,000 instances made 91 MB of estimate).
	width = min(width, maxEstimateWidth)
	row := func(what, t, how string) {
		fmt.Fprintf(&b, "  %s%s  %8s  %s\n", what, strings.Repeat(" ", max(0, width-utf8.RuneCountInString(what))), t, how)
	}
	for _, pt := range e.Parts {
		row(pt.What, pt.Time.Round(time.Second).String(), pt.How)
		if pt.Chain {
			for _, l := range lines {
				row("  "+l.what, l.time, l.how)
			}
		}
	}
	b.WriteString("Assuming:\n")
	for _, a := range e.Assumes {
		fmt.Fprintf(&b, "  - %s\n", a)
	}
	for _, w := range e.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", w)
	}
	_, err := io.WriteString(w, termsafe.Block(b.String()))
	return err
}

package plan

import (
	"fmt"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision/needs"
	"github.com/rlab-dev/rlab/kinds"
)

func connectText(h *lab.Host) string {
	if h.VM != nil {
		var nets []string
		for _, n := range h.VM.Networks {
			nets = append(nets, n.Name)
		}
		s := fmt.Sprintf("boot local VM (%s, %d CPU) and connect over SSH", kinds.SizeText(h.VM.MemoryBytes), h.VM.CPUs)
		if len(nets) > 0 {
			s += "; networks " + strings.Join(nets, ", ")
		}
		return s
	}
	s := "connect over SSH to "
	if h.User != "" {
		s += h.User + "@"
	}
	s += h.Address
	if h.Port != lab.DefaultPort {
		s += fmt.Sprintf(":%d", h.Port)
	}
	if h.Jump != "" {
		s += " via " + h.Jump
	}
	return s
}

func preflightText(l *lab.Lab, h *lab.Host) string {
	tools := map[string]bool{}
	rxe, capture := false, false
	var modules []string // kernel modules the host's devices need
	for _, r := range l.Devices {
		if r.Host == h && (r.Block == "rxe" || r.Block == "") {
			rxe = true
		} else if r.Host == h && r.Block == "siw" && len(modules) == 0 {
			modules = append(modules, "siw")
		}
	}
	for _, c := range l.Captures {
		capture = capture || c.Host == h
	}
	for _, w := range l.Workloads {
		for _, x := range w.Hosts() {
			if x != h {
				continue
			}
			t, _ := lab.LookupTool(w.Tool)
			switch {
			case t.OneHost:
				tools[w.Command[0]] = true
			case t.Program != nil: // not a tool built into the agent (tcp)
				tools[t.Program.Name] = true
				// e.g. rping connects through the RDMA CM, which needs the
				// rdma_cm module and an IP address on the rxe's netdev.
				for _, m := range t.NeedsModules {
					tools[m] = true
				}
			}
		}
	}
	var need []string
	for t := range tools {
		need = append(need, t)
	}
	sort.Strings(need)
	need = append(modules, need...)
	if rxe {
		need = append([]string{"rdma_rxe"}, need...)
	}
	if capture {
		need = append(need, "tcpdump")
	}
	s := "gather facts"
	if len(need) > 0 {
		s += "; check " + strings.Join(need, ", ")
	}
	if h.Become {
		s += "; check sudo -n"
	}
	return s
}

// provisionText: the plan has no host to ask, so it names everything the
// lab needs there; the run installs only what the host's facts lack.
func provisionText(n needs.Need) string {
	d := n.Describe()
	if d == "" {
		return "install nothing: the lab needs no package on this host"
	}
	return "install what is missing of " + d + " as root with the host's package manager (Debian/Ubuntu names here; dnf and zypper hosts get theirs); what is missing only the host's facts say, at run time (nothing missing: no package manager call)"
}

func captureText(c *lab.Capture) string {
	s := fmt.Sprintf("start capture %s on %s", c.Name, c.Netdev)
	if c.Filter != "" {
		s += fmt.Sprintf(" filter %q", c.Filter)
	}
	s += fmt.Sprintf(", snaplen %d, at most %s", c.Snaplen, kinds.SizeText(c.MaxBytes))
	if len(c.During) > 0 {
		var ws []string
		for _, w := range c.During {
			ws = append(ws, w.Name)
		}
		s += ", during " + strings.Join(ws, ", ")
	}
	return s
}

// workloadText describes one side of a workload; dial, for a client that
// dials no rxe (tcp), is the address it dials and why (lab.ServerDial).
func workloadText(w *lab.Workload, side, dial string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", w.Name, w.Tool)
	switch side {
	case "server":
		b.WriteString(" server")
		if w.ServerDevice != nil {
			b.WriteString(" on " + w.ServerDevice.Device)
		}
		if len(w.ServerCommand) > 0 {
			b.WriteString(" " + quoteArgv(kinds.ShowSelfArgv(w.ServerCommand)))
		}
	case "client":
		b.WriteString(" client")
		if w.ClientDevice != nil {
			b.WriteString(" on " + w.ClientDevice.Device)
		}
		b.WriteString(" to " + w.ServerHost.Name)
		if dial != "" {
			b.WriteString(" at " + dial)
		}
		if len(w.ClientCommand) > 0 {
			b.WriteString(" " + quoteArgv(kinds.ShowSelfArgv(w.ClientCommand)))
		}
	case "run":
		b.WriteString(" " + quoteArgv(kinds.ShowSelfArgv(w.Command)))
	}
	if w.Transport != "" && w.Transport != "RC" {
		b.WriteString(" " + w.Transport)
	}
	if len(w.Sizes) > 0 {
		var ss []string
		for _, s := range w.Sizes {
			ss = append(ss, kinds.SizeText(s))
		}
		b.WriteString(", sizes " + strings.Join(ss, " "))
	}
	if w.Iterations > 0 {
		fmt.Fprintf(&b, ", %d iterations", w.Iterations)
	}
	if w.Duration > 0 {
		fmt.Fprintf(&b, ", for %s", w.Duration)
	}
	if w.QPs > 1 {
		fmt.Fprintf(&b, ", %d QPs", w.QPs)
	}
	if w.Bytes > 0 {
		fmt.Fprintf(&b, ", %s", kinds.SizeText(w.Bytes))
	}
	if len(w.Args) > 0 {
		b.WriteString(", args " + quoteArgv(w.Args))
	}
	if w.Repeat > 1 {
		fmt.Fprintf(&b, ", %d repeats", w.Repeat)
	}
	if w.Timeout != lab.DefaultTimeout {
		fmt.Fprintf(&b, ", timeout %s", w.Timeout)
	}
	if side != "server" && len(w.Expects) > 0 {
		fmt.Fprintf(&b, ", %d expect", len(w.Expects))
	}
	return b.String()
}

// emulatedText is what the steps of two-sided RDMA workload w add when an
// end is an emulated guest (Options.Emulated): its tool's RC QP timeout
// raised, or why it cannot be; "" otherwise. The rule is the tool's
// (kinds.Tool.QPTimeout); a lab's args that set the timeout are left alone.
func (b *builder) emulatedText(w *lab.Workload) string {
	t, ok := kinds.Lookup(w.Tool)
	if !ok || !t.RDMA || !t.QPTimeout.RC() || t.QPTimeout.SetBy(w.Args) {
		return ""
	}
	tr := w.Transport
	if tr == "" {
		tr = t.FixedTransport
	}
	if tr == "" && len(t.Transports) > 0 {
		tr = t.Transports[0]
	}
	if tr != "RC" {
		return "" // no ACKs to wait for
	}
	for _, h := range []*lab.Host{w.ServerHost, w.ClientHost} {
		if why := b.o.Emulated[h.Name]; why != "" {
			return kinds.QPTimeoutPlan(t, why)
		}
	}
	return ""
}

func teardownText(l *lab.Lab, h *lab.Host) string {
	var del, keep, delSIW []string
	for _, r := range l.Devices {
		if r.Host != h {
			continue
		}
		if r.Found() {
			continue // not rlab's: nothing to delete or keep
		}
		switch {
		case r.Keep:
			keep = append(keep, r.Device)
		case r.Block == "siw":
			delSIW = append(delSIW, r.Device)
		default:
			del = append(del, r.Device)
		}
	}
	s := "stop leftover processes"
	if len(del) > 0 {
		s += "; delete rxe " + strings.Join(del, ", ")
	}
	if len(delSIW) > 0 {
		s += "; delete siw " + strings.Join(delSIW, ", ")
	}
	if len(keep) > 0 {
		s += "; keep rxe " + strings.Join(keep, ", ")
	}
	if h.VM != nil {
		s += "; shut the VM down"
	}
	return s
}

// quoteArgv shows argv as a list, an element quoted (%q) when it is empty
// or holds anything but plain printable characters: a lab from a course
// repository must not make the plan show "exec [echo hello]" for a command
// that is something else (a CR, ESC or no-break space hidden in it).
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$") || strings.IndexFunc(a, notPlain) >= 0 || !utf8.ValidString(a) {
			q[i] = fmt.Sprintf("%q", a)
		} else {
			q[i] = a
		}
	}
	return "[" + strings.Join(q, " ") + "]"
}

// WriteText prints the plan for people: the workload waves, then each
// host's steps in order with what each waits for on other hosts.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	working := 0
	for _, h := range p.Hosts {
		if !h.JumpOnly {
			working++
		}
	}
	nw := 0
	for _, wv := range p.Waves {
		nw += len(wv.Workloads)
	}
	fmt.Fprintf(&b, "Plan for lab %q: %d hosts with steps", p.Lab, working)
	if working != len(p.Hosts) {
		fmt.Fprintf(&b, " (+%d jump only)", len(p.Hosts)-working)
	}
	fmt.Fprintf(&b, ", %d steps, %d workloads in %d waves.\n\n", len(p.Steps), nw, len(p.Waves))

	if len(p.Groups) == 0 {
		b.WriteString("Workloads: each wave runs at the same time (its workloads share no host);\na wave starts on a host when that host's earlier workloads are done.\n")
	} else {
		b.WriteString("Workloads: each wave runs at the same time (its workloads share no host, but\nthe workloads of a group start together on the hosts they share); a wave starts\non a host when that host's earlier workloads are done.\n")
	}
	for _, wv := range p.Waves {
		fmt.Fprintf(&b, "  wave %d (%d at once): %s\n", wv.Wave, len(wv.Workloads), strings.Join(wv.Workloads, ", "))
		for _, g := range p.Groups {
			if g.Wave != wv.Wave {
				continue
			}
			fmt.Fprintf(&b, "    together, group %s: %s", g.Name, strings.Join(g.Workloads, ", "))
			if len(g.Shared) > 0 {
				fmt.Fprintf(&b, " (sharing %s)", strings.Join(g.Shared, ", "))
			}
			b.WriteString("\n")
		}
	}
	if t := p.vmCostText(); t != "" {
		b.WriteString("\n" + t)
	}
	for _, h := range p.Hosts {
		fmt.Fprintf(&b, "\nhost %s", h.Name)
		switch {
		case h.VM:
			b.WriteString(" (local VM)")
		case h.JumpOnly:
			fmt.Fprintf(&b, " (%s, jump host only)", h.Address)
		default:
			fmt.Fprintf(&b, " (%s)", h.Address)
		}
		b.WriteString("\n")
		for i, id := range h.Steps {
			s := p.byID[id]
			fmt.Fprintf(&b, "  %2d. %-15s %s", i+1, s.Action, s.Description)
			var other []string
			for _, d := range s.DependsOn {
				if ds := p.byID[d]; ds != nil && ds.Host != s.Host {
					other = append(other, d)
				}
			}
			if len(other) > 0 {
				fmt.Fprintf(&b, "\n      after %s", strings.Join(other, ", "))
			}
			b.WriteString("\n")
		}
	}
	// Names, addresses and descriptions come from the lab: one rule, as
	// for every terminal output (termsafe).
	_, err := io.WriteString(w, termsafe.Block(b.String()))
	return err
}

// notPlain is true for a character %q escapes (not strconv.IsPrint: a
// control, a format character such as a bidi override, a space other than
// ' ').
func notPlain(r rune) bool { return !strconv.IsPrint(r) }

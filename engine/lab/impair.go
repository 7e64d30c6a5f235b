package lab

import (
	"fmt"
	"github.com/rlab-dev/rlab/kinds"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// The impair block: its schema, decoder and the parsers of netem's units.

// Impair is a link impairment: the kernel's netem qdisc as the root qdisc of
// a host's netdev, in force for the whole run or, with During, from before
// the first of those workloads on the host to after the last.
type Impair struct {
	Name, Slug string
	Host       *Host
	Netdev     string
	Netem      Netem
	During     []*Workload // empty = whole run on that host
	Range      hcl.Range
}

// Netem is what an impairment does to every packet leaving the netdev, in
// netem's own terms. A zero field is not set.
type Netem struct {
	Delay, Jitter time.Duration
	// Percentages, 0 to 100.
	Loss, Duplicate, Reorder, Corrupt float64
	// RateBytes is the rate limit in bytes per second (tc's unit inside).
	RateBytes uint64
	// PerPacket: loss, duplicate, reorder or corrupt is set, even to 0 %.
	// The agent then sends each packet on its own (gso_max_segs 1) so
	// netem decides per packet, at every point of a sweep alike: a 0 %
	// point with GSO and lossy points without it would compare more than
	// the loss.
	PerPacket bool
}

// String is the impairment as tc would write its netem options, e.g.
// "delay 2ms loss 1%": the plan, the report and the journal show this.
func (n Netem) String() string {
	var parts []string
	if n.Delay > 0 {
		parts = append(parts, "delay "+netemTime(n.Delay))
		if n.Jitter > 0 {
			parts = append(parts, netemTime(n.Jitter))
		}
	}
	pct := func(name string, v float64) {
		parts = append(parts, name+" "+strconv.FormatFloat(v, 'f', -1, 64)+"%")
	}
	// A sweep's baseline point ("loss 0%") is shown as such, not as "".
	if bare := (Netem{PerPacket: n.PerPacket}); n.Loss > 0 || n == bare {
		pct("loss", n.Loss)
	}
	if n.Duplicate > 0 {
		pct("duplicate", n.Duplicate)
	}
	if n.Reorder > 0 {
		pct("reorder", n.Reorder)
	}
	if n.Corrupt > 0 {
		pct("corrupt", n.Corrupt)
	}
	if n.RateBytes > 0 {
		parts = append(parts, "rate "+rateText(n.RateBytes))
	}
	return strings.Join(parts, " ")
}

func netemTime(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dus", d/time.Microsecond)
}

func rateText(bytes uint64) string {
	bits := bytes * 8
	for _, u := range []struct {
		name string
		mult uint64
	}{{"Gbit", 1e9}, {"Mbit", 1e6}, {"Kbit", 1e3}} {
		if bits >= u.mult && bits%u.mult == 0 {
			return fmt.Sprintf("%d%s", bits/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%dbit", bits)
}

// MaxNetemDelay bounds delay and jitter: netem keeps them in 32-bit ticks,
// and a lab that delays packets by minutes is a typo.
const MaxNetemDelay = time.Minute

// ParsePercent parses a percentage as netem writes it: a number and "%"
// ("1%", "0.1%"), from 0 to 100.
func ParsePercent(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return 0, fmt.Errorf("percentage %q has no unit; write %q", s, s+"%")
		}
		return 0, fmt.Errorf("%q is not a percentage such as \"1%%\" or \"0.1%%\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(num, "xXpP_") {
		return 0, fmt.Errorf("%q is not a percentage such as \"1%%\" or \"0.1%%\"", s)
	}
	switch {
	case v < 0:
		return 0, fmt.Errorf("percentage %q is negative; netem takes 0%% to 100%%", s)
	case v > 100:
		return 0, fmt.Errorf("percentage %q is over 100%%; netem takes 0%% to 100%% of the packets", s)
	}
	return v, nil
}

// netemTimeUnits are the time units tc's netem accepts, longest first.
var netemTimeUnits = []struct {
	suffix string
	mult   time.Duration
}{
	{"usecs", time.Microsecond}, {"usec", time.Microsecond}, {"us", time.Microsecond},
	{"msecs", time.Millisecond}, {"msec", time.Millisecond}, {"ms", time.Millisecond},
	{"secs", time.Second}, {"sec", time.Second}, {"s", time.Second},
}

// ParseNetemTime parses a delay or jitter as netem writes it: a number and a
// unit ("2ms", "500us", "1.5ms", "1s"), not negative, at most MaxNetemDelay,
// in whole microseconds.
func ParseNetemTime(s string) (time.Duration, error) {
	num, mult := s, time.Duration(0)
	for _, u := range netemTimeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	if mult == 0 {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return 0, fmt.Errorf("time %q has no unit; write e.g. %q or %q", s, s+"ms", s+"us")
		}
		return 0, fmt.Errorf("%q is not a time netem knows: a number with us, ms or s (e.g. \"2ms\", \"500us\")", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(num, "xXpP_eE") {
		return 0, fmt.Errorf("%q is not a time netem knows: a number with us, ms or s (e.g. \"2ms\", \"500us\")", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("time %q is negative; netem can only hold packets back, write e.g. %q", s, strings.TrimPrefix(s, "-"))
	}
	if v*float64(mult) > float64(MaxNetemDelay) {
		return 0, fmt.Errorf("time %q is over %s, the most rlab lets netem hold a packet", s, MaxNetemDelay)
	}
	d := time.Duration(math.Round(v*float64(mult)/float64(time.Microsecond))) * time.Microsecond
	if d == 0 && v > 0 {
		return 0, fmt.Errorf("time %q is below netem's resolution of 1us", s)
	}
	return d, nil
}

// rateUnits are tc's rate units (tc(8), "RATES"): bits or bytes per second,
// SI or IEC multiples; tc reads them case-insensitively.
var rateUnits = []struct {
	suffix string
	bits   float64 // bits per second per unit
}{
	{"kibit", 1024}, {"mibit", 1 << 20}, {"gibit", 1 << 30}, {"tibit", 1 << 40},
	{"kibps", 8 * 1024}, {"mibps", 8 << 20}, {"gibps", 8 << 30}, {"tibps", 8 << 40},
	{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
	{"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12},
	{"bit", 1}, {"bps", 8},
}

// ParseRate parses a rate as tc writes it ("100Mbit", "1Gbit", "10mbps" —
// bps is bytes per second in tc) into bytes per second.
func ParseRate(s string) (uint64, error) {
	low := strings.ToLower(s)
	num, mult := s, 0.0
	for _, u := range rateUnits {
		if n, ok := strings.CutSuffix(low, u.suffix); ok {
			num, mult = n, u.bits
			break
		}
	}
	if mult == 0 {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return 0, fmt.Errorf("rate %q has no unit; write e.g. %q", s, s+"Mbit")
		}
		return 0, fmt.Errorf("%q is not a rate tc knows: a number with bit, kbit, mbit, gbit (bits per second) or bps, kbps, mbps, gbps (bytes per second), e.g. \"100Mbit\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(num, "xXpP_eE") {
		return 0, fmt.Errorf("%q is not a rate tc knows: a number with bit, kbit, mbit, gbit (bits per second) or bps, kbps, mbps, gbps (bytes per second), e.g. \"100Mbit\"", s)
	}
	bytes := v * mult / 8
	switch {
	case v <= 0:
		return 0, fmt.Errorf("rate %q must be above zero", s)
	case bytes < 1:
		return 0, fmt.Errorf("rate %q is below one byte per second", s)
	case bytes > 1e15:
		return 0, fmt.Errorf("rate %q is too large", s)
	}
	return uint64(bytes), nil
}

var impairSchema = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{
	{Name: "host", Required: true}, {Name: "netdev", Required: true},
	{Name: "delay"}, {Name: "jitter"}, {Name: "loss"}, {Name: "duplicate"}, {Name: "reorder"}, {Name: "corrupt"}, {Name: "rate"},
	{Name: "during"},
}, metaSchema...)}

func (l *loader) decodeImpairs(blocks []*hcl.Block) {
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["impair"][label]; d == nil || d.block != b {
			continue
		}
		content := l.content(b.Body, impairSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.workloadObjs
		sc := &scope{ctx: ctx, where: "an impair block", blockTypes: []string{"host", "rxe", "workload"}}
		for _, in := range l.expand(label, content, sc) {
			l.enter(in)
			im := &Impair{Name: in.name, Slug: in.slug, Range: b.DefRange}
			attrs := l.unsetNulls(content, impairSchema, in.sc.ctx).Attributes
			if a := attrs["host"]; a != nil {
				if v, ok := l.value(a, in.sc); ok {
					if n, ok := l.resolveRef(a, v, "host", "host"); ok {
						im.Host = l.hostByName[n]
					}
				}
				l.needRoot(im.Host, "impairing a link (netem)", a.Expr.Range())
			}
			if a := attrs["netdev"]; a != nil {
				if s, ok := l.str(a, in.sc); ok {
					if !validNetdev(s) {
						l.errorf(a.Expr.Range().Ptr(), "Invalid netdev name", "%q is not a Linux interface name: 1 to 15 bytes, without '/', ':' or spaces (e.g. \"eth1\").", s)
					} else if im.Host != nil {
						l.checkImpairNetdev(im.Host, s, a.Expr.Range())
					}
					im.Netdev = s
				}
			}
			pct := func(name string, dst *float64) {
				if a := attrs[name]; a != nil {
					if s, ok := l.str(a, in.sc); ok {
						v, err := ParsePercent(s)
						if err != nil {
							l.errorf(a.Expr.Range().Ptr(), "Invalid "+name, "%s: %v.", name, err)
							return
						}
						*dst = v
					}
				}
			}
			dur := func(name string, dst *time.Duration) bool {
				if a := attrs[name]; a != nil {
					if s, ok := l.str(a, in.sc); ok {
						v, err := ParseNetemTime(s)
						if err != nil {
							l.errorf(a.Expr.Range().Ptr(), "Invalid "+name, "%s: %v.", name, err)
							return false
						}
						*dst = v
						return true
					}
				}
				return false
			}
			delayParsed := dur("delay", &im.Netem.Delay)
			dur("jitter", &im.Netem.Jitter)
			pct("loss", &im.Netem.Loss)
			pct("duplicate", &im.Netem.Duplicate)
			pct("reorder", &im.Netem.Reorder)
			pct("corrupt", &im.Netem.Corrupt)
			for _, name := range []string{"loss", "duplicate", "reorder", "corrupt"} {
				if attrs[name] != nil {
					im.Netem.PerPacket = true
				}
			}
			if a := attrs["rate"]; a != nil {
				if s, ok := l.str(a, in.sc); ok {
					if v, err := ParseRate(s); err != nil {
						l.errorf(a.Expr.Range().Ptr(), "Invalid rate", "rate: %v.", err)
					} else {
						im.Netem.RateBytes = v
					}
				}
			}
			// A delay that failed to parse has its own error; "0ms" is no delay.
			noDelay := im.Netem.Delay == 0 && (attrs["delay"] == nil || delayParsed)
			if a := attrs["jitter"]; a != nil && im.Netem.Jitter > 0 && noDelay {
				l.errorf(a.Expr.Range().Ptr(), "Jitter without delay", "netem varies the delay by the jitter, so jitter needs a delay: add delay = \"10ms\" (for example) beside it.")
			}
			if a := attrs["reorder"]; a != nil && im.Netem.Reorder > 0 && noDelay {
				l.errorf(a.Expr.Range().Ptr(), "Reorder without delay", "netem reorders by sending some packets at once while it delays the others, so reorder needs a delay: add delay = \"10ms\" (for example) beside it.")
			}
			present := 0
			for _, n := range []string{"delay", "jitter", "loss", "duplicate", "reorder", "corrupt", "rate"} {
				if attrs[n] != nil {
					present++
				}
			}
			if present == 0 {
				l.errorf(b.DefRange.Ptr(), "Empty impairment", "Set at least one of delay, jitter, loss, duplicate, reorder, corrupt or rate, e.g. loss = \"1%%\" (\"0%%\" is a valid baseline point of a sweep).")
			}
			if a := attrs["during"]; a != nil {
				im.During = l.during(a, in.sc, im.Host, "Impaired host not in workload", "this impairment may not touch its traffic")
			}
			l.lab.Impairs = append(l.lab.Impairs, im)
		}
	}
	l.checkImpairOverlap()
	l.warnImpairReceiverOnly()
}

// warnImpairReceiverOnly warns of an impairment whose host only receives
// the data of every two-sided workload it covers: netem acts on what a
// netdev sends, so there it delays or drops only ACKs (and, for READ, the
// requests), not the data a reader of the lab means to impair.
func (l *loader) warnImpairReceiverOnly() {
	for _, im := range l.lab.Impairs {
		if im.Host == nil {
			continue
		}
		covered := im.During
		if len(covered) == 0 {
			for _, w := range l.lab.Workloads {
				if runsOn(w, im.Host) {
					covered = append(covered, w)
				}
			}
		}
		var senders, names []string
		receiverOnly := len(covered) > 0
		for _, w := range covered {
			t, ok := LookupTool(w.Tool)
			if !ok || w.ServerHost == nil || w.ClientHost == nil || w.ServerHost == w.ClientHost {
				receiverOnly = false
				break
			}
			var from *Host
			switch t.Data {
			case kinds.DataClient:
				from = w.ClientHost
			case kinds.DataServer:
				from = w.ServerHost
			}
			if from == nil || from == im.Host {
				receiverOnly = false
				break
			}
			names = append(names, fmt.Sprintf("%s (%s: %s)", w.Name, w.Tool, kinds.Arrow(w.Tool, []string{w.ServerHost.Name, w.ClientHost.Name})))
			if !slices.Contains(senders, from.Name) {
				senders = append(senders, from.Name)
			}
		}
		if !receiverOnly {
			continue
		}
		l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Impairment on the receiving end only", Subject: im.Range.Ptr(),
			Detail: fmt.Sprintf("impair %s acts on what host %s sends on %s, but every workload it covers sends its data to %s: %s. There it delays or drops only the ACKs. To impair the data, impair host %s instead (or keep this to study ACK loss).",
				im.Name, im.Host.Name, im.Netdev, im.Host.Name, strings.Join(names, ", "), strings.Join(senders, " or "))})
	}
}

// checkImpairNetdev refuses a netdev the lab knows the host does not use
// for its data: the netdevs of the host's rxe blocks and its VM's data NICs
// are known; on a host the lab knows none of, the netdev is checked at
// preflight against what the host has. A VM's eth0 carries rlab's own SSH
// session.
func (l *loader) checkImpairNetdev(h *Host, nd string, rng hcl.Range) {
	known := map[string]bool{}
	for _, r := range l.lab.Devices {
		if r.Host == h {
			known[r.Netdev] = true
		}
	}
	if h.VM != nil {
		if nd == "eth0" {
			l.errorf(rng.Ptr(), "Impairing the management NIC", "eth0 of VM host %s carries rlab's SSH session to it; impair a data NIC (eth1 for its first network).", h.Name)
			return
		}
		for i := range h.VM.Networks {
			known[fmt.Sprintf("eth%d", i+1)] = true
		}
	}
	if len(known) == 0 || known[nd] {
		return
	}
	var names []string
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	l.errorf(rng.Ptr(), "Unknown netdev", "Host %s has no netdev %q in this lab; its lab netdevs are %s. Impair one of those (the link its workloads use).", h.Name, nd, strings.Join(names, ", "))
}

// checkImpairOverlap refuses two impairments of one host's netdev in force
// at once: netem is one root qdisc, so the second would replace the first.
// A whole-run impairment overlaps every other; scoped ones overlap when the
// spans of their workloads (file order, first to last) meet.
func (l *loader) checkImpairOverlap() {
	l.instExpr, l.instCtx = nil, nil // the detail names the instances
	type span struct {
		im     *Impair
		lo, hi int
	}
	by := map[string][]span{}
	var keys []string
	for _, im := range l.lab.Impairs {
		if im.Host == nil || im.Netdev == "" {
			continue
		}
		s := span{im: im, lo: 0, hi: math.MaxInt}
		if len(im.During) > 0 {
			s.lo, s.hi = math.MaxInt, -1
			for _, w := range im.During {
				s.lo, s.hi = min(s.lo, w.Index), max(s.hi, w.Index)
			}
		}
		k := im.Host.Name + "\x00" + im.Netdev
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], s)
	}
	for _, k := range keys {
		ss := by[k]
		for i := 1; i < len(ss); i++ {
			for j := 0; j < i; j++ {
				a, b := ss[j], ss[i]
				if a.lo <= b.hi && b.lo <= a.hi {
					l.errorf(b.im.Range.Ptr(), "Overlapping impairments", "impair %s and impair %s (%s) both impair %s of host %s at the same time; netem is one qdisc per netdev. Scope them to different workloads with during = [workload.NAME], or merge them.",
						b.im.Name, a.im.Name, a.im.Range, b.im.Netdev, b.im.Host.Name)
					break
				}
			}
		}
	}
}

// ImpairsOf returns the impairments in force during workload w: scoped to
// it, or whole-run on one of its hosts.
func (l *Lab) ImpairsOf(w *Workload) []*Impair {
	var out []*Impair
	for _, im := range l.Impairs {
		if len(im.During) == 0 {
			if runsOn(w, im.Host) {
				out = append(out, im)
			}
			continue
		}
		for _, d := range im.During {
			if d == w {
				out = append(out, im)
				break
			}
		}
	}
	return out
}

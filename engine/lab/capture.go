package lab

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
)

// The capture block: its schema and decoder.

var captureSchema = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{
	{Name: "host", Required: true}, {Name: "netdev", Required: true}, {Name: "filter"},
	{Name: "snaplen"}, {Name: "max_size"}, {Name: "during"},
}, metaSchema...)}

func (l *loader) decodeCaptures(blocks []*hcl.Block) {
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["capture"][label]; d == nil || d.block != b {
			continue
		}
		content := l.content(b.Body, captureSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.workloadObjs
		sc := &scope{ctx: ctx, where: "a capture block", blockTypes: []string{"host", "rxe", "siw", "rdma", "workload"}}
		for _, in := range l.expand(label, content, sc) {
			l.enter(in)
			c := &Capture{Name: in.name, Slug: in.slug, Range: b.DefRange, Snaplen: DefaultSnaplen, MaxBytes: DefaultMaxBytes}
			attrs := l.unsetNulls(content, captureSchema, in.sc.ctx).Attributes
			if a := attrs["host"]; a != nil {
				if v, ok := l.value(a, in.sc); ok {
					if n, ok := l.resolveRef(a, v, "host", "host"); ok {
						c.Host = l.hostByName[n]
					}
				}
			}
			if a := attrs["host"]; a != nil {
				l.needRoot(c.Host, "capturing packets", a.Expr.Range())
			}
			if a := attrs["netdev"]; a != nil {
				if s, ok := l.str(a, in.sc); ok {
					if !validNetdev(s) && s != "any" {
						l.errorf(a.Expr.Range().Ptr(), "Invalid netdev name", "%q is not a Linux interface name: 1 to 15 bytes, without '/', ':' or spaces (e.g. \"eth1\").", s)
					}
					c.Netdev = s
				}
			}
			if a := attrs["filter"]; a != nil {
				if s, ok := l.str(a, in.sc); ok {
					if exp, ok := NamedFilters[s]; ok {
						c.FilterName, s = s, exp
					} else if msg := checkFilter(s); msg != "" {
						l.errorf(a.Expr.Range().Ptr(), "Invalid capture filter", "%s", msg)
					}
					c.Filter = s
				}
			}
			if a := attrs["snaplen"]; a != nil {
				if n, ok := l.integer(a, in.sc, 64, 262144); ok {
					c.Snaplen = int(n)
				}
			}
			if a := attrs["max_size"]; a != nil {
				if n, ok := l.size(a, in.sc); ok {
					if n < 1<<20 {
						l.errorf(a.Expr.Range().Ptr(), "Capture size too small", "max_size must be at least 1MiB; tcpdump rotates files in whole MB.")
					} else {
						c.MaxBytes = n
					}
				}
			}
			if a := attrs["during"]; a != nil {
				c.During = l.during(a, in.sc, c.Host, "Capture host not in workload", "this capture may see none of its traffic")
			}
			if c.FilterName == "roce-cm" {
				l.checkCMCapture(c, attrs["filter"])
			}
			l.lab.Captures = append(l.lab.Captures, c)
		}
	}
}

// MaxDuringPairs bounds the workloads the captures and impairments of one
// lab name in during, counted once per block instance (a capture of 10,000
// instances during workload.w of 5,000 is 50 million).
const MaxDuringPairs = 100_000

// during decodes a list of workloads that scopes a block on host h (a
// capture, an impairment); a workload not on h is warned about (summary),
// consequence saying what that means.
func (l *loader) during(a *hcl.Attribute, sc *scope, h *Host, summary, consequence string) []*Workload {
	if l.duringPairs > MaxDuringPairs {
		return nil // reported once; evaluating each further list walks it whole
	}
	v, ok := l.value(a, sc)
	if !ok {
		return nil
	}
	t := v.Type()
	if !(t.IsListType() || t.IsTupleType() || t.IsSetType()) {
		l.errorf(a.Expr.Range().Ptr(), "Invalid during", "during is a list of workloads, like [workload.write_bw]; got %s.", article(t))
		return nil
	}
	elems := v.AsValueSlice()
	n := 0
	for _, e := range elems {
		if et := e.Type(); (et.IsObjectType() && !et.HasAttribute("kind")) || et.IsTupleType() {
			n += e.LengthInt()
		} else {
			n++
		}
	}
	if l.duringPairs += n; l.duringPairs > MaxDuringPairs {
		l.errorf(a.Expr.Range().Ptr(), "Too many during workloads", "The lab's captures and impairments name more than %d workloads in during, all together, by this one; rlab keeps every pair (10,000 captures each during 5,000 workloads held rlab validate 211 s and 1 GB). Name the workloads each capture is for, or capture once per host.", MaxDuringPairs)
		return nil
	}
	rs := toolopts.ElemRanges(a.Expr, len(elems))
	var out []*Workload
	for i, e := range elems {
		// A whole for_each workload expands to all its instances.
		if et := e.Type(); (et.IsObjectType() && !et.HasAttribute("kind")) || et.IsTupleType() {
			for it := e.ElementIterator(); it.Next(); {
				_, inst := it.Element()
				if n, ok := l.resolveRefAt(rs[i].Ptr(), inst, "workload", "during"); ok {
					out = append(out, l.workloadByName[n])
				}
			}
			continue
		}
		if n, ok := l.resolveRefAt(rs[i].Ptr(), e, "workload", "during"); ok {
			w := l.workloadByName[n]
			if w == nil {
				continue
			}
			if h != nil && !runsOn(w, h) {
				l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary,
					Detail:  fmt.Sprintf("Workload %s does not run on host %s, so %s.", w.Name, h.Name, consequence),
					Subject: rs[i].Ptr()})
			}
			out = append(out, w)
		}
	}
	return out
}

func runsOn(w *Workload, h *Host) bool {
	for _, x := range w.Hosts() {
		if x == h {
			return true
		}
	}
	return false
}

// checkFilter catches the pcap filter mistakes that are cheap to see without
// libpcap: unbalanced parentheses and quotes. tcpdump checks the rest on the
// host at preflight.
func checkFilter(s string) string {
	depth := 0
	for _, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return "The filter closes a parenthesis it never opened."
			}
		case '"', '\'', '`', ';', '|', '$':
			return fmt.Sprintf("The filter holds %q, which is not part of the pcap filter language (e.g. \"udp port 4791\").", r)
		}
	}
	if depth != 0 {
		return "The filter opens a parenthesis it never closes."
	}
	return ""
}

// NamedFilters are the capture filters a lab may name by purpose instead of
// writing pcap filter language (labs/README.md documents them; tcpdump
// gets the expansion). A RoCEv2 packet's BTH starts at udp[8]; its
// destination QP is the low 24 bits of udp[12:4], and the RDMA-CM speaks
// MADs to QP1. iWARP has no port of its own (its RDMA-CM listens where the
// tool says): all TCP but SSH, which is rlab's own session.
var NamedFilters = map[string]string{
	"roce-cm":   "udp port 4791 and udp[12:4] & 0xffffff = 1",
	"roce-data": "udp port 4791 and udp[12:4] & 0xffffff != 1",
	"iwarp":     "tcp and not port 22",
}

// connectsThroughCM reports whether a workload's RDMA connection is set up
// by RDMA-CM MADs on QP1, which a roce-cm capture sees: a RoCE tool that
// always uses the RDMA CM (rping) or is asked to (perftest's -R). Over
// iWARP the CM is MPA over TCP, not MADs.
func connectsThroughCM(w *Workload) (bool, string) {
	t, ok := kinds.Lookup(w.Tool)
	if !ok || !t.RDMA {
		return false, "does not use RDMA"
	}
	for _, r := range []*Device{w.ServerDevice, w.ClientDevice} {
		if r != nil && r.IWARP() {
			return false, "runs over iWARP, whose RDMA CM speaks MPA over TCP (capture it with filter = \"iwarp\")"
		}
	}
	if t.RDMACM {
		return true, ""
	}
	for _, a := range w.Args {
		if t.RDMACMFlag != "" && a == t.RDMACMFlag || a == "--rdma_cm" {
			return true, ""
		}
	}
	if t.RDMACMFlag != "" {
		return false, fmt.Sprintf("connects its QPs without the RDMA CM (add %q to its args)", t.RDMACMFlag)
	}
	return false, "connects its QPs without the RDMA CM"
}

// checkCMCapture warns when a roce-cm capture covers workloads whose
// connections it cannot see: the capture would stay empty for them.
func (l *loader) checkCMCapture(c *Capture, a *hcl.Attribute) {
	ws := c.During
	if len(ws) == 0 && c.Host != nil {
		for _, w := range l.lab.Workloads {
			if runsOn(w, c.Host) {
				ws = append(ws, w)
			}
		}
	}
	var why []string
	for _, w := range ws {
		if ok, reason := connectsThroughCM(w); !ok {
			why = append(why, fmt.Sprintf("%s %s", w.Name, reason))
		}
	}
	if len(why) == 0 {
		return
	}
	sort.Strings(why)
	rng := c.Range
	if a != nil {
		rng = a.Expr.Range()
	}
	l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Capture sees no RDMA-CM traffic", Subject: rng.Ptr(),
		Detail: fmt.Sprintf("capture %s keeps only RDMA-CM MADs (filter \"roce-cm\"), but %s: it will hold none of their connections.",
			c.Name, strings.Join(why, "; "))})
}

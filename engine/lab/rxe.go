package lab

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/zclconf/go-cty/cty"
)

// The rxe and siw blocks (software RDMA devices rlab creates on a netdev)
// and the rdma block (a device rlab finds and never deletes): their schemas
// and decoders. All three give a *RXE that a workload's server and client
// name (rxe.X, siw.X, rdma.X); their labels share one namespace, since a
// device is known by its label through the run.

// DeviceBlocks are the blocks that declare an RDMA device a workload uses.
var DeviceBlocks = []string{"rxe", "siw", "rdma"}

var softDeviceSchema = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{
	{Name: "host", Required: true}, {Name: "netdev", Required: true}, {Name: "name"}, {Name: "keep"},
}, metaSchema...)}

// validNetdev follows the kernel's dev_valid_name: 1 to 15 bytes (IFNAMSIZ
// counts bytes, not characters), not "." or "..", no '/', ':' or white
// space; control characters (NUL among them) are refused as well.
func validNetdev(s string) bool {
	if len(s) == 0 || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if r == '/' || r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

var deviceNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,63}$`)

type placedDevice struct {
	r   *Device
	rng hcl.Range
}

// decodeDevices decodes the rxe, siw and rdma blocks, in that order.
func (l *loader) decodeDevices(byType map[string][]*hcl.Block) {
	l.deviceByName = map[string]*Device{}
	l.deviceObjs = map[string]cty.Value{"host": l.hostObjs["host"]}
	byDevice := map[string]placedDevice{}
	l.decodeSoftDevices("rxe", byType["rxe"], byDevice)
	l.decodeSoftDevices("siw", byType["siw"], byDevice)
	l.decodeRDMAs(byType["rdma"], byDevice)
	l.warnSharedNetdev()
}

// warnSharedNetdev warns when a host's netdev carries both an rxe and a siw:
// the RDMA CM binds a connection to a device by IP address, so tools that
// connect through it (rping, perftest over siw) reach only one of the two.
func (l *loader) warnSharedNetdev() {
	rxeOn := map[string]*Device{}
	for _, r := range l.lab.Devices {
		if r.Block == "rxe" && r.Host != nil {
			rxeOn[r.Host.Name+"\x00"+r.Netdev] = r
		}
	}
	for _, r := range l.lab.Devices {
		if r.Block != "siw" || r.Host == nil {
			continue
		}
		if x := rxeOn[r.Host.Name+"\x00"+r.Netdev]; x != nil {
			l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "siw and rxe on one netdev", Subject: r.Range.Ptr(),
				Detail: fmt.Sprintf("siw %s and rxe %s are both on %s of host %s, so they share its IP addresses; the RDMA CM binds a connection to one device by address, so rping and perftest over siw may land on the rxe. Put them on different netdevs (or addresses).", r.Name, x.Name, r.Netdev, r.Host.Name)})
		}
	}
}

func (l *loader) decodeSoftDevices(blockType string, blocks []*hcl.Block, byDevice map[string]placedDevice) {
	objs := map[string][]keyedObj{}
	byNetdev := map[string]placedDevice{}
	what := blockType
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls[blockType][label]; d == nil || d.block != b {
			continue
		}
		blockContent := l.content(b.Body, softDeviceSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.hostObjs
		sc := &scope{ctx: ctx, where: article2(blockType) + " block", blockTypes: []string{"host"}}
		for _, in := range l.expand(label, blockContent, sc) {
			l.enter(in)
			content := l.unsetNulls(blockContent, softDeviceSchema, in.sc.ctx)
			r := &Device{Name: in.name, Slug: in.slug, Range: b.DefRange, Block: blockType, Port: 1}
			ok := true
			if a := content.Attributes["host"]; a != nil {
				if v, vok := l.value(a, in.sc); vok {
					if n, rok := l.resolveRef(a, v, "host", "host"); rok {
						r.Host = l.hostByName[n]
					}
				}
				ok = ok && r.Host != nil
			}
			netdevRange := b.DefRange
			if a := content.Attributes["netdev"]; a != nil {
				netdevRange = a.Expr.Range()
				if s, sok := l.str(a, in.sc); sok {
					if !validNetdev(s) {
						l.errorf(a.Expr.Range().Ptr(), "Invalid netdev name", "%q is not a Linux interface name: 1 to 15 bytes, without '/', ':' or spaces (e.g. \"eth1\", \"ens4\").", s)
						ok = false
					}
					r.Netdev = s
				} else {
					ok = false
				}
			}
			if r.Host != nil && r.Host.VM != nil && r.Netdev != "" && ok {
				if i, err := strconv.Atoi(strings.TrimPrefix(r.Netdev, "eth")); err != nil || !strings.HasPrefix(r.Netdev, "eth") || i < 1 || i > len(r.Host.VM.Networks) {
					l.warnf(netdevRange.Ptr(), "Netdev not on VM", "%s", vmNICs(r.Host, r.Netdev))
				}
			}
			r.Device = blockType + "_" + r.Netdev
			deviceRange := netdevRange
			if a := content.Attributes["name"]; a != nil {
				deviceRange = a.Expr.Range()
				if s, sok := l.str(a, in.sc); sok {
					if !deviceNameRe.MatchString(s) {
						l.errorf(a.Expr.Range().Ptr(), "Invalid "+what+" device name", "%q is not a valid RDMA device name: 1 to 63 letters, digits, '_', '.' or '-'.", s)
					}
					r.Device = s
				}
			}
			if a := content.Attributes["keep"]; a != nil {
				r.Keep, _ = l.boolean(a, in.sc)
			}
			if a := content.Attributes["host"]; a != nil {
				l.needRoot(r.Host, "creating "+article2(blockType)+" device", a.Expr.Range())
			}
			if ok && r.Host != nil && r.Netdev != "" {
				k := r.Host.Name + "\x00" + r.Netdev
				if prev, dup := byNetdev[k]; dup {
					l.errorf(&netdevRange, "Duplicate "+what+" for netdev", "%s %s already binds %s on host %s (at %s); a netdev carries one %s device. Reuse %s.%s.", blockType, prev.r.Name, r.Netdev, r.Host.Name, prev.rng, blockType, blockType, prev.r.Name)
				} else {
					byNetdev[k] = placedDevice{r, netdevRange}
					l.claimDevice(byDevice, r, deviceRange)
				}
			}
			l.addDevice(blockType, label, in.key, r, objs)
		}
	}
	l.deviceObjs[blockType] = collect(l.decls[blockType], objs)
	l.recordKeys(blockType, objs)
}

// vmNICs says which data NICs VM host h has, for a netdev that is not one.
func vmNICs(h *Host, netdev string) string {
	fix := "Add a network block to its vm block, or use one of those names."
	switch n := len(h.VM.Networks); n {
	case 0:
		return fmt.Sprintf("Host %s is a local VM with no data network: its one NIC, eth0, carries rlab's SSH session, so %s will not exist. Add a network block to its vm block (it appears as eth1).", h.Name, netdev)
	case 1:
		return fmt.Sprintf("Host %s is a local VM with one data network (%s), which appears as eth1; %s is probably not it. %s", h.Name, h.VM.Networks[0].Name, netdev, fix)
	default:
		return fmt.Sprintf("Host %s is a local VM with %d data networks, which appear as eth1..eth%d; %s is probably not one of them. %s", h.Name, n, n, netdev, fix)
	}
}

// claimDevice reports a second block naming the same device on a host.
func (l *loader) claimDevice(byDevice map[string]placedDevice, r *Device, rng hcl.Range) {
	dk := r.Host.Name + "\x00" + r.Device
	if prev, dup := byDevice[dk]; dup {
		l.errorf(&rng, "Duplicate "+r.Block+" device name", "%s %s already names device %q on host %s (at %s); a device is declared once: reuse %s.%s, or give this one another name.", prev.r.Block, prev.r.Name, r.Device, r.Host.Name, prev.rng, prev.r.Block, prev.r.Name)
		return
	}
	byDevice[dk] = placedDevice{r, rng}
}

func (l *loader) addDevice(blockType, label, key string, r *Device, objs map[string][]keyedObj) {
	l.deviceByName[r.Name] = r
	l.lab.Devices = append(l.lab.Devices, r)
	hostObj := cty.DynamicVal
	if r.Host != nil {
		hostObj = l.hostObj(r.Host)
	}
	objs[label] = append(objs[label], keyedObj{key, refObject(blockType, r.Name, map[string]cty.Value{
		"device": cty.StringVal(r.Device), "netdev": cty.StringVal(r.Netdev), "host": hostObj,
	})})
}

var rdmaSchema = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{
	{Name: "host", Required: true}, {Name: "device", Required: true}, {Name: "port"},
}, metaSchema...)}

// decodeRDMAs decodes rdma blocks: an existing device (hardware, or an
// rxe/siw an admin made) and the port to use. rlab never creates or
// deletes it; whether it exists and its port is ACTIVE is for preflight.
func (l *loader) decodeRDMAs(blocks []*hcl.Block, byDevice map[string]placedDevice) {
	objs := map[string][]keyedObj{}
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["rdma"][label]; d == nil || d.block != b {
			continue
		}
		blockContent := l.content(b.Body, rdmaSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.hostObjs
		sc := &scope{ctx: ctx, where: "an rdma block", blockTypes: []string{"host"}}
		for _, in := range l.expand(label, blockContent, sc) {
			l.enter(in)
			content := l.unsetNulls(blockContent, rdmaSchema, in.sc.ctx)
			r := &Device{Name: in.name, Slug: in.slug, Range: b.DefRange, Block: "rdma", Port: 1, Keep: true}
			if a := content.Attributes["host"]; a != nil {
				if v, vok := l.value(a, in.sc); vok {
					if n, rok := l.resolveRef(a, v, "host", "host"); rok {
						r.Host = l.hostByName[n]
					}
				}
			}
			deviceRange := b.DefRange
			if a := content.Attributes["device"]; a != nil {
				deviceRange = a.Expr.Range()
				if s, sok := l.str(a, in.sc); sok {
					if !deviceNameRe.MatchString(s) {
						l.errorf(a.Expr.Range().Ptr(), "Invalid RDMA device name", "%q is not an RDMA device name: 1 to 63 letters, digits, '_', '.' or '-', as `rdma link` and ibv_devices list them (e.g. \"mlx5_0\").", s)
					} else {
						r.Device = s
					}
				}
			}
			if a := content.Attributes["port"]; a != nil {
				if n, ok := l.integer(a, in.sc, 1, 255); ok {
					r.Port = int(n)
				}
			}
			if r.Host != nil && r.Device != "" {
				l.claimDevice(byDevice, r, deviceRange)
			}
			l.addDevice("rdma", label, in.key, r, objs)
		}
	}
	l.deviceObjs["rdma"] = collect(l.decls["rdma"], objs)
	l.recordKeys("rdma", objs)
}

// deviceRefBlock is the block of the device reference v (rxe, siw or rdma), or
// "rxe" when it is none, so the diagnostic asks for what most labs use.
func deviceRefBlock(v cty.Value) string {
	t := v.Type()
	if !t.IsObjectType() || !t.HasAttribute("kind") {
		return "rxe"
	}
	k := v.GetAttr("kind")
	if k.Type() == cty.String && k.IsKnown() && !k.IsNull() && slices.Contains(DeviceBlocks, k.AsString()) {
		return k.AsString()
	}
	return "rxe"
}

// IWARPProblem is one thing a workload asks of an iWARP device that iWARP
// cannot do, and the attribute that asks it ("tool", "transport", "args").
type IWARPProblem struct {
	Attr, Why string
}

// IWARPProblems lists what workload w, with tool t, asks that an iWARP
// device (siw, or an iWARP NIC an rdma block names) cannot do. Read in the
// kernel's soft-iWARP driver (drivers/infiniband/sw/siw/siw_verbs.c, Linux
// 6.x): siw_create_qp refuses every QP type but RC ("only RC QP's
// supported"), so no UC or UD; siw_query_device sets atomic_cap = 0, so
// no atomics; siw_post_send takes SEND, SEND_WITH_INV, RDMA READ (with one
// SGE only: "iWarp restricts RREAD sink to SGL containing 1 SGE only"),
// RDMA WRITE, REG_MR and LOCAL_INV, and refuses every other opcode, so no
// WRITE or SEND with immediate data. perftest posts one SGE per READ, so
// that limit is met. And iWARP connects QPs only through the RDMA CM, so
// the tools that connect QPs themselves (the pingpongs) cannot run; which
// tools can is the descriptor's (kinds: NoIWARP, RDMACMFlag). A program
// workload says what it posts in needs (kinds.Needs).
func IWARPProblems(w *Workload, t Tool) []IWARPProblem {
	var out []IWARPProblem
	if t.NoIWARP != "" {
		out = append(out, IWARPProblem{"tool", t.NoIWARP})
	}
	if tr := w.Transport; tr != "" && tr != "RC" && t.NoIWARP == "" {
		out = append(out, IWARPProblem{"transport", fmt.Sprintf("iWARP carries only RC (reliable connected) QPs, not %s (siw_create_qp: \"only RC QP's supported\"); use transport = \"RC\"", tr)})
	}
	for _, a := range w.Args {
		if a == "--write_with_imm" || strings.HasPrefix(a, "--write_with_imm=") {
			out = append(out, IWARPProblem{"args", "iWARP has no RDMA WRITE with immediate data (siw_post_send refuses that opcode); remove --write_with_imm, or run it over rxe (Soft-RoCE)"})
		}
	}
	for _, n := range w.Needs {
		if d, ok := kinds.NeedByName(n); ok && d.IWARP != "" {
			out = append(out, IWARPProblem{"needs", d.IWARP + "; run the program over rxe (Soft-RoCE)"})
		}
	}
	return out
}

// checkIWARP reports, at the attribute that asks it, what a workload with
// a siw end asks that iWARP cannot do. (An rdma block's device may be
// iWARP too; preflight checks that from the host's facts.)
func (l *loader) checkIWARP(w *Workload, b *hcl.Block, attrs, opts hcl.Attributes, remain hcl.Body) {
	var end *Device
	for _, r := range []*Device{w.ServerDevice, w.ClientDevice} {
		if r != nil && r.IWARP() {
			end = r
			break
		}
	}
	if end == nil {
		return
	}
	t, ok := LookupTool(w.Tool)
	if !ok {
		return
	}
	for _, p := range IWARPProblems(w, t) {
		rng := b.DefRange
		a := opts[p.Attr]
		if a == nil {
			a = attrs[p.Attr]
		}
		if a != nil {
			rng = a.Expr.Range()
		} else if a := familyAttr(remain, p.Attr); a != nil { // a family's own (program's needs)
			rng = a.Expr.Range()
		} else if a := attrs["server"]; a != nil && p.Attr == "transport" {
			rng = a.Expr.Range()
		}
		fix := ""
		if p.Attr == "tool" { // the other problems say their own fix
			fix = " Run it over rxe (Soft-RoCE) instead, or leave it out."
		}
		l.errorf(&rng, "Not supported on iWARP", "Workload %s runs on siw %s (soft-iWARP): %s.%s", w.Name, end.Name, p.Why, fix)
	}
}

// familyAttr finds attribute n among the attributes a family decodes
// itself (the part of the block the engine's schema leaves), nil if unset.
func familyAttr(remain hcl.Body, n string) *hcl.Attribute {
	if remain == nil {
		return nil
	}
	c, _, _ := remain.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: n}}})
	if c == nil {
		return nil
	}
	return c.Attributes[n]
}

// Describe is what the plan says the device's step does.
func (r *Device) Describe() string {
	kept := map[bool]string{true: "; kept after the run", false: ""}[r.Keep]
	switch r.Block {
	case "siw":
		return fmt.Sprintf("create siw %s on %s (load siw if needed)%s", r.Device, r.Netdev, kept)
	case "rdma":
		return fmt.Sprintf("use RDMA device %s port %d as found (check it is ACTIVE; never deleted)", r.Device, r.Port)
	}
	return fmt.Sprintf("create rxe %s on %s (load rdma_rxe if needed)%s", r.Device, r.Netdev, kept)
}

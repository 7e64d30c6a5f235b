package lab

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The rxe block: its schema and decoder.

var rxeSchema = &hcl.BodySchema{Attributes: append([]hcl.AttributeSchema{
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

var rxeNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,63}$`)

func (l *loader) decodeRXEs(blocks []*hcl.Block) {
	l.rxeByName = map[string]*RXE{}
	objs := map[string][]keyedObj{}
	type placed struct {
		r   *RXE
		rng hcl.Range
	}
	byNetdev, byDevice := map[string]placed{}, map[string]placed{}
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["rxe"][label]; d == nil || d.block != b {
			continue
		}
		blockContent := l.content(b.Body, rxeSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.hostObjs
		sc := &scope{ctx: ctx, where: "an rxe block", kinds: []string{"host"}}
		for _, in := range l.expand(label, blockContent, sc) {
			l.enter(in)
			content := l.unsetNulls(blockContent, rxeSchema, in.sc.ctx)
			r := &RXE{Name: in.name, Slug: in.slug, Range: b.DefRange}
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
					l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Netdev not on VM", Subject: netdevRange.Ptr(),
						Detail: fmt.Sprintf("Host %s is a local VM with %d data network(s), which appear as eth1..eth%d; %s is probably not one of them. Add a network block, or use one of those names.", r.Host.Name, len(r.Host.VM.Networks), len(r.Host.VM.Networks), r.Netdev)})
				}
			}
			r.Device = "rxe_" + r.Netdev
			deviceRange := netdevRange
			if a := content.Attributes["name"]; a != nil {
				deviceRange = a.Expr.Range()
				if s, sok := l.str(a, in.sc); sok {
					if !rxeNameRe.MatchString(s) {
						l.errorf(a.Expr.Range().Ptr(), "Invalid rxe device name", "%q is not a valid RDMA device name: 1 to 63 letters, digits, '_', '.' or '-'.", s)
					}
					r.Device = s
				}
			}
			if a := content.Attributes["keep"]; a != nil {
				r.Keep, _ = l.boolean(a, in.sc)
			}
			if a := content.Attributes["host"]; a != nil {
				l.needRoot(r.Host, "creating an rxe device", a.Expr.Range())
			}
			if ok && r.Host != nil && r.Netdev != "" {
				k := r.Host.Name + "\x00" + r.Netdev
				if prev, dup := byNetdev[k]; dup {
					l.errorf(&netdevRange, "Duplicate rxe for netdev", "rxe %s already binds %s on host %s (at %s); a netdev carries one rxe device. Reuse rxe.%s.", prev.r.Name, r.Netdev, r.Host.Name, prev.rng, prev.r.Name)
				} else {
					byNetdev[k] = placed{r, netdevRange}
					dk := r.Host.Name + "\x00" + r.Device
					if prev, dup := byDevice[dk]; dup {
						l.errorf(&deviceRange, "Duplicate rxe device name", "rxe %s already creates device %q on host %s (at %s); give this one another name.", prev.r.Name, r.Device, r.Host.Name, prev.rng)
					} else {
						byDevice[dk] = placed{r, deviceRange}
					}
				}
			}
			l.rxeByName[r.Name] = r
			l.lab.RXEs = append(l.lab.RXEs, r)
			hostObj := cty.DynamicVal
			if r.Host != nil {
				hostObj = l.hostObj(r.Host)
			}
			objs[label] = append(objs[label], keyedObj{in.key, refObject("rxe", r.Name, map[string]cty.Value{
				"device": cty.StringVal(r.Device), "netdev": cty.StringVal(r.Netdev), "host": hostObj,
			})})
		}
	}
	l.rxeObjs = map[string]cty.Value{"host": l.hostObjs["host"], "rxe": collect(l.decls["rxe"], objs)}
	l.recordKeys("rxe", objs)
}

package lab

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The ssh block (defaults) and the host block with its vm block: their
// schemas and decoders.

var sshAttrs = []hcl.AttributeSchema{
	{Name: "user"}, {Name: "port"}, {Name: "identity_file"}, {Name: "known_hosts"}, {Name: "jump"}, {Name: "become"},
	{Name: "provision"}, // install what the lab needs before it runs (engine/provision)
}

type sshSettings struct {
	attrs map[string]*hcl.Attribute
	sc    *scope
}

func (l *loader) decodeSSHDefaults(blocks []*hcl.Block) *sshSettings {
	if len(blocks) == 0 {
		return nil
	}
	for _, b := range blocks[1:] {
		l.errorf(b.DefRange.Ptr(), "Duplicate ssh block", "A lab has one top-level ssh block of defaults; the first is at %s. Merge them.", blocks[0].DefRange)
	}
	schema := &hcl.BodySchema{Attributes: sshAttrs}
	content := l.unsetNulls(l.content(blocks[0].Body, schema), schema, l.baseCtx())
	return &sshSettings{attrs: content.Attributes, sc: &scope{ctx: l.baseCtx(), where: "the ssh block"}}
}

var hostSchema = &hcl.BodySchema{
	// internet is a vm {} setting: taken here only to say so.
	Attributes: append([]hcl.AttributeSchema{{Name: "address"}, {Name: "internet"}}, append(sshAttrs, metaSchema...)...),
	Blocks:     []hcl.BlockHeaderSchema{{Type: "ssh"}, {Type: "vm"}},
}

type hostInst struct {
	h    *Host
	jump *hcl.Attribute
	sc   *scope
	// def is the defaults' jump, used when jump (the host's own) turns
	// out null once hosts can be referred to.
	def *hcl.Attribute
}

func (l *loader) decodeHosts(blocks []*hcl.Block, defaults *sshSettings) {
	l.hostByName = map[string]*Host{}
	objs := map[string][]keyedObj{}
	var insts []hostInst
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["host"][label]; d == nil || d.block != b {
			continue
		}
		content := l.content(b.Body, hostSchema)
		sc := &scope{ctx: l.baseCtx(), where: "a host block"}
		var sshBlock *hcl.BodyContent
		var vmBlock *hcl.Block
		for _, nb := range content.Blocks {
			switch nb.Type {
			case "ssh":
				if sshBlock != nil {
					l.errorf(nb.DefRange.Ptr(), "Duplicate ssh block", "A host has at most one ssh block.")
					continue
				}
				c := l.content(nb.Body, &hcl.BodySchema{Attributes: sshAttrs})
				sshBlock = c
				for n, a := range c.Attributes {
					if prev := content.Attributes[n]; prev != nil {
						l.errorf(a.NameRange.Ptr(), "Duplicate argument", "%q is already set on this host at %s; set it in one place.", n, prev.NameRange)
					}
				}
			case "vm":
				if vmBlock != nil {
					l.errorf(nb.DefRange.Ptr(), "Duplicate vm block", "A host has at most one vm block.")
					continue
				}
				vmBlock = nb
			}
		}
		blockContent, blockSSH := content, sshBlock
		for _, in := range l.expand(label, blockContent, sc) {
			l.enter(in)
			h := &Host{Name: in.name, Slug: in.slug, Block: label, Key: in.key, Port: DefaultPort, Range: b.DefRange}
			isc := in.sc
			// Null leaves an argument unset, per instance (each.value may
			// be null for one host only).
			content := l.unsetNulls(blockContent, hostSchema, isc.ctx)
			sshBlock := l.unsetNulls(blockSSH, &hcl.BodySchema{Attributes: sshAttrs}, isc.ctx)
			// Host settings: the host's own, then its ssh block, then the defaults.
			pick := func(n string) (*hcl.Attribute, bool) {
				if a := content.Attributes[n]; a != nil {
					return a, false
				}
				if sshBlock != nil && sshBlock.Attributes[n] != nil {
					return sshBlock.Attributes[n], false
				}
				if defaults != nil && defaults.attrs[n] != nil {
					return defaults.attrs[n], true
				}
				return nil, false
			}
			get := func(n string) (*hcl.Attribute, *scope) {
				a, def := pick(n)
				if def {
					return a, defaults.sc
				}
				return a, isc
			}
			if a, s := get("address"); a != nil {
				var ok bool
				if h.Address, ok = l.str(a, s); ok {
					if msg := checkSSHAddress(h.Address); msg != "" {
						l.errorf(a.Expr.Range().Ptr(), "Invalid address", "%s", msg)
					}
				}
			}
			if a, s := get("port"); a != nil {
				if p, ok := l.integer(a, s, 1, 65535); ok {
					h.Port = int(p)
				}
			}
			if a, s := get("user"); a != nil {
				h.User, _ = l.str(a, s)
			}
			if a, s := get("identity_file"); a != nil {
				h.IdentityFile, _ = l.str(a, s)
			}
			if a, s := get("known_hosts"); a != nil {
				h.KnownHosts, _ = l.str(a, s)
			}
			if a, s := get("become"); a != nil {
				h.Become, _ = l.boolean(a, s)
			}
			if a, s := get("provision"); a != nil {
				h.Provision, _ = l.boolean(a, s)
			}
			if a := content.Attributes["internet"]; a != nil {
				where := "Host " + h.Name + " is reached over SSH and has the network its own system gives it: remove internet."
				if vmBlock != nil {
					where = "Move it into the host's vm { } block."
				}
				l.errorf(a.NameRange.Ptr(), "Internet outside a vm block", "internet = true gives a local VM network access through QEMU's user-mode NAT, so it is a vm { } setting. %s", where)
			}
			if vmBlock != nil {
				h.VM = l.decodeVM(vmBlock, isc)
				if a := content.Attributes["address"]; a != nil {
					l.errorf(a.NameRange.Ptr(), "Conflicting host form", "Host %s has a vm block, so rlab boots it and knows its address. Remove address, or remove the vm block to reach an existing machine over SSH.", h.Name)
				}
			} else if _, def := pick("address"); content.Attributes["address"] == nil && !def {
				subj, why := b.DefRange, ""
				if a := blockContent.Attributes["address"]; a != nil {
					subj, why = a.Expr.Range(), " Its address is null, which leaves it unset."
				}
				l.errorf(subj.Ptr(), "Missing address", "Host %s needs an address (a DNS name or IP reached over SSH), or a vm { } block to boot a local VM.%s", h.Name, why)
			}
			ja, jdef := pick("jump")
			jsc := isc
			var fallback *hcl.Attribute
			if jdef {
				jsc = defaults.sc
				if h.VM != nil {
					ja = nil // a local VM is reached directly, whatever the defaults say
				}
			} else if defaults != nil && h.VM == nil {
				fallback = defaults.attrs["jump"]
			}
			insts = append(insts, hostInst{h: h, jump: ja, sc: jsc, def: fallback})
			if prev := l.hostByName[h.Name]; prev == nil {
				l.hostByName[h.Name] = h
			}
			l.lab.Hosts = append(l.lab.Hosts, h)
			objs[label] = append(objs[label], keyedObj{in.key, refObject("host", h.Name, map[string]cty.Value{
				"address": cty.StringVal(h.Address), "port": cty.NumberIntVal(int64(h.Port)),
				"user": cty.StringVal(h.User), "slug": cty.StringVal(h.Slug),
			})})
		}
	}
	l.checkVMAddresses()
	l.checkLoneNetworks()
	l.checkSlugs("host", func(yield func(string, string, hcl.Range)) {
		for _, h := range l.lab.Hosts {
			yield(h.Slug, h.Name, h.Range)
		}
	})
	l.hostObjs = map[string]cty.Value{"host": collect(l.decls["host"], objs)}
	l.recordKeys("host", objs)

	// Jumps may name other hosts, so they are evaluated once all hosts exist.
	for i := range insts {
		in := &insts[i]
		l.enter(instance{sc: in.sc})
		var v cty.Value
		for in.jump != nil {
			sc := *in.sc
			sc.ctx = in.sc.ctx.NewChild()
			sc.ctx.Variables = l.hostObjs
			sc.blockTypes = []string{"host"}
			var ok bool
			if v, ok = l.valueOrNull(in.jump, &sc); !ok {
				in.jump = nil
			} else if v.IsNull() {
				// Null leaves the host's jump unset: the defaults' applies.
				in.jump, in.sc, in.def = in.def, defaults.sc, nil
				continue
			}
			break
		}
		if in.jump == nil {
			continue
		}
		if v.Type() == cty.String {
			in.h.Jump = v.AsString()
			if in.h.Jump == "" {
				l.errorf(in.jump.Expr.Range().Ptr(), "Empty jump", `jump is "user@host:port" or a host reference like host.bastion; remove it for a direct connection.`)
			} else {
				l.checkJump(in.jump, in.h.Jump)
			}
			continue
		}
		name, ok := l.resolveRef(in.jump, v, "host", "jump")
		if !ok {
			continue
		}
		if name == in.h.Name {
			if _, def := defaultsJump(defaults, in.jump); def {
				continue // the bastion named by the defaults does not jump through itself
			}
		}
		in.h.Jump = name
		in.h.JumpHost = l.hostByName[name]
	}
	l.instExpr, l.instCtx = nil, nil
	for _, in := range insts {
		seen := map[*Host]bool{}
		for h := in.h; h != nil; h = h.JumpHost {
			if seen[h] {
				rng := in.h.Range
				if in.jump != nil {
					rng = in.jump.Expr.Range()
				}
				l.errorf(&rng, "Jump host cycle", "Host %s reaches itself through its jump hosts; one of them must connect directly.", in.h.Name)
				in.h.JumpHost, in.h.Jump = nil, ""
				break
			}
			seen[h] = true
		}
	}
}

// checkLoneNetworks warns of a network only one VM of a for_each or count
// block joins: its frames go nowhere. With names made from each.key, that is a name spelt one way in
// the server's vm block and another in the client's; said once per host
// block, naming the networks.
func (l *loader) checkLoneNetworks() {
	members := map[string][]*Host{}
	for _, h := range l.lab.Hosts {
		if h.VM != nil {
			for _, n := range h.VM.Networks {
				members[n.Name] = append(members[n.Name], h)
			}
		}
	}
	byBlock := map[string][]string{} // host block -> its lone networks
	var blocks []string
	first := map[string]*Host{}
	for _, h := range l.lab.Hosts {
		if h.VM == nil {
			continue
		}
		for _, n := range h.VM.Networks {
			// A lone VM on a network of its own is a lab's choice (an rxe
			// with no peer); in a for_each or count block it is a slip.
			if len(members[n.Name]) != 1 || h.Key == "" {
				continue
			}
			if first[h.Block] == nil {
				first[h.Block] = h
				blocks = append(blocks, h.Block)
			}
			byBlock[h.Block] = append(byBlock[h.Block], fmt.Sprintf("%q (%s)", n.Name, h.Name))
		}
	}
	for _, b := range blocks {
		nets := byBlock[b]
		shown := nets
		if len(shown) > 3 {
			shown = append(shown[:3:3], fmt.Sprintf("%d more", len(nets)-3))
		}
		l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Network with one VM", Subject: first[b].Range.Ptr(),
			Detail: fmt.Sprintf("No other VM joins %s: what a VM sends there reaches no one. A network links the VMs that name it; give the VM it should reach the same network name (with name = \"pair-${each.key}\", the same expression in both vm blocks).", strings.Join(shown, ", "))})
	}
}

// checkVMAddresses reports two VMs given one address on one network, and
// VMs on one network (one L2 segment, of any number of VMs) with different
// MTUs: frames the larger side sends would not fit the smaller.
func (l *loader) checkVMAddresses() {
	seen := map[string]*Host{}
	first := map[string]*Host{}
	mtu := map[string]int{}
	byFile := map[string]string{}
	for _, h := range l.lab.Hosts {
		if h.VM == nil {
			continue
		}
		for _, n := range h.VM.Networks {
			if f, prev := networkFileName(n.Name), byFile[networkFileName(n.Name)]; prev != "" && prev != n.Name {
				l.errorf(h.Range.Ptr(), "Conflicting network names", "Networks %q and %q share the file name %q in the run folder, so they would be one segment; name them apart by a letter or digit.", prev, n.Name, f)
				continue
			} else {
				byFile[f] = n.Name
			}
			if f := first[n.Name]; f == nil {
				first[n.Name], mtu[n.Name] = h, n.MTU
			} else if mtu[n.Name] != n.MTU {
				l.errorf(h.Range.Ptr(), "Different MTUs on one network", "Network %q has mtu %d on %s but %d on %s; every VM on a network must use one MTU (frames larger than a member's MTU are dropped). Set the same mtu in each.", n.Name, mtu[n.Name], f.Name, n.MTU, h.Name)
			}
			if n.Address == "" {
				continue
			}
			p, _ := netip.ParsePrefix(n.Address)
			k := n.Name + "\x00" + p.Addr().String()
			if prev := seen[k]; prev != nil {
				l.errorf(h.Range.Ptr(), "Duplicate VM network address", "Hosts %s and %s both take %s on network %q; give each VM its own address.", prev.Name, h.Name, p.Addr(), n.Name)
				continue
			}
			seen[k] = h
		}
	}
}

func defaultsJump(d *sshSettings, a *hcl.Attribute) (*hcl.Attribute, bool) {
	if d != nil && d.attrs["jump"] == a {
		return a, true
	}
	return nil, false
}

// checkSlugs reports two instances whose filesystem names collide (keys
// "a b" and "a_b" both become a_b).
func (l *loader) checkSlugs(kind string, each func(func(slug, name string, r hcl.Range))) {
	seen := map[string]string{}
	each(func(slug, name string, r hcl.Range) {
		if prev, ok := seen[slug]; ok && prev != name {
			l.errorf(&r, "Conflicting "+kind+" names", "%s %s and %s share the file name %q in the run folder; change one for_each key.", kind, prev, name, slug)
		}
		seen[slug] = name
	})
}

var vmSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "image"}, {Name: "memory"}, {Name: "cpus"}, {Name: "boot_timeout"}, {Name: "internet"}},
	Blocks: []hcl.BlockHeaderSchema{{Type: "network", LabelNames: []string{"name"}},
		// taken only to say what to write instead (decodeVM)
		{Type: "dynamic", LabelNames: []string{"type"}}},
}

var networkSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "name"}, {Name: "address"}, {Name: "mtu"}}}

// networkNameRe is what a network's name may be: it names the segment's
// sockets and switch file in the run folder (engine/vm), so it stays short
// and free of path characters. A student key like "ana@x.org" needs
// replace(): the detail of the diagnostic says how.
var networkNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$`)

// networkFileName is the form engine/vm gives a network name in file names
// (its hostnameBad): two names equal here would share one segment's sockets.
func networkFileName(n string) string {
	return networkFileRe.ReplaceAllString(n, "_")
}

var networkFileRe = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

func (l *loader) decodeVM(b *hcl.Block, sc *scope) *VM {
	content := l.unsetNulls(l.content(b.Body, vmSchema), vmSchema, sc.ctx)
	vm := &VM{MemoryBytes: DefaultVMMemory, CPUs: 1, BootTimeout: DefaultVMBoot}
	if a := content.Attributes["image"]; a != nil {
		vm.Image, _ = l.str(a, sc)
	}
	if a := content.Attributes["internet"]; a != nil {
		vm.Internet, _ = l.boolean(a, sc)
	}
	if a := content.Attributes["memory"]; a != nil {
		if n, ok := l.size(a, sc); ok {
			if n < 256<<20 {
				l.errorf(a.Expr.Range().Ptr(), "VM memory too small", "A VM needs at least 256MiB to boot Debian with rdma_rxe.")
			} else {
				vm.MemoryBytes = n
			}
		}
	}
	if a := content.Attributes["cpus"]; a != nil {
		if n, ok := l.integer(a, sc, 1, 64); ok {
			vm.CPUs = int(n)
		}
	}
	if a := content.Attributes["boot_timeout"]; a != nil {
		if d, ok := l.duration(a, sc); ok {
			vm.BootTimeout = d
		}
	}
	seen := map[string]hcl.Range{}
	for _, nb := range content.Blocks {
		if nb.Type == "dynamic" {
			l.errorf(nb.DefRange.Ptr(), "Dynamic blocks not supported", "A vm block lists its networks as network blocks. To give each for_each instance its own network, set the name from the instance: network \"pair\" { name = \"pair-${each.key}\" }.")
			continue
		}
		c := l.unsetNulls(l.content(nb.Body, networkSchema), networkSchema, sc.ctx)
		// The label names the network unless name does: a label is a
		// literal in HCL, so a per-instance network needs the attribute.
		name, nameRange := nb.Labels[0], nb.LabelRanges[0]
		if a := c.Attributes["name"]; a != nil {
			nameRange = a.Expr.Range()
			s, ok := l.str(a, sc)
			if !ok {
				continue
			}
			name = s
		}
		if !networkNameRe.MatchString(name) {
			l.errorf(nameRange.Ptr(), "Invalid network name", "%q is not a network name: 1 to 48 letters, digits, '_', '.' or '-', starting with a letter or digit (it names the network's sockets in the run folder). From a for_each key that may hold other characters, write e.g. name = \"pair-${replace(each.key, \"/[^a-zA-Z0-9]/\", \"-\")}\".", name)
			continue
		}
		// The name names files in the run folder (engine/vm: the
		// network's sockets, vm/net-NAME.switch.json), where a mask would
		// part networks the lab joined: refused, as a for_each key is.
		if l.sensitive(name) {
			l.errorf(nameRange.Ptr(), "Sensitive value in a network name", "A network's name names its sockets and its switch's record in the run folder (vm/net-NAME.*), where the value cannot be masked. Name the network by something that is not secret (a for_each key, a label).")
			continue
		}
		if prev, ok := seen[name]; ok {
			l.errorf(nameRange.Ptr(), "Duplicate network", "This VM already joins network %q at %s; a VM has one NIC per network.", name, prev)
			continue
		}
		seen[name] = nb.DefRange
		n := VMNetwork{Name: name, MTU: DefaultMTU}
		if a := c.Attributes["address"]; a != nil {
			if s, ok := l.str(a, sc); ok {
				if _, err := netip.ParsePrefix(s); err != nil {
					why := err.Error()
					if i := strings.LastIndex(why, ": "); i >= 0 {
						why = why[i+2:]
					}
					l.errorf(a.Expr.Range().Ptr(), "Invalid network address", "%q is not an address with its prefix length (%s); write e.g. \"10.99.0.1/24\".", s, why)
				} else {
					n.Address = s
				}
			}
		}
		if a := c.Attributes["mtu"]; a != nil {
			if m, ok := l.integer(a, sc, 576, 9000); ok {
				n.MTU = int(m)
			}
		}
		vm.Networks = append(vm.Networks, n)
	}
	return vm
}

// needRoot warns when a host logs in as a user other than root without
// become: creating rxe devices and capturing need root.
func (l *loader) needRoot(h *Host, what string, rng hcl.Range) {
	if h == nil || h.User == "" || h.User == "root" || h.Become || l.warnedRoot[h] {
		return
	}
	if l.warnedRoot == nil {
		l.warnedRoot = map[*Host]bool{}
	}
	l.warnedRoot[h] = true
	l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Root needed without become", Subject: &rng,
		Detail: fmt.Sprintf("%s needs root, but this host logs in as %q without become = true; the run will fail there unless that user is root. Set become = true on the host or in the ssh block (sudo -n).", upperFirst(what), h.User)})
}

// hostObj returns the object value host.NAME[...] evaluates to.
func (l *loader) hostObj(h *Host) cty.Value {
	v := l.hostObjs["host"]
	if !v.Type().IsObjectType() || !v.Type().HasAttribute(h.Block) {
		return cty.DynamicVal
	}
	v = v.GetAttr(h.Block)
	if h.Key == "" {
		return v
	}
	t := v.Type()
	switch {
	case t.IsTupleType():
		i, _ := strconv.Atoi(h.Key)
		if i < t.Length() {
			return v.Index(cty.NumberIntVal(int64(i)))
		}
	case t.IsObjectType() && t.HasAttribute(h.Key):
		return v.GetAttr(h.Key)
	}
	return cty.DynamicVal
}

package lab

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Defaults the model promises.
const (
	DefaultPort        = 22
	DefaultSnaplen     = 128
	DefaultMaxBytes    = 256 << 20
	DefaultTimeout     = 5 * time.Minute
	DefaultTCPBytes    = 1 << 30
	DefaultVMMemory    = 1 << 30
	DefaultVMBoot      = 10 * time.Minute
	DefaultMTU         = 1500
	defaultRepeatLimit = 1000
)

// enter makes the diagnostics that follow name the instance they are about
// (HCL's writer prints "with each.key as ..."), until the next enter.
func (l *loader) enter(in instance) {
	var root, attr string
	switch {
	case in.sc.each:
		root, attr = "each", "key"
	case in.sc.count:
		root, attr = "count", "index"
	default:
		l.instExpr, l.instCtx = nil, nil
		return
	}
	l.instExpr = &hclsyntax.ScopeTraversalExpr{Traversal: hcl.Traversal{hcl.TraverseRoot{Name: root}, hcl.TraverseAttr{Name: attr}}}
	l.instCtx = in.sc.ctx
}

// instance is one expansion of a block (count / for_each).
type instance struct {
	name, slug, key string
	sc              *scope
}

var metaSchema = []hcl.AttributeSchema{{Name: "count"}, {Name: "for_each"}}

// expand evaluates count or for_each of a block and returns its instances.
func (l *loader) expand(label string, content *hcl.BodyContent, sc *scope) []instance {
	cnt, fe := content.Attributes["count"], content.Attributes["for_each"]
	child := func(vars map[string]cty.Value, each, count bool) *scope {
		ctx := sc.ctx.NewChild()
		ctx.Variables = vars
		s := *sc
		s.ctx, s.each, s.count = ctx, each, count
		return &s
	}
	switch {
	case cnt != nil && fe != nil:
		l.errorf(fe.NameRange.Ptr(), `Invalid combination of "count" and "for_each"`, "A block may set count or for_each, not both. Keep one.")
		return nil
	case cnt != nil:
		n, ok := l.integer(cnt, sc, 0, MaxInstances)
		if !ok {
			return nil
		}
		out := make([]instance, n)
		for i := range out {
			k := strconv.Itoa(i)
			out[i] = instance{
				name: fmt.Sprintf("%s[%d]", label, i), slug: label + "." + k, key: k,
				sc: child(map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(int64(i))})}, false, true),
			}
		}
		return out
	case fe != nil:
		v, ok := l.value(fe, sc)
		if !ok {
			return nil
		}
		keys, vals, ok := l.forEachItems(v, fe)
		if !ok {
			return nil
		}
		out := make([]instance, len(keys))
		for i, k := range keys {
			out[i] = instance{
				name: fmt.Sprintf("%s[%q]", label, k), slug: label + "." + slugKey(k), key: k,
				sc: child(map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": vals[i]})}, true, false),
			}
		}
		return out
	}
	return []instance{{name: label, slug: label, sc: sc}}
}

// forEachItems turns a for_each value into sorted keys and values: a map or
// object (key => value), or a set or list of strings (each.value = each.key).
func (l *loader) forEachItems(v cty.Value, a *hcl.Attribute) ([]string, []cty.Value, bool) {
	t := v.Type()
	bad := func(why string) ([]string, []cty.Value, bool) {
		l.errorf(a.Expr.Range().Ptr(), "Invalid for_each argument", "for_each takes a map, an object, or a set or list of strings; %s.", why)
		return nil, nil, false
	}
	var keys []string
	var vals []cty.Value
	switch {
	case t.IsMapType() || t.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			keys, vals = append(keys, k.AsString()), append(vals, e)
		}
	case t.IsSetType() || t.IsListType() || t.IsTupleType():
		seen := map[string]bool{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
				return bad("this collection holds something other than strings")
			}
			k := e.AsString()
			if seen[k] {
				return bad(fmt.Sprintf("the key %q appears twice", k))
			}
			seen[k] = true
			keys, vals = append(keys, k), append(vals, e)
		}
	default:
		return bad("got " + article(t))
	}
	if len(keys) > MaxInstances {
		return bad(fmt.Sprintf("it has %d items, more than the limit of %d", len(keys), MaxInstances))
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]] < keys[idx[j]] })
	sk, sv := make([]string, len(keys)), make([]cty.Value, len(keys))
	for i, j := range idx {
		sk[i], sv[i] = keys[j], vals[j]
	}
	return sk, sv, true
}

var hostnameRe = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9])?$`)

// checkAddress returns why s is not a DNS name or IP address, or "".
func checkAddress(s string) string {
	switch {
	case s == "":
		return "A host address is a DNS name or IP address; it cannot be empty."
	case strings.Contains(s, "@"):
		return fmt.Sprintf("%q holds a user name; put the user in user = %q and the address alone in address.", s, s[:strings.Index(s, "@")])
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		return fmt.Sprintf("Write the IPv6 address without brackets (%s); the port goes in port.", strings.Trim(s, "[]"))
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return ""
	}
	if h, p, ok := strings.Cut(s, ":"); ok && !strings.Contains(p, ":") {
		return fmt.Sprintf("%q holds a port; write address = %q and port = %s.", s, h, p)
	}
	if len(s) > 253 || !hostnameRe.MatchString(s) {
		return fmt.Sprintf("%q is neither an IP address nor a DNS name.", s)
	}
	return ""
}

var slugUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func slugKey(k string) string {
	s := slugUnsafe.ReplaceAllString(k, "_")
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

// refObject builds the value a reference like host.server evaluates to.
func refObject(kind, name string, attrs map[string]cty.Value) cty.Value {
	m := map[string]cty.Value{"kind": cty.StringVal(kind), "name": cty.StringVal(name)}
	for k, v := range attrs {
		m[k] = v
	}
	return cty.ObjectVal(m)
}

// collect groups instance objects by block label: plain blocks are the
// object itself, count blocks a tuple, for_each blocks an object by key.
func collect(decls map[string]*decl, objs map[string][]keyedObj) cty.Value {
	out := map[string]cty.Value{}
	for label, d := range decls {
		list := objs[label]
		switch {
		case !d.repeated:
			if len(list) == 1 {
				out[label] = list[0].v
			} else {
				out[label] = cty.DynamicVal // its errors are reported
			}
		case d.countStyle:
			vs := make([]cty.Value, len(list))
			for i, o := range list {
				vs[i] = o.v
			}
			if len(vs) == 0 {
				out[label] = cty.EmptyTupleVal
			} else {
				out[label] = cty.TupleVal(vs)
			}
		default:
			m := map[string]cty.Value{}
			for _, o := range list {
				m[o.key] = o.v
			}
			out[label] = objOrEmpty(m)
		}
	}
	return objOrEmpty(out)
}

// recordKeys notes the instance keys of every block of a kind.
func (l *loader) recordKeys(kind string, objs map[string][]keyedObj) {
	if l.keys == nil {
		l.keys = map[string]map[string][]string{}
	}
	m := map[string][]string{}
	for label := range l.decls[kind] {
		ks := []string{}
		for _, o := range objs[label] {
			ks = append(ks, o.key)
		}
		m[label] = ks
	}
	l.keys[kind] = m
}

type keyedObj struct {
	key string
	v   cty.Value
}

// resolveRef turns an evaluated reference into the name of an instance of
// kind, reporting strings, other kinds and whole collections.
func (l *loader) resolveRef(a *hcl.Attribute, v cty.Value, kind, what string) (string, bool) {
	return l.resolveRefAt(a.Expr.Range().Ptr(), v, kind, what)
}

func (l *loader) resolveRefAt(rng *hcl.Range, v cty.Value, kind, what string) (string, bool) {
	t := v.Type()
	if t == cty.String {
		l.errorf(rng, "Invalid reference", "%s takes a reference such as %s.NAME, not a string. Write %s.%s without quotes.", what, kind, kind, v.AsString())
		return "", false
	}
	if t.IsObjectType() && t.HasAttribute("kind") && t.HasAttribute("name") {
		k, n := v.GetAttr("kind"), v.GetAttr("name")
		if k.Type() == cty.String && n.Type() == cty.String && k.IsKnown() && n.IsKnown() && !k.IsNull() && !n.IsNull() {
			if k.AsString() != kind {
				l.errorf(rng, "Wrong kind of reference", "%s needs %s (%s.NAME); this is %s, %s.%s.", what, article2(kind), kind, article2(k.AsString()), k.AsString(), n.AsString())
				return "", false
			}
			return n.AsString(), true
		}
	}
	if t.IsObjectType() || t.IsTupleType() {
		l.errorf(rng, "Missing instance key", "%s needs one %s, but this names all instances of a block with for_each or count. Pick one, like %s.NAME[each.key] or %s.NAME[0].", what, kind, kind, kind)
		return "", false
	}
	l.errorf(rng, "Invalid reference", "%s takes a reference such as %s.NAME; got %s.", what, kind, article(t))
	return "", false
}

func article2(kind string) string {
	if kind == "rxe" || strings.IndexByte("aeiou", kind[0]) >= 0 { // "an rxe": ar-ex-ee
		return "an " + kind
	}
	return "a " + kind
}

// ---- ssh defaults and hosts ----

var sshAttrs = []hcl.AttributeSchema{
	{Name: "user"}, {Name: "port"}, {Name: "identity_file"}, {Name: "known_hosts"}, {Name: "jump"}, {Name: "become"},
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
	Attributes: append([]hcl.AttributeSchema{{Name: "address"}}, append(sshAttrs, metaSchema...)...),
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
			sc.kinds = []string{"host"}
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

// checkVMAddresses reports two VMs given one address on one network, and a
// network joining more than two VMs: local VM networks are point-to-point
// links (a QEMU stream socket between two VMs).
func (l *loader) checkVMAddresses() {
	seen := map[string]*Host{}
	members := map[string][]*Host{}
	for _, h := range l.lab.Hosts {
		if h.VM == nil {
			continue
		}
		for _, n := range h.VM.Networks {
			members[n.Name] = append(members[n.Name], h)
			if m := members[n.Name]; len(m) == 3 {
				l.errorf(h.Range.Ptr(), "Too many VMs on one network", "Network %q already links %s and %s; a local VM network is a point-to-point link between two VMs. Give %s its own network (e.g. network %q) and pair it with one other VM.", n.Name, m[0].Name, m[1].Name, h.Name, n.Name+"2")
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
	Attributes: []hcl.AttributeSchema{{Name: "image"}, {Name: "memory"}, {Name: "cpus"}, {Name: "boot_timeout"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "network", LabelNames: []string{"name"}}},
}

func (l *loader) decodeVM(b *hcl.Block, sc *scope) *VM {
	content := l.unsetNulls(l.content(b.Body, vmSchema), vmSchema, sc.ctx)
	vm := &VM{MemoryBytes: DefaultVMMemory, CPUs: 1, BootTimeout: DefaultVMBoot}
	if a := content.Attributes["image"]; a != nil {
		vm.Image, _ = l.str(a, sc)
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
		name := nb.Labels[0]
		if prev, ok := seen[name]; ok {
			l.errorf(nb.LabelRanges[0].Ptr(), "Duplicate network", "This VM already joins network %q at %s; a VM has one NIC per network.", name, prev)
			continue
		}
		seen[name] = nb.DefRange
		ns := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "address"}, {Name: "mtu"}}}
		c := l.unsetNulls(l.content(nb.Body, ns), ns, sc.ctx)
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

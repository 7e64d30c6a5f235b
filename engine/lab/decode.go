package lab

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rlab-dev/rlab/engine/results"
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
					if msg := checkAddress(h.Address); msg != "" {
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

// ---- rxe ----

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

// ---- workloads ----

var workloadSchema = &hcl.BodySchema{
	Attributes: append([]hcl.AttributeSchema{
		{Name: "tool"}, {Name: "server"}, {Name: "client"}, {Name: "host"}, {Name: "command"},
		{Name: "sizes"}, {Name: "iterations"}, {Name: "duration"}, {Name: "qps"}, {Name: "transport"},
		{Name: "bytes"}, {Name: "timeout"}, {Name: "repeat"}, {Name: "args"},
	}, metaSchema...),
	Blocks: []hcl.BlockHeaderSchema{{Type: "expect"}},
}

func (l *loader) decodeWorkloads(blocks []*hcl.Block) {
	l.workloadByName = map[string]*Workload{}
	objs := map[string][]keyedObj{}
	for _, b := range blocks {
		label := b.Labels[0]
		if d := l.decls["workload"][label]; d == nil || d.block != b {
			continue
		}
		content := l.content(b.Body, workloadSchema)
		ctx := l.baseCtx().NewChild()
		ctx.Variables = l.rxeObjs
		sc := &scope{ctx: ctx, where: "a workload block", kinds: []string{"host", "rxe"}}
		for _, in := range l.expand(label, content, sc) {
			l.enter(in)
			w := l.decodeWorkload(b, l.unsetNulls(content, workloadSchema, in.sc.ctx), in)
			w.Index = len(l.lab.Workloads)
			l.workloadByName[w.Name] = w
			l.lab.Workloads = append(l.lab.Workloads, w)
			objs[label] = append(objs[label], keyedObj{in.key, refObject("workload", w.Name, map[string]cty.Value{
				"tool": cty.StringVal(w.Tool),
			})})
		}
	}
	l.workloadObjs = map[string]cty.Value{
		"host": l.rxeObjs["host"], "rxe": l.rxeObjs["rxe"],
		"workload": collect(l.decls["workload"], objs),
	}
	l.recordKeys("workload", objs)
}

func (l *loader) decodeWorkload(b *hcl.Block, content *hcl.BodyContent, in instance) *Workload {
	w := &Workload{Name: in.name, Slug: in.slug, Range: b.DefRange, Timeout: DefaultTimeout, Repeat: 1}
	attrs := content.Attributes
	sc := in.sc
	ta := attrs["tool"]
	if ta == nil {
		l.errorf(b.DefRange.Ptr(), "Missing tool", "Workload %s needs tool = one of: %s.", w.Name, strings.Join(ToolNames(), ", "))
		l.checkToolless(attrs, sc)
		return w
	}
	name, ok := l.str(ta, sc)
	if !ok {
		l.checkToolless(attrs, sc)
		return w
	}
	tool, ok := LookupTool(name)
	if !ok {
		l.errorf(ta.Expr.Range().Ptr(), "Unsupported tool", "%q is not a workload tool.%s The tools are: %s.", name, didYouMean(name, ToolNames()), strings.Join(ToolNames(), ", "))
		l.checkToolless(attrs, sc)
		return w
	}
	w.Tool = name

	notFor := func(attr, why string) {
		if a := attrs[attr]; a != nil {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "%s %s", attr, why)
		}
	}
	// Sides.
	switch {
	case tool.OneHost:
		notFor("server", "is not an exec argument; exec runs one command on host.")
		notFor("client", "is not an exec argument; exec runs one command on host.")
		if a := attrs["host"]; a == nil {
			l.errorf(b.DefRange.Ptr(), "Missing host", "An exec workload needs host = host.NAME, the host to run the command on.")
		} else if v, ok := l.value(a, sc); ok {
			if n, ok := l.resolveRef(a, v, "host", "host"); ok {
				w.Host = l.hostByName[n]
			}
		}
		if a := attrs["command"]; a == nil {
			l.errorf(b.DefRange.Ptr(), "Missing command", `An exec workload needs command, an argv list like ["ip", "-br", "addr"].`)
		} else if cmd, ok := l.strList(a, sc); ok {
			if len(cmd) == 0 || cmd[0] == "" {
				l.errorf(a.Expr.Range().Ptr(), "Empty command", `command is an argv list whose first element is the program, like ["ip", "-br", "addr"].`)
			}
			w.Command = cmd
		}
	default:
		notFor("host", fmt.Sprintf("is only for exec workloads; %s runs between server and client.", name))
		notFor("command", fmt.Sprintf("is only for exec workloads; %s takes server and client (extra tool flags go in args).", name))
		kind := "host"
		if tool.RDMA {
			kind = "rxe"
		}
		for _, side := range []string{"server", "client"} {
			a := attrs[side]
			if a == nil {
				l.errorf(b.DefRange.Ptr(), "Missing "+side, "%s runs between two sides; set %s = %s.NAME.", name, side, kind)
				continue
			}
			v, ok := l.value(a, sc)
			if !ok {
				continue
			}
			n, ok := l.resolveRef(a, v, kind, side+" of "+name)
			if !ok {
				continue
			}
			if tool.RDMA {
				r := l.rxeByName[n]
				if r == nil {
					continue
				}
				if side == "server" {
					w.ServerRXE, w.ServerHost = r, r.Host
				} else {
					w.ClientRXE, w.ClientHost = r, r.Host
				}
			} else if side == "server" {
				w.ServerHost = l.hostByName[n]
			} else {
				w.ClientHost = l.hostByName[n]
			}
		}
	}

	// Options.
	if a := attrs["transport"]; a != nil {
		if s, ok := l.str(a, sc); ok {
			switch {
			case tool.Transports == nil:
				l.errorf(a.Expr.Range().Ptr(), "Argument not valid for "+name, "transport cannot be set: %s.", tool.TransportWhy)
			case !contains(tool.Transports, s):
				hint := ""
				if contains(tool.Transports, strings.ToUpper(s)) {
					hint = fmt.Sprintf(" Write %q in capitals.", strings.ToUpper(s))
				} else if tool.TransportWhy != "" {
					hint = " " + upperFirst(tool.TransportWhy) + "."
				}
				l.errorf(a.Expr.Range().Ptr(), "Unsupported transport", "%s supports transport %s; not %q.%s", name, orList(tool.Transports), s, hint)
			default:
				w.Transport = s
			}
		}
	} else if tool.Transports != nil {
		w.Transport = tool.Transports[0]
	}
	if a := attrs["sizes"]; a != nil {
		if !tool.Sizes {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "sizes is for RDMA tools; %s moves bytes (tcp) or runs a command (exec).", name)
		} else {
			if w.Transport == "UD" && tool.MaxSize == 0 {
				tool.MaxSize = 4096 // one UD message is one packet
			}
			w.Sizes = l.sizes(a, sc, tool)
		}
	}
	if a := attrs["iterations"]; a != nil {
		if !tool.Iterations {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "iterations is not an option of %s.%s", name, map[bool]string{true: " Use duration or bytes.", false: ""}[tool.Bytes])
		} else if n, ok := l.integer(a, sc, 1, 1<<40); ok {
			w.Iterations = n
		}
	}
	if a := attrs["duration"]; a != nil {
		if !tool.Duration {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "duration is not an option of %s; it runs a number of iterations.", name)
		} else if d, ok := l.duration(a, sc); ok {
			w.Duration = d
			if it := attrs["iterations"]; it != nil && tool.Iterations {
				l.errorf(a.NameRange.Ptr(), "Conflicting iterations and duration", "%s runs either a number of iterations or for a duration; keep one of them.", name)
			}
		}
	}
	if a := attrs["qps"]; a != nil {
		if !tool.QPs {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "qps is an option of the perftest bandwidth tools (ib_*_bw); %s uses one QP.", name)
		} else if n, ok := l.integer(a, sc, 1, 16384); ok {
			w.QPs = int(n)
		}
	}
	if a := attrs["bytes"]; a != nil {
		if !tool.Bytes {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for "+name, "bytes is the amount a tcp workload sends; %s takes sizes and iterations.", name)
		} else if n, ok := l.size(a, sc); ok {
			w.Bytes = n
			if attrs["duration"] != nil {
				l.errorf(a.NameRange.Ptr(), "Conflicting bytes and duration", "A tcp workload sends a number of bytes or for a duration; keep one of them.")
			}
		}
	} else if tool.Bytes && attrs["duration"] == nil {
		w.Bytes = DefaultTCPBytes
	}
	if a := attrs["timeout"]; a != nil {
		if d, ok := l.duration(a, sc); ok {
			w.Timeout = d
		}
	}
	if a := attrs["repeat"]; a != nil {
		if n, ok := l.integer(a, sc, 1, defaultRepeatLimit); ok {
			w.Repeat = int(n)
		}
	}
	if a := attrs["args"]; a != nil {
		if tool.OneHost {
			l.errorf(a.NameRange.Ptr(), "Argument not valid for exec", "args adds flags to a workload tool; for exec put the whole argv in command.")
		} else if args, ok := l.strList(a, sc); ok {
			w.Args = args
		}
	}
	for _, eb := range content.Blocks {
		if e := l.decodeExpect(eb, w, sc); e != nil {
			w.Expects = append(w.Expects, e)
		}
	}
	return w
}

// checkToolless reports what is wrong in a workload block whose tool is
// missing or unknown, as far as it can be told without the tool: undeclared
// references, and values that are no size, duration, number or list for any
// tool. The tool's own rules (which arguments, which sides) wait for a known
// tool; an unknown tool does not hide the block's other errors.
func (l *loader) checkToolless(attrs hcl.Attributes, sc *scope) {
	var inOrder []*hcl.Attribute // source order, so the diagnostics read top to bottom
	for _, a := range attrs {
		inOrder = append(inOrder, a)
	}
	sort.Slice(inOrder, func(i, j int) bool { return inOrder[i].Range.Start.Byte < inOrder[j].Range.Start.Byte })
	for _, a := range inOrder {
		switch a.Name {
		case "server", "client", "host", "transport":
			l.value(a, sc)
		case "command", "args":
			l.strList(a, sc)
		case "sizes":
			l.sizes(a, sc, Tool{})
		case "bytes":
			l.size(a, sc)
		case "duration", "timeout":
			l.duration(a, sc)
		case "iterations":
			l.integer(a, sc, 1, 1<<40)
		case "qps":
			l.integer(a, sc, 1, 16384)
		case "repeat":
			l.integer(a, sc, 1, defaultRepeatLimit)
		}
	}
}

// orList joins "a", "b", "c" as "a, b or c".
func orList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l *loader) sizes(a *hcl.Attribute, sc *scope, tool Tool) []int64 {
	v, ok := l.value(a, sc)
	if !ok {
		return nil
	}
	var elems []cty.Value
	var rs []hcl.Range
	t := v.Type()
	if t.IsListType() || t.IsTupleType() || t.IsSetType() {
		elems = v.AsValueSlice()
		rs = elemRanges(a.Expr, len(elems))
	} else {
		elems, rs = []cty.Value{v}, []hcl.Range{a.Expr.Range()}
	}
	if len(elems) == 0 {
		l.errorf(a.Expr.Range().Ptr(), "Invalid size", "sizes is empty; remove it to use the tool's default size, or list at least one.")
		return nil
	}
	var out []int64
	for i, e := range elems {
		n, ok := l.sizeValue(e, rs[i].Ptr(), "sizes")
		if !ok {
			continue
		}
		switch {
		case tool.FixedSize != 0 && n != tool.FixedSize:
			l.errorf(rs[i].Ptr(), "Invalid size for "+tool.Name, "%s moves %d-byte atomic operands, so sizes must be [%d]; got %d.", tool.Name, tool.FixedSize, tool.FixedSize, n)
		case tool.MaxSize != 0 && n > tool.MaxSize:
			l.errorf(rs[i].Ptr(), "Invalid size for "+tool.Name, "%s sends each message as one UD datagram, which must fit the path MTU (at most %d bytes); got %d.", tool.Name, tool.MaxSize, n)
		default:
			out = append(out, n)
		}
	}
	return out
}

var expectSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "message"}}}

// ResultAttrs lists the attributes result.* has in an expect condition of
// the given tool: its metrics' names (the names of results.json, summary.md,
// the report and rlab compare), plus size and repeat.
func ResultAttrs(tool string) []string {
	var out []string
	for _, n := range results.ToolMetrics(tool) {
		if m, ok := results.MetricByName(n); ok {
			out = append(out, m.Name)
		}
	}
	return append(out, "size", "repeat")
}

// resultAliases maps the older expect names of the tool's metrics (e.g.
// bw_avg_gbps) to their metric's name. They are still read, with a warning.
func resultAliases(tool string) map[string]string {
	out := map[string]string{}
	for _, n := range results.ToolMetrics(tool) {
		if m, ok := results.MetricByName(n); ok {
			for _, a := range m.Aliases {
				out[a.Name] = m.Name
			}
		}
	}
	return out
}

func (l *loader) decodeExpect(b *hcl.Block, w *Workload, sc *scope) *Expect {
	content := l.unsetNulls(l.content(b.Body, expectSchema), expectSchema, sc.ctx)
	ca := content.Attributes["condition"]
	if ca == nil || w.Tool == "" {
		return nil
	}
	aliases := resultAliases(w.Tool)
	attrs := ResultAttrs(w.Tool)
	for a := range aliases {
		attrs = append(attrs, a)
	}
	e := &Expect{Condition: ca.Expr, Range: b.DefRange, ctx: sc.ctx, attrs: attrs}
	if a := content.Attributes["message"]; a != nil {
		e.Message, _ = l.str(a, sc)
	}
	esc := *sc
	esc.result = ResultAttrs(w.Tool)
	esc.resultAliases = aliases
	if !l.checkRefs(ca.Expr, &esc) {
		return nil
	}
	// Evaluate once with unknown numbers to catch type errors now.
	unknown := map[string]cty.Value{}
	for _, n := range attrs {
		unknown[n] = cty.UnknownVal(cty.Number)
	}
	_, diags := e.Eval(unknown)
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Summary != "Expect condition not decided" {
			errs = append(errs, d)
		}
	}
	l.add(errs...)
	if errs.HasErrors() {
		return nil
	}
	return e
}

// Eval evaluates the condition against a result object (attribute name to
// value; see ResultAttrs). Missing attributes are null, so a condition over a
// metric the run did not record is an error, not a silent pass.
func (e *Expect) Eval(result map[string]cty.Value) (bool, hcl.Diagnostics) {
	ctx := e.ctx
	if ctx == nil {
		ctx = &hcl.EvalContext{}
	}
	full := map[string]cty.Value{}
	for _, a := range e.attrs {
		full[a] = cty.NullVal(cty.Number)
	}
	for k, v := range result {
		full[k] = v
	}
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{"result": objOrEmpty(full)}
	v, diags := e.Condition.Value(child)
	if diags.HasErrors() {
		return false, diags
	}
	rng := e.Condition.Range()
	if v.IsNull() {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid expect condition", Detail: "The condition is null; it must be true or false.", Subject: &rng}}
	}
	if !v.IsKnown() {
		if v.Type() == cty.Bool || v.Type() == cty.DynamicPseudoType {
			return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Expect condition not decided", Detail: "The condition depends on a result value that is missing.", Subject: &rng}}
		}
	}
	if v.Type() != cty.Bool {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid expect condition", Detail: fmt.Sprintf("The condition must be true or false; it is %s. Compare a result, like result.bw_avg > 1.", article(v.Type())), Subject: &rng}}
	}
	return v.True(), nil
}

// ---- captures ----

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
		sc := &scope{ctx: ctx, where: "a capture block", kinds: []string{"host", "rxe", "workload"}}
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
					if msg := checkFilter(s); msg != "" {
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
				c.During = l.during(a, in.sc, c)
			}
			l.lab.Captures = append(l.lab.Captures, c)
		}
	}
}

func (l *loader) during(a *hcl.Attribute, sc *scope, c *Capture) []*Workload {
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
	rs := elemRanges(a.Expr, len(elems))
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
			if c.Host != nil && !runsOn(w, c.Host) {
				l.add(&hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Capture host not in workload",
					Detail:  fmt.Sprintf("Workload %s does not run on host %s, so this capture may see none of its traffic.", w.Name, c.Host.Name),
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

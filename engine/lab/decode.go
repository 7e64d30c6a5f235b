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
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/zclconf/go-cty/cty"
)

// Expansion (count, for_each) and what every block decoder shares; each
// block type has its own file with its schema beside its decoder: hosts.go,
// rxe.go, workload.go (what every workload has), capture.go; a tool's own
// options are its family's (family.go).

// Defaults the model promises.
const (
	DefaultPort        = 22
	DefaultSnaplen     = 128
	DefaultMaxBytes    = 256 << 20
	DefaultTimeout     = 5 * time.Minute
	DefaultTCPBytes    = toolopts.DefaultTCPBytes
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
		if n == 0 {
			l.noteEmpty(label, cnt)
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
		if l.sensitiveKey(keys, fe) {
			return nil
		}
		if len(keys) == 0 {
			l.noteEmpty(label, fe)
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

// sensitiveKey refuses for_each keys that hold a sensitive value: a key
// names the instance's folder and files in the run directory
// (hosts/<slug>/, wl.<name>.*) and its lines on the terminal, where a mask
// would break the names the run finds its files by (Terraform refuses
// them as instance keys for the same reason).
func (l *loader) sensitiveKey(keys []string, a *hcl.Attribute) bool {
	for _, k := range keys {
		for _, v := range l.lab.Sensitive {
			if v != "" && strings.Contains(k, v) {
				l.errorf(a.Expr.Range().Ptr(), "Sensitive value in a for_each key", "A for_each key names the instance: its folder and files in the run directory and its lines in plans and on the terminal, where the value cannot be masked. Key the instances by something that is not secret (a map of names to the sensitive values) and use the value as each.value.")
				return true
			}
		}
	}
	return false
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
	if a, err := netip.ParseAddr(s); err == nil {
		// A zone (fe80::1%eth1) names an interface; netip takes any bytes
		// there, and the address starts a known_hosts line, so it is held
		// to the characters of an interface name.
		if z := a.Zone(); z != "" && slugUnsafe.MatchString(z) {
			return fmt.Sprintf("%q has IPv6 zone %q; a zone is an interface name (letters, digits, '_', '.', '-').", s, z)
		}
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
func refObject(blockType, name string, attrs map[string]cty.Value) cty.Value {
	m := map[string]cty.Value{"kind": cty.StringVal(blockType), "name": cty.StringVal(name)}
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

// recordKeys notes the instance keys of every block of a type.
func (l *loader) recordKeys(blockType string, objs map[string][]keyedObj) {
	if l.keys == nil {
		l.keys = map[string]map[string][]string{}
	}
	m := map[string][]string{}
	for label := range l.decls[blockType] {
		ks := []string{}
		for _, o := range objs[label] {
			ks = append(ks, o.key)
		}
		m[label] = ks
	}
	l.keys[blockType] = m
}

type keyedObj struct {
	key string
	v   cty.Value
}

// resolveRef turns an evaluated reference into the name of an instance of
// blockType, reporting strings, other block types and whole collections.
func (l *loader) resolveRef(a *hcl.Attribute, v cty.Value, blockType, what string) (string, bool) {
	return l.resolveRefAt(a.Expr.Range().Ptr(), v, blockType, what)
}

func (l *loader) resolveRefAt(rng *hcl.Range, v cty.Value, blockType, what string) (string, bool) {
	t := v.Type()
	if t == cty.String {
		l.errorf(rng, "Invalid reference", "%s takes a reference such as %s.NAME, not a string. Write %s.%s without quotes.", what, blockType, blockType, v.AsString())
		return "", false
	}
	if t.IsObjectType() && t.HasAttribute("kind") && t.HasAttribute("name") {
		k, n := v.GetAttr("kind"), v.GetAttr("name")
		if k.Type() == cty.String && n.Type() == cty.String && k.IsKnown() && n.IsKnown() && !k.IsNull() && !n.IsNull() {
			if k.AsString() != blockType {
				l.errorf(rng, "Wrong kind of reference", "%s needs %s (%s.NAME); this is %s, %s.%s.", what, article2(blockType), blockType, article2(k.AsString()), k.AsString(), n.AsString())
				return "", false
			}
			return n.AsString(), true
		}
	}
	if t.IsObjectType() || t.IsTupleType() {
		l.errorf(rng, "Missing instance key", "%s needs one %s, but this names all instances of a block with for_each or count. Pick one, like %s.NAME[each.key] or %s.NAME[0].", what, blockType, blockType, blockType)
		return "", false
	}
	l.errorf(rng, "Invalid reference", "%s takes a reference such as %s.NAME; got %s.", what, blockType, article(t))
	return "", false
}

func article2(blockType string) string {
	if blockType == "rxe" || blockType == "rdma" || strings.IndexByte("aeiou", blockType[0]) >= 0 { // "an rxe", "an rdma": spoken letter by letter
		return "an " + blockType
	}
	return "a " + blockType
}

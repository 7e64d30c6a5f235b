package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// replyTypes are the types a host answers with: every method's result
// type, from the method table (rpc.ResultTypes), and the two answers no
// method names: the hello and an error. (Events are not decoded by the
// controller: no engine code sets OnEvent.)
func replyTypes() map[string]reflect.Type {
	m := rpc.ResultTypes()
	m["(hello)"] = reflect.TypeFor[proto.Hello]()
	m["(error)"] = reflect.TypeFor[proto.Error]()
	return m
}

// field is one bounded field reached from a reply type, and how to build
// an answer of that type holding it at a chosen size.
type field struct {
	key  string // proto.Bounds key: Netdev.Name
	path string // JSON path from the reply: netdevs[0].name
	kind reflect.Kind
	elem bool // the case is about Bound.Elem (each string element or map key)
	// build makes a reply value whose field holds n bytes (n elements
	// for a slice's or map's length; with elem, one element or key of n
	// bytes).
	build func(n int) reflect.Value
}

// fieldsOf walks t's fields (its structs, slices, maps, pointers), calling
// fn for each field that needs a bound, with a builder of a t holding it;
// missing records a field with no declared bound.
func fieldsOf(t reflect.Type, path string, wrap func(reflect.Value) reflect.Value, seen map[string]bool, fn func(field), missing func(key, path string)) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		ft := sf.Type
		idx := i
		if sf.Anonymous {
			fieldsOf(ft, path, func(v reflect.Value) reflect.Value {
				s := reflect.New(t).Elem()
				s.Field(idx).Set(v)
				return wrap(s)
			}, seen, fn, missing)
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if path != "" {
			name = path + "." + name
		}
		key := t.Name() + "." + sf.Name
		set := func(v reflect.Value) reflect.Value {
			s := reflect.New(t).Elem()
			s.Field(idx).Set(v)
			return wrap(s)
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
			inner := set
			set = func(v reflect.Value) reflect.Value {
				p := reflect.New(v.Type())
				p.Elem().Set(v)
				return inner(p)
			}
		}
		if !proto.NeedsBound(ft) {
			if ft.Kind() == reflect.Struct {
				fieldsOf(ft, name, set, seen, fn, missing)
			}
			continue
		}
		b, ok := proto.Bounds[key]
		seen[key] = true
		if !ok || b.Max <= 0 || proto.NeedsElem(ft) && b.Elem <= 0 {
			missing(key, name)
			continue
		}
		fset := set
		switch ft.Kind() {
		case reflect.String:
			fn(field{key: key, path: name, kind: ft.Kind(), build: func(n int) reflect.Value {
				return fset(reflect.ValueOf(strings.Repeat("a", n)).Convert(ft))
			}})
		case reflect.Slice:
			et := ft.Elem()
			fn(field{key: key, path: name, kind: ft.Kind(), build: func(n int) reflect.Value {
				s := reflect.MakeSlice(ft, n, n)
				if et.Kind() == reflect.Uint8 {
					for i := range n {
						s.Index(i).SetUint('a')
					}
				}
				return fset(s)
			}})
			switch et.Kind() {
			case reflect.String:
				fn(field{key: key, path: name + "[0]", kind: ft.Kind(), elem: true, build: func(n int) reflect.Value {
					s := reflect.MakeSlice(ft, 1, 1)
					s.Index(0).SetString(strings.Repeat("a", n))
					return fset(s)
				}})
			case reflect.Struct:
				fieldsOf(et, name+"[0]", func(v reflect.Value) reflect.Value {
					s := reflect.MakeSlice(ft, 1, 1)
					s.Index(0).Set(v)
					return fset(s)
				}, seen, fn, missing)
			case reflect.Uint8:
			default:
				missing(key+" (elements of kind "+et.Kind().String()+")", name)
			}
		case reflect.Map:
			vt := ft.Elem()
			fn(field{key: key, path: name, kind: ft.Kind(), build: func(n int) reflect.Value {
				m := reflect.MakeMapWithSize(ft, n)
				for i := range n {
					m.SetMapIndex(reflect.ValueOf("k"+strconv.Itoa(i)).Convert(ft.Key()), reflect.New(vt).Elem())
				}
				return fset(m)
			}})
			fn(field{key: key, path: name + " (a key)", kind: ft.Kind(), elem: true, build: func(n int) reflect.Value {
				m := reflect.MakeMapWithSize(ft, 1)
				m.SetMapIndex(reflect.ValueOf(strings.Repeat("k", n)).Convert(ft.Key()), reflect.New(vt).Elem())
				return fset(m)
			}})
			if vt.Kind() == reflect.Struct {
				fieldsOf(vt, name+`["k"]`, func(v reflect.Value) reflect.Value {
					m := reflect.MakeMapWithSize(ft, 1)
					m.SetMapIndex(reflect.ValueOf("k").Convert(ft.Key()), v)
					return fset(m)
				}, seen, fn, missing)
			} else if proto.NeedsBound(vt) {
				missing(key+" (values)", name)
			}
		default:
			missing(key+" (kind "+ft.Kind().String()+")", name)
		}
	}
}

// TestEveryReplyFieldBounded: every string, slice and map field of every
// answer a host sends, found from the method table (rpc.ResultTypes) and
// through nested structs, slices and maps, has its bound declared in
// proto.Bounds (a []string or map also a bound on each element or key):
// a field added without one fails here (issue 24: fourteen attack rounds
// found field after field kept unbounded). No entry of Bounds names a
// field that is not there.
func TestEveryReplyFieldBounded(t *testing.T) {
	seen := map[string]bool{}
	var missing []string
	n := 0
	types := replyTypes()
	if len(types) < 20 {
		t.Fatalf("the method table gave %d reply types", len(types))
	}
	for m, rt := range types {
		fieldsOf(rt, "", func(v reflect.Value) reflect.Value { return v }, seen, func(field) { n++ }, func(key, path string) {
			missing = append(missing, fmt.Sprintf("%s (%s: %s)", key, m, path))
		})
	}
	sort.Strings(missing)
	for _, s := range missing {
		t.Errorf("no bound declared for %s: add it to proto.Bounds with the reason", s)
	}
	for key := range proto.Bounds {
		if !seen[key] {
			t.Errorf("proto.Bounds[%q] names no field of a reply", key)
		}
	}
	t.Logf("%d reply types, %d bounded fields, %d cases", len(types), len(seen), n)
}

// TestReplyBoundsAtAndOver: for every bounded field of every method's
// answer, through the client's own decode (a fake agent answering over
// the protocol, Client.Do), an answer holding the field at its bound is
// taken, and one a byte (or an element) over is refused with an error
// naming the host, the method, the field and the bound; a field marked
// Cut is taken cut to its bound instead, with a note of its length.
func TestReplyBoundsAtAndOver(t *testing.T) {
	type call struct {
		method string
		rt     reflect.Type
		f      field
	}
	var calls []call
	for m, rt := range rpc.ResultTypes() {
		fieldsOf(rt, "", func(v reflect.Value) reflect.Value { return v }, map[string]bool{}, func(f field) {
			calls = append(calls, call{m, rt, f})
		}, func(string, string) {})
	}
	sort.Slice(calls, func(i, j int) bool {
		return calls[i].method+calls[i].f.path < calls[j].method+calls[j].f.path
	})
	answers := make(chan []byte, 1)
	reqW, repR := answerEach(t, func(req proto.Request) proto.Envelope {
		return proto.Envelope{ID: req.ID, Result: <-answers}
	})
	c := rpc.New(repR, reqW, rpc.Options{Host: "h1", Timeout: 30 * time.Second})
	for _, cl := range calls {
		b := proto.Bounds[cl.f.key]
		max := b.Max
		if cl.f.elem {
			max = b.Elem
		}
		for _, over := range []bool{false, true} {
			n := max
			if over {
				n++
			}
			name := fmt.Sprintf("%s %s %d", cl.method, cl.f.path, n)
			if cl.f.elem {
				name += " (element)"
			}
			res, err := json.Marshal(cl.f.build(n).Interface())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			answers <- res
			got := reflect.New(cl.rt)
			err = c.Do(context.Background(), cl.method, nil, got.Interface())
			cut := b.Cut && (cl.f.kind == reflect.String || cl.f.elem)
			switch {
			case !over || cut:
				if err != nil {
					t.Errorf("%s: %v, want it taken", name, err)
				} else if over && !strings.Contains(string(mustJSON(t, got.Interface())), "bytes in all)") {
					t.Errorf("%s: taken whole, want it cut with a note", name)
				}
			case err == nil:
				t.Errorf("%s: taken, want refused (bound %d)", name, max)
			default:
				s := err.Error()
				for _, want := range []string{`host "h1"`, cl.method + ":", cl.f.path + ":", fmt.Sprintf("more than %d", max)} {
					if !strings.Contains(s, want) {
						t.Errorf("%s: %q does not say %q", name, s, want)
					}
				}
			}
		}
	}
	t.Logf("%d fields of %d methods' answers", len(calls), len(rpc.ResultTypes()))
	if len(calls) < 100 {
		t.Errorf("%d cases: the walk missed the reply types", len(calls))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHelloBounds: the hello's fields are held to their bounds where the
// controller reads it (rpc.ReadHello): at the bound taken, past it
// refused naming the field. (Its magic is not a bound's case: a line
// without the magic is not a hello.)
func TestHelloBounds(t *testing.T) {
	fieldsOf(reflect.TypeFor[proto.Hello](), "", func(v reflect.Value) reflect.Value { return v }, map[string]bool{}, func(f field) {
		if f.key == "Hello.Magic" {
			return
		}
		max := proto.Bounds[f.key].Max
		for _, n := range []int{max, max + 1} {
			h := f.build(n).Addr().Interface().(*proto.Hello)
			h.Magic, h.Proto = proto.Magic, proto.Version
			line := append(mustJSON(t, h), '\n')
			_, _, err := rpc.ReadHello(bufio.NewReader(strings.NewReader(string(line))), 64<<10)
			if n == max && err != nil {
				t.Errorf("%s of %d: %v, want taken", f.path, n, err)
			}
			if n > max && (err == nil || !strings.Contains(err.Error(), f.path+": ") || !strings.Contains(err.Error(), fmt.Sprint(max))) {
				t.Errorf("%s of %d: %v, want refused naming it", f.path, n, err)
			}
		}
	}, func(string, string) {})
}

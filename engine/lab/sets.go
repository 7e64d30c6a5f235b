package lab

import (
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// Sets a lab makes (toset, setunion, a variable of type set(...), a
// conditional that unifies a list with a set) and distinct() compare their
// elements. cty keeps a set's elements in buckets by a CRC-32 of their text,
// a number's text being its first 10 digits, and compares every new element
// with each one in its bucket; comparing two numbers writes both out in
// full (50 µs each, 3-5 ms near 1e-1000). So 1,000 numbers that differ only
// past their 10th digit (1 + i/1e12) took `rlab validate` 37 s to put in one
// set, 2,000 past two minutes; and distinct() compared every element with
// every other one, whatever their text. A bucket may now hold at most
// maxSetBucket different elements (setproduct's arguments none that
// collide: its tuples would multiply the buckets), checked before the set
// is made; distinct() compares by bucket too.
const maxSetBucket = 4

// SetLimitSummary is the summary of the diagnostic for such a set.
const SetLimitSummary = "Set elements too alike"

func setDetail(what string) string {
	return "More than " + strconv.Itoa(maxSetBucket) + " different values in " + what +
		" share the key a set files them under (numbers equal in their first 10 digits, or text with the same CRC-32 checksum), " +
		"and a set compares each new element with every one under its key: many such values take minutes. " +
		"Round the numbers to fewer digits, or keep them in a list."
}

// crowdedSet says whether a set made of v's elements (v a list, tuple or
// set) would file more than most different elements under one key. It
// costs one hash of each element.
func crowdedSet(v cty.Value, most int) bool {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsKnown() {
		return false
	}
	t := v.Type()
	if !(t.IsListType() || t.IsTupleType() || t.IsSetType()) {
		return false
	}
	// A tuple's elements become the set's element type first (numbers
	// among strings become strings): hash what the set would hold.
	var ut cty.Type
	if t.IsTupleType() {
		ut, _ = convert.UnifyUnsafe(t.TupleElementTypes())
	}
	buckets := map[int]map[string]bool{}
	unknown := 0
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if ut != cty.NilType {
			if c, err := convert.Convert(e, ut); err == nil {
				e = c
			}
		}
		h := e.Hash()
		b := buckets[h]
		if b == nil {
			b = map[string]bool{}
			buckets[h] = b
		}
		var key strings.Builder
		exactKey(e, &key, &unknown)
		b[key.String()] = true
		if len(b) > most {
			return true
		}
	}
	return false
}

// crowdedDeep is crowdedSet for every list, tuple or set inside v (a
// variable's value converted to a type with sets inside).
func crowdedDeep(v cty.Value) bool {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsKnown() {
		return false
	}
	t := v.Type()
	if !(t.IsListType() || t.IsTupleType() || t.IsSetType() || t.IsMapType() || t.IsObjectType()) {
		return false
	}
	if !(t.IsMapType() || t.IsObjectType()) && crowdedSet(v, maxSetBucket) {
		return true
	}
	for it := v.ElementIterator(); it.Next(); {
		if _, e := it.Element(); crowdedDeep(e) {
			return true
		}
	}
	return false
}

// exactKey writes a text that differs for any two values cty could tell
// apart (a number by its exact binary value, not its decimal text), in
// time linear in the value. Unknown values are never equal to anything.
func exactKey(v cty.Value, b *strings.Builder, unknown *int) {
	switch {
	case !v.IsKnown():
		*unknown++
		b.WriteString("?" + strconv.Itoa(*unknown))
	case v.IsNull():
		b.WriteByte('~')
	case v.Type() == cty.Number:
		b.WriteString(v.AsBigFloat().Text('p', 0))
	case v.Type() == cty.String:
		s := v.AsString()
		b.WriteString(strconv.Itoa(len(s)) + ":" + s)
	case v.Type() == cty.Bool:
		b.WriteString(strconv.FormatBool(v.True()))
	case v.CanIterateElements():
		b.WriteByte('[')
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			if !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
				exactKey(k, b, unknown)
				b.WriteByte('=')
			}
			exactKey(e, b, unknown)
			b.WriteByte(';')
		}
		b.WriteByte(']')
	default:
		*unknown++ // capsules and the like: assume different
		b.WriteString("!" + strconv.Itoa(*unknown))
	}
}

// setMakers are the functions that put their arguments' elements into a
// set (or compare them as one), and how many different elements one key
// may hold for each.
var setMakers = map[string]int{
	"toset": maxSetBucket, "distinct": maxSetBucket, "setunion": maxSetBucket,
	"setintersection": maxSetBucket, "setsubtract": maxSetBucket, "setproduct": 1,
}

// setParam says whether f's i-th argument is converted to a set before the
// call (setunion's lists): checked in the argument, before HCL converts it.
func setParam(f function.Function, i int) bool {
	ps := f.Params()
	if i < len(ps) {
		return ps[i].Type.IsSetType()
	}
	vp := f.VarParam()
	return vp != nil && vp.Type.IsSetType()
}

// chargeSet refuses v when a set of it would be crowded: the budget's
// overrun, so evaluation winds down the same way.
func (b *budget) chargeSet(what string, at *hcl.Range, v cty.Value, most int) error {
	if b.spent != nil {
		return errSpent
	}
	if !crowdedSet(v, most) {
		return nil
	}
	b.spent = &limitError{what: what, measure: "set", limit: int64(most), at: at}
	return b.spent
}

// distinctFunc is stdlib's distinct with its elements filed by cty's set
// hash: stdlib compares every element with every kept one (quadratic in
// the list, and a comparison of two numbers costs microseconds).
var distinctFunc = function.New(&function.Spec{
	Description: `Removes any duplicate values from the given list, preserving the order of remaining elements.`,
	Params:      []function.Parameter{{Name: "list", Type: cty.List(cty.DynamicPseudoType)}},
	Type: func(args []cty.Value) (cty.Type, error) {
		return args[0].Type(), nil
	},
	RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder { return b.NotNull() },
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		listVal := args[0]
		if !listVal.IsWhollyKnown() {
			return cty.UnknownVal(retType), nil
		}
		var list []cty.Value
		kept := map[int][]cty.Value{}
		for it := listVal.ElementIterator(); it.Next(); {
			_, v := it.Element()
			u, _ := v.UnmarkDeep()
			h := u.Hash()
			dup := false
			for _, e := range kept[h] {
				if eq, _ := e.Equals(u).Unmark(); eq.IsKnown() && eq.True() {
					dup = true
					break
				}
			}
			if !dup {
				kept[h] = append(kept[h], u)
				list = append(list, v)
			}
		}
		if len(list) == 0 {
			return cty.ListValEmpty(retType.ElementType()), nil
		}
		return cty.ListVal(list), nil
	},
})

// typeHasSet says whether t has a set anywhere inside.
func typeHasSet(t cty.Type) bool {
	switch {
	case t.IsSetType():
		return true
	case t.IsListType() || t.IsMapType():
		return typeHasSet(t.ElementType())
	case t.IsTupleType():
		for _, et := range t.TupleElementTypes() {
			if typeHasSet(et) {
				return true
			}
		}
	case t.IsObjectType():
		for _, at := range t.AttributeTypes() {
			if typeHasSet(at) {
				return true
			}
		}
	}
	return false
}

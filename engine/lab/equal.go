package lab

import (
	"errors"
	"math/big"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// slowCompareSteps is what the budget charges a comparison of two numbers
// that only cty can decide (numbersEqual): each writes both numbers out in
// full, 50-150 µs, so 300,000 steps allow about 3,000 of them.
const slowCompareSteps = 100

// comparisons counts, for all Loads, the pairs of known numbers equal
// compared and those of them it left to cty (the slow way, charged):
// tests count the work, not the time it takes on a busy machine.
var comparisons struct{ numbers, byCty atomic.Int64 }

// numbersEqual decides x == y as cty does (two numbers are equal when
// their shortest decimal texts are, -0 being 0) without writing them out:
// cty does that for every pair that is not whole, 50-150 µs each, and a
// lab's contains() or == over fractions in a for took 42 s within the
// budget. slow says it could not decide and cty must.
func numbersEqual(x, y *big.Float) (eq, slow bool) {
	switch {
	case x.Sign() != y.Sign():
		return false, false
	case x.Sign() == 0:
		return true, false
	case x.IsInf() || y.IsInf():
		return x.IsInf() && y.IsInf(), false
	case x.IsInt() != y.IsInt():
		return false, false // cty: only one is whole
	case x.IsInt():
		return x.Cmp(y) == 0, false // cty compares whole numbers as integers
	case x.Prec() == y.Prec() && (x.Cmp(y) == 0 || x.MinPrec() > 1 && y.MinPrec() > 1):
		// A shortest decimal text names one value at a precision: two
		// values of one precision write out alike only when they are
		// equal. Save a power of two (MinPrec 1): big.Float gives it a
		// window of half a unit below as above, though the number below
		// is only half as far, so its text can be its lower neighbour's
		// (pow(2, -24) and the 53-bit number under it both write out
		// 0.00000005960464477539062, and cty calls them equal). Those go
		// by distance below, like two precisions.
		return x.Cmp(y) == 0, false
	}
	// Precisions differ: each text lies within half a unit in the last
	// place of its own value, so texts that agree mean values within one
	// unit at the smaller precision and the larger exponent. Farther
	// apart, they differ; nearer, cty decides.
	p := min(x.Prec(), y.Prec())
	e := max(x.MantExp(nil), y.MantExp(nil))
	d := new(big.Float).SetPrec(64).Sub(x, y)
	if d.Sign() != 0 && int64(d.MantExp(nil))-2 >= int64(e)-int64(p) {
		return false, false
	}
	return false, true
}

// equal is cty's Value.Equals, deciding numbers with numbersEqual; a pair
// only cty can decide is charged slowCompareSteps, at.
func (b *budget) equal(x, y cty.Value, at *hcl.Range) (cty.Value, error) {
	eq, ok, err := b.knownEqual(x, y, at)
	if err != nil || !ok {
		return x.Equals(y), err
	}
	return cty.BoolVal(eq), nil
}

// knownEqual decides x == y for values that are known, unmarked, not null
// and of one type, all the way down; ok false leaves the pair to cty.
func (b *budget) knownEqual(x, y cty.Value, at *hcl.Range) (eq, ok bool, err error) {
	if x.IsMarked() || y.IsMarked() || !x.IsKnown() || !y.IsKnown() || x.IsNull() || y.IsNull() {
		return false, false, nil
	}
	ty := x.Type()
	if !ty.Equals(y.Type()) || !x.HasWhollyKnownType() || !y.HasWhollyKnownType() {
		return false, false, nil
	}
	switch {
	case ty == cty.Number:
		comparisons.numbers.Add(1)
		xf, yf := x.AsBigFloat(), y.AsBigFloat()
		eq, slow := numbersEqual(xf, yf)
		if !slow {
			return eq, true, nil
		}
		comparisons.byCty.Add(1)
		if b != nil {
			if err := b.charge("a comparison of two numbers", at, slowCompareSteps, 0); err != nil {
				return false, false, err
			}
		}
		return x.Equals(y).True(), true, nil
	case ty.IsListType() || ty.IsTupleType() || ty.IsObjectType() || ty.IsMapType():
		if x.LengthInt() != y.LengthInt() {
			return false, true, nil
		}
		xi, yi := x.ElementIterator(), y.ElementIterator()
		for xi.Next() && yi.Next() {
			xk, xv := xi.Element()
			yk, yv := yi.Element()
			if ty.IsMapType() && xk.AsString() != yk.AsString() {
				return false, true, nil
			}
			eq, ok, err := b.knownEqual(xv, yv, at)
			if err != nil || !ok {
				return false, false, err
			}
			if !eq {
				return false, true, nil
			}
		}
		return true, true, nil
	}
	// Strings, bools, sets (bounded by sets.go): cty is quick.
	r := x.Equals(y)
	if r.IsMarked() || !r.IsKnown() {
		return false, false, nil
	}
	return r.True(), true, nil
}

// equalOp is the == or != (orig) of one comparison at rng, through equal.
func (b *budget) equalOp(orig *hclsyntax.Operation, rng hcl.Range) *hclsyntax.Operation {
	not := orig == hclsyntax.OpNotEqual
	params := orig.Impl.Params()
	op := &hclsyntax.Operation{Type: cty.Bool, Impl: function.New(&function.Spec{
		Description:  orig.Impl.Description(),
		Params:       params,
		Type:         function.StaticReturnType(cty.Bool),
		RefineResult: func(r *cty.RefinementBuilder) *cty.RefinementBuilder { return r.NotNull() },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if b.spent != nil {
				return cty.UnknownVal(cty.Bool), nil
			}
			v, err := b.equal(args[0], args[1], &rng)
			if err != nil {
				return cty.UnknownVal(cty.Bool), nil // reportBudget says where
			}
			if not {
				v = v.Not()
			}
			return v, nil
		},
	})}
	if b.ops == nil {
		b.ops = map[*hclsyntax.Operation]*hclsyntax.Operation{}
	}
	b.ops[op] = orig
	return op
}

// op is hclsyntax's operation for op (equalOp's are its own).
func (b *budget) op(op *hclsyntax.Operation) *hclsyntax.Operation {
	if orig, ok := b.ops[op]; ok {
		return orig
	}
	return op
}

// containsFunc is stdlib's contains (f) comparing through equal.
func (b *budget) containsFunc(f function.Function) function.Function {
	return function.New(&function.Spec{
		Description:  f.Description(),
		Params:       f.Params(),
		Type:         function.StaticReturnType(cty.Bool),
		RefineResult: func(r *cty.RefinementBuilder) *cty.RefinementBuilder { return r.NotNull() },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			ty := args[0].Type()
			if !ty.IsListType() && !ty.IsTupleType() && !ty.IsSetType() {
				return cty.NilVal, errors.New("argument must be list, tuple, or set")
			}
			if args[0].IsNull() {
				return cty.NilVal, errors.New("cannot search a nil list or set")
			}
			if args[0].LengthInt() == 0 {
				return cty.False, nil
			}
			if !args[0].IsKnown() || !args[1].IsKnown() {
				return cty.UnknownVal(cty.Bool), nil
			}
			unknown := false
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				eq, err := b.equal(args[1], v, nil)
				if err != nil {
					return cty.UnknownVal(cty.Bool), err
				}
				if !eq.IsKnown() {
					unknown = true // a later element may still match
					continue
				}
				if eq.True() {
					return cty.True, nil
				}
			}
			if unknown {
				return cty.UnknownVal(cty.Bool), nil
			}
			return cty.False, nil
		},
	})
}

package lab

import (
	"math/big"

	"github.com/zclconf/go-cty/cty"
)

// Bounds on a lab's numbers. cty keeps a number as a 512-bit mantissa and
// a binary exponent, so 1e300000000 is 13 bytes of lab and cheap to hold;
// but written out as text (a string template, a string attribute, join(),
// jsonencode()) it is 300 million digits, which held `rlab validate` for
// hours (1e10000000: 71 s); and text of many digits is read as a number in
// time quadratic in its length (a lab of one 3 MB literal: 65 s). A lab's
// numbers are sizes, counts, rates and fractions, far inside both.
const (
	// MaxNumberExp2 bounds a number's binary exponent upward: about
	// 1e1000 (MinNumberExp2 downward). A product or quotient of two such numbers (which is not
	// checked again until it is used) still prints in microseconds.
	MaxNumberExp2 = 3322
	// MinNumberExp2 bounds how small a number other than zero may be:
	// about 1e-30. cty compares two numbers that are not whole by
	// writing both out in full, which near 1e-1000 takes 3-5 ms (50 µs
	// near 1): 50,000 comparisons of 1.5e-999, a 119-byte lab within the
	// evaluation budget, held rlab validate 190 s.
	MinNumberExp2 = -100
	// MaxNumberDigits bounds a run of digits read as a number (a literal,
	// a string converted to a number, text jsondecode or yamldecode reads).
	MaxNumberDigits = 1000
)

// NumberLimitSummary is the summary of the diagnostic for a number past
// MaxNumberExp2 or MaxNumberDigits.
const NumberLimitSummary = "Number too large"

func numberDetail(what string) string {
	return "A lab's numbers must lie within about 1e-30 and 1e1000 in magnitude (or be 0), and be written with at most 1000 digits; " + what +
		" does not. Written out as text such a number is as long as its exponent (1e300000000 is 300 million digits), and reading many digits takes time that grows with their square. " +
		"Use a number of the size the lab means."
}

// hugeFloat says whether f is past MaxNumberExp2 or below MinNumberExp2
// (zero and the infinities print short and are not).
func hugeFloat(f *big.Float) bool {
	if f == nil || f.Sign() == 0 || f.IsInf() {
		return false
	}
	e := f.MantExp(nil)
	return e > MaxNumberExp2 || e < MinNumberExp2
}

// hugeNumber says whether v is a known number past MaxNumberExp2.
func hugeNumber(v cty.Value) bool {
	v, _ = v.Unmark()
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return false
	}
	return hugeFloat(v.AsBigFloat())
}

// longDigits says whether s holds a run of more than MaxNumberDigits
// digits.
func longDigits(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			if run++; run > MaxNumberDigits {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// hugeText says whether s, read as a number (by arithmetic, a number
// parameter, tonumber, format's %d, jsondecode), would be too long to read
// or too large to write back: a digit run past MaxNumberDigits anywhere,
// or a number past MaxNumberExp2 as a whole.
func hugeText(s string) bool {
	if longDigits(s) {
		return true
	}
	if len(s) > 4*MaxNumberDigits {
		return false
	}
	n, err := cty.ParseNumberVal(s)
	return err == nil && hugeNumber(n)
}

// hugeValue says whether v holds, within limit values, a number past
// MaxNumberExp2, or (with text) a string hugeText refuses.
func hugeValue(v cty.Value, text bool, limit int64) bool {
	var seen int64
	var walk func(v cty.Value) bool
	walk = func(v cty.Value) bool {
		if seen++; seen > limit {
			return false
		}
		v, _ = v.Unmark()
		if v.IsNull() || !v.IsKnown() {
			return false
		}
		t := v.Type()
		switch {
		case t == cty.Number:
			return hugeFloat(v.AsBigFloat())
		case t == cty.String:
			return text && hugeText(v.AsString())
		case t.IsListType(), t.IsSetType(), t.IsTupleType(), t.IsMapType(), t.IsObjectType():
			for it := v.ElementIterator(); it.Next(); {
				if _, e := it.Element(); walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// jsonLongDigits says whether JSON text holds a run of more than
// MaxNumberDigits digits (in a number, or in a string: a -var-file is not
// expected to hold either).
func jsonLongDigits(src []byte) bool { return longDigits(string(src)) }

package lab

import (
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestFractionComparisonsCheap: comparing fractions (numbers that are not
// whole) is what labs do in loops, within the evaluation budget; cty
// compares two of them by writing both out in full (50-150 µs each), so
// contains() over fractions in a for reached 42 s before the evaluation
// guard. Each lab here loads, or is refused by the budget, with its
// comparisons decided by numbersEqual, none by cty: the work is counted
// (comparisons), not timed. Comparisons that bypass equal (hcl's own ==,
// stdlib's contains) count none; a pair only cty decides is charged, so at
// most the budget's worth of them run.
func TestFractionComparisonsCheap(t *testing.T) {
	noCty := int64(0)
	charged := int64(MaxEvalOps/slowCompareSteps + 1)
	for _, c := range []struct {
		name, lab, want string
		byCty           int64 // pairs left to cty, at most
	}{
		{name: "contains", byCty: noCty, lab: "locals {\n  xs = [for i in range(540) : i / 7 + 1 / 3]\n  n  = length([for j in range(540) : j if contains(local.xs, j / 7 + 1 / 3 + 1e-9)])\n}\n"},
		{name: "equal", byCty: noCty, lab: "locals {\n  t  = 1 / 3\n  xs = [for a in range(90) : length([for b in range(1000) : b if b / 7 == local.t])]\n}\n"},
		{name: "not equal", byCty: noCty, lab: "locals {\n  t  = 1 / 3\n  xs = [for a in range(90) : length([for b in range(1000) : b if b / 7 != local.t])]\n}\n"},
		{name: "lists", byCty: noCty, lab: "locals {\n  xs = [for i in range(540) : i / 7 + 1 / 3]\n  ys = [for i in range(540) : i / 7 + 1 / 3]\n  n  = length([for j in range(400) : j if local.xs == local.ys])\n}\n"},
		// 53-bit (pow) beside 512-bit (a quotient): near-equal, so
		// decided the slow way, and charged for it.
		{name: "mixed precision", byCty: charged, lab: "locals {\n  t  = pow(10, -1)\n  xs = [for a in range(280) : length([for b in range(1000) : b if 1 / 10 == local.t])]\n}\n", want: EvalLimitSummary},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "lab.hcl")
			must(t, os.WriteFile(p, []byte("lab \"x\" {}\nhost \"a\" {\n  address = \"192.0.2.1\"\n}\n"+c.lab), 0o644))
			n0, c0 := comparisons.numbers.Load(), comparisons.byCty.Load()
			_, diags := Load([]string{p}, LoadOptions{})
			n, byCty := comparisons.numbers.Load()-n0, comparisons.byCty.Load()-c0
			// Each lab compares thousands of pairs before it ends
			// or the budget stops it.
			if n < 2000 {
				t.Errorf("equal compared %d pairs of numbers, want thousands: the lab's comparisons went around it", n)
			}
			if byCty > c.byCty {
				t.Errorf("%d of %d pairs were left to cty, want at most %d", byCty, n, c.byCty)
			}
			got := diagLines(diags)
			// Loaded, or stopped by the budget (the loops are near it).
			if c.want == "" && diags.HasErrors() && !strings.Contains(got, EvalLimitSummary) {
				t.Errorf("refused:\n%s", got)
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("not refused as %q:\n%s", c.want, got)
			}
		})
	}
}

// TestNumbersEqualAsCty: the fast comparison gives cty's answer (two
// numbers are equal when cty would write them out alike) for numbers of
// the same and of different precisions.
func TestNumbersEqualAsCty(t *testing.T) {
	p := func(s string, prec uint) *big.Float {
		f, _, err := big.ParseFloat(s, 10, prec, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f64 := func(x float64) *big.Float { return new(big.Float).SetFloat64(x) }
	nums := []*big.Float{
		p("0", 512), new(big.Float).Neg(p("0", 512)), p("1", 512), p("1", 53), p("-1", 64),
		p("0.1", 512), p("0.1", 53), f64(0.1), p("0.1000000000000000055511151231257827021181583404541015625", 512),
		p("0.3333333333333333333333333333333333333", 512), p("0.3333333333333333", 53), f64(1.0 / 3),
		p("2.5", 512), p("2.5", 53), p("-2.5", 512), p("1e300", 512), p("1e300", 53), p("1.5e-20", 512), p("1.5e-20", 53),
		f64(math.Inf(1)), f64(math.Inf(-1)), p("12345678901234567890.5", 512), p("12345678901234567890.5", 64),
		p("7", 512), p("7.000000000000000000000000000000000000001", 512), p("7.000000000000000000000000000000000000001", 53),
	}
	for i, x := range nums {
		for j, y := range nums {
			want := cty.NumberVal(x).Equals(cty.NumberVal(y)).True()
			got, slow := numbersEqual(x, y)
			if slow {
				continue
			}
			if got != want {
				t.Errorf("%d %s (prec %d) == %d %s (prec %d): got %v, cty says %v", i, x.Text('g', 40), x.Prec(), j, y.Text('g', 40), y.Prec(), got, want)
			}
		}
	}
	// And values: lists, objects, nulls and unknowns as cty.Equals has them.
	frac := cty.NumberVal(p("0.1", 512))
	vals := []cty.Value{
		frac, cty.NumberVal(p("0.1", 53)), cty.StringVal("a"), cty.NullVal(cty.Number), cty.UnknownVal(cty.Number),
		cty.ListVal([]cty.Value{frac, frac}), cty.ListVal([]cty.Value{frac, cty.NumberIntVal(1)}), cty.ListValEmpty(cty.Number),
		cty.TupleVal([]cty.Value{frac, cty.StringVal("x")}), cty.ObjectVal(map[string]cty.Value{"a": frac, "b": cty.True}),
		cty.ObjectVal(map[string]cty.Value{"a": frac, "b": cty.False}), cty.MapVal(map[string]cty.Value{"a": frac}),
		cty.MapVal(map[string]cty.Value{"b": frac}), cty.SetVal([]cty.Value{frac}), cty.ListVal([]cty.Value{cty.UnknownVal(cty.Number)}),
		frac.Mark("sensitive"), cty.DynamicVal,
	}
	var b budget
	for i, x := range vals {
		for j, y := range vals {
			want := x.Equals(y)
			got, err := b.equal(x, y, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !got.RawEquals(want) {
				t.Errorf("%d %#v == %d %#v: got %#v, cty says %#v", i, x, j, y, got, want)
			}
		}
	}
}

// TestPowerOfTwoBesideItsPredecessorAsCty: big.Float writes a power of two
// out with a window reaching down to the number below it, so cty calls
// pow(2, -24) and the 53-bit number just under it equal (their shortest
// texts are both 0.00000005960464477539062); the fast comparison said they
// differ, being of one precision. Every == and != in a lab, and
// contains(), answer as cty.
func TestPowerOfTwoBesideItsPredecessorAsCty(t *testing.T) {
	// Each is 2^k beside 2^k minus half its unit in the last place, at
	// 53 bits (pow) and at 64.
	for _, c := range []struct {
		prec uint
		k    int
	}{{53, -24}, {53, -25}, {53, -44}, {64, -37}, {53, -1}, {53, 3}} {
		x := new(big.Float).SetPrec(c.prec).SetMantExp(big.NewFloat(0.5), c.k+1)
		y := new(big.Float).SetPrec(c.prec).Sub(x, new(big.Float).SetMantExp(big.NewFloat(0.5), c.k-int(c.prec)+1))
		for _, pair := range [][2]*big.Float{{x, y}, {y, x}} {
			want := cty.NumberVal(pair[0]).Equals(cty.NumberVal(pair[1])).True()
			if got, slow := numbersEqual(pair[0], pair[1]); !slow && got != want {
				t.Errorf("2^%d at %d bits: %s == %s: got %v, cty says %v", c.k, c.prec, pair[0].Text('g', 30), pair[1].Text('g', 30), got, want)
			}
		}
	}
	for _, c := range []struct{ expr, want string }{
		{`pow(2, -24) == pow(2, -24) - pow(2, -77)`, "192.0.2.1"},
		{`pow(2, -24) != pow(2, -24) - pow(2, -77)`, "192.0.2.2"},
		{`contains([pow(2, -24) - pow(2, -77)], pow(2, -24))`, "192.0.2.1"},
	} {
		src := "lab \"x\" {}\nhost \"a\" {\n  address = " + c.expr + " ? \"192.0.2.1\" : \"192.0.2.2\"\n}\n"
		l, diags := LoadSource("lab.hcl", []byte(src), t.TempDir(), LoadOptions{})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", c.expr, diagLines(diags))
		}
		if got := l.Hosts[0].Address; got != c.want {
			t.Errorf("%s: address %s, want %s (cty's answer)", c.expr, got, c.want)
		}
	}
}

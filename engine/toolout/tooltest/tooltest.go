// Package tooltest holds what the tests of every family's output parser
// share (as net/http/httptest does for handlers): the property a parse must
// have (CheckParse, CheckSamples) and seeding a fuzz target from the real
// outputs under testdata/toolout (Seed). Only tests import it.
//
// It imports engine/results and the standard library only (not
// engine/toolout, whose own tests use it too).
package tooltest

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/results"
)

// Fixtures is the folder of real tool outputs, from a package two levels
// below the repository (engine/toolout, kinds/<family>).
const Fixtures = "../../testdata/toolout"

// Seed adds the fixtures whose base name match accepts: the composed and
// recorded ones and the outputs collected from the world (world/, whose
// .expect sidecars are not tool output).
func Seed(f *testing.F, match func(name string) bool) {
	f.Helper()
	n := 0
	for _, sub := range []string{"", "recorded", "world"} {
		ents, err := os.ReadDir(filepath.Join(Fixtures, sub))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasSuffix(e.Name(), ".expect") || !match(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(Fixtures, sub, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			n++
		}
	}
	if n == 0 {
		f.Fatal("no fixture matched: nothing to seed the fuzz target with")
	}
}

// CheckParse calls parse (one tool output read by toolout.Parse) twice and
// fails t unless the parse holds its properties: the same reading every time (maps are ranged in a
// random order: perftest's JSON keys spelled twice in two cases), no
// samples with an error but a *toolout.PartialError (whose samples are all
// marked partial), some samples without one, and every sample good
// (CheckSamples).
func CheckParse[Info any](t *testing.T, parse func() ([]results.Sample, Info, error)) {
	t.Helper()
	ss, info, err := parse()
	ss2, info2, err2 := parse()
	if d := cmp.Diff(ss, ss2); d != "" || (err == nil) != (err2 == nil) || !reflect.DeepEqual(info, info2) {
		t.Fatalf("two readings differ: samples (-first +second):\n%s\ninfo %+v\n%+v\nerr %v / %v", d, info, info2, err, err2)
	}
	if err != nil {
		var partial interface{ PartialRows() int } // *toolout.PartialError, which this package cannot import
		if ss != nil && !errors.As(err, &partial) {
			t.Fatalf("samples with error %v", err)
		}
		for _, s := range ss {
			if s.Meta.Extra["partial"] != "true" {
				t.Fatalf("a sample of a partial run is not marked partial: %+v", s)
			}
		}
		if ss != nil {
			CheckSamples(t, ss)
		}
		return
	}
	if len(ss) == 0 {
		t.Fatal("no error and no samples")
	}
	CheckSamples(t, ss)
}

// CheckSamples holds for every successful parse: metrics from the table,
// units set and matching it, values finite and non-negative.
func CheckSamples(t testing.TB, ss []results.Sample) {
	t.Helper()
	for _, s := range ss {
		m, ok := results.MetricByName(s.Metric)
		if !ok {
			t.Errorf("sample metric %q not in results.Metrics()", s.Metric)
			continue
		}
		if s.Unit == "" || s.Unit != m.Unit {
			t.Errorf("sample %s unit %q, want %q", s.Metric, s.Unit, m.Unit)
		}
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) || s.Value < 0 {
			t.Errorf("sample %s value %v", s.Metric, s.Value)
		}
	}
}

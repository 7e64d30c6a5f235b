package toolout

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seed adds the fixtures whose base name match accepts: the composed and
// recorded ones and the outputs collected from the world (world/, whose
// .expect sidecars are not tool output).
func seed(f *testing.F, match func(name string) bool) {
	for _, sub := range []string{"", "recorded", "world"} {
		ents, err := os.ReadDir(filepath.Join(fixtures, sub))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasSuffix(e.Name(), ".expect") || !match(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(fixtures, sub, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

func fuzzParse(t *testing.T, tool string, in []byte, opts Options) {
	ss, info, err := Parse(tool, in, opts)
	// The same output reads the same every time (maps are ranged in a
	// random order: perftest's JSON keys spelled twice in two cases).
	ss2, info2, err2 := Parse(tool, in, opts)
	if d := cmp.Diff(ss, ss2); d != "" || (err == nil) != (err2 == nil) || !reflect.DeepEqual(info, info2) {
		t.Fatalf("two readings differ: samples (-first +second):\n%s\ninfo %+v\n%+v\nerr %v / %v", d, info, info2, err, err2)
	}
	if err != nil {
		if ss != nil {
			t.Fatalf("samples with error %v", err)
		}
		return
	}
	if len(ss) == 0 {
		t.Fatal("no error and no samples")
	}
	checkSamples(t, ss)
}

func FuzzPerftestText(f *testing.F) {
	seed(f, func(n string) bool {
		return strings.HasPrefix(strings.TrimPrefix(n, "mtu9000-"), "ib_") && strings.HasSuffix(n, ".txt")
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzParse(t, "ib_write_bw", in, Options{})
		fuzzParse(t, "ib_send_lat", in, Options{})
	})
}

func FuzzPerftestJSON(f *testing.F) {
	seed(f, func(n string) bool { return strings.HasSuffix(n, ".json") })
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzParse(t, "ib_write_bw", in, Options{JSON: true, ReportGbits: true})
		fuzzParse(t, "ib_read_lat", in, Options{JSON: true})
	})
}

func FuzzPingpong(f *testing.F) {
	seed(f, func(n string) bool { return strings.HasPrefix(n, "ibv_") })
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzParse(t, "ibv_rc_pingpong", in, Options{})
	})
}

func FuzzRping(f *testing.F) {
	seed(f, func(n string) bool { return strings.HasPrefix(n, "rping") })
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzParse(t, "rping", in, Options{})
		fuzzParse(t, "rping", nil, Options{Stderr: in})
	})
}

// TestPerftestJSONKeysTwice: a key spelled twice in two cases (the reader
// is case-blind) gives one figure, the same on every reading: the sorted
// last spelling's (found by FuzzPerftestJSON's determinism check).
func TestPerftestJSONKeysTwice(t *testing.T) {
	in := []byte(`{"test_info":{"MTU":"1024","mtu":"4096"},"results":{"MsgSize":65536,"msgsize":4096,"BW_average":1,"bw_average":2}}`)
	for range 20 {
		ss, info, err := Parse("ib_write_bw", in, Options{JSON: true, ReportGbits: true})
		if err != nil || info.MTU != 4096 || len(ss) != 1 || ss[0].Metric != "bw_avg" || ss[0].Value != 2 || ss[0].Meta.Size != 4096 {
			t.Fatalf("got %+v, MTU %d, %v; want one bw_avg of 2 at size 4096, MTU 4096", ss, info.MTU, err)
		}
	}
}

package toolout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	ss, _, err := Parse(tool, in, opts)
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

package perftest

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/engine/toolout/tooltest"
)

func FuzzPerftestText(f *testing.F) {
	tooltest.Seed(f, func(n string) bool {
		return strings.HasPrefix(strings.TrimPrefix(n, "mtu9000-"), "ib_") && strings.HasSuffix(n, ".txt")
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) {
			return toolout.Parse("ib_write_bw", in, toolout.Options{})
		})
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) {
			return toolout.Parse("ib_send_lat", in, toolout.Options{})
		})
	})
}

func FuzzPerftestJSON(f *testing.F) {
	tooltest.Seed(f, func(n string) bool { return strings.HasSuffix(n, ".json") })
	f.Fuzz(func(t *testing.T, in []byte) {
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) {
			return toolout.Parse("ib_write_bw", in, toolout.Options{JSON: true, ReportGbits: true})
		})
		tooltest.CheckParse(t, func() ([]results.Sample, toolout.Info, error) {
			return toolout.Parse("ib_read_lat", in, toolout.Options{JSON: true})
		})
	})
}

// TestPerftestJSONKeysTwice: a key spelled twice in two cases (the reader
// is case-blind) gives one figure, the same on every reading: the sorted
// last spelling's (found by FuzzPerftestJSON's determinism check).
func TestPerftestJSONKeysTwice(t *testing.T) {
	in := []byte(`{"test_info":{"MTU":"1024","mtu":"4096"},"results":{"MsgSize":65536,"msgsize":4096,"BW_average":1,"bw_average":2}}`)
	for range 20 {
		ss, info, err := toolout.Parse("ib_write_bw", in, toolout.Options{JSON: true, ReportGbits: true})
		if err != nil || info.MTU != 4096 || len(ss) != 1 || ss[0].Metric != "bw_avg" || ss[0].Value != 2 || ss[0].Meta.Size != 4096 {
			t.Fatalf("got %+v, MTU %d, %v; want one bw_avg of 2 at size 4096, MTU 4096", ss, info.MTU, err)
		}
	}
}

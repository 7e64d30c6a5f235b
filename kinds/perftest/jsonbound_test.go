package perftest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/toolout"
)

// TestPerftestJSONBounded: an --out_json file is the host's and is read
// into maps: a file of proto.OutputLimit bytes of members or empty objects
// is refused before it is built (1 MiB of "k":0 in test_info took 50 MB),
// strict or in the pre-2024 dialect, and a real-sized file still parses.
func TestPerftestJSONBounded(t *testing.T) {
	fill := func(quote string, elem func(i int) string) string {
		var sb strings.Builder
		for i := 0; sb.Len() < proto.OutputLimit-200; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strings.ReplaceAll(elem(i), `"`, quote))
		}
		return sb.String()
	}
	members := func(i int) string { return fmt.Sprintf(`"%x":0`, i) }
	results := `"results":{"MsgSize":65536,"BW_average":1}`
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"members", `{"test_info":{` + fill(`"`, members) + `},` + results + `}`, false},
		{"members, pre-2024 dialect", `{test_info:{` + fill(``, members) + `,},` + strings.ReplaceAll(results, `"`, ``) + `,}`, false},
		{"empty objects", `{"test_info":{},"results":[` + fill(`"`, func(int) string { return `{}` }) + `]}`, false},
		{"real size", `{"test_info":{` + strings.Join(strings.Split(strings.Repeat(`"x":"y",`, 100), ",")[:100], ",") + `},` + results + `}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.doc)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			rows, _, err := parsePerftestJSON(b, false)
			runtime.ReadMemStats(&m1)
			a := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%d bytes in, %d bytes allocated (%.1fx): %v", len(tc.doc), a, float64(a)/float64(len(tc.doc)), err)
			if tc.ok {
				if err != nil || len(rows) != 1 {
					t.Fatalf("%d rows, %v; want one", len(rows), err)
				}
				return
			}
			if !errors.Is(err, toolout.ErrUnusableJSON) || !strings.Contains(err.Error(), "more than") {
				t.Fatalf("%v, want refused as unusable JSON", err)
			}
			if a > 64<<10 {
				t.Errorf("refusing %d bytes allocated %d", len(tc.doc), a)
			}
		})
	}
}

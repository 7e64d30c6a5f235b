package runstate

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStateDecodeBounded: a received state.json is decoded only within
// bounds (issue 24 attack round: 9 MB of empty hosts, "{}", took rlab down
// to 2.4 GB and 21 s, and it wrote them back as 258 MB): past
// MaxObjects it is refused by name within a few times the file; a
// state at the bound's size in values but few objects is read.
func TestStateDecodeBounded(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		refused   bool
	}{
		{"empty hosts", `{"lab":"x","hosts":[` + strings.TrimSuffix(strings.Repeat("{},", MaxObjects+1), ",") + `]}`, true},
		{"empty effects", `{"lab":"x","effects":[` + strings.TrimSuffix(strings.Repeat("{},", MaxObjects+1), ",") + `]}`, true},
		{"provision package names", `{"lab":"x","hosts":[{"name":"h","provision":{"for":{` + forNames(MaxObjects+1) + `}}}]}`, true},
		{"provision package names in two hosts", `{"lab":"x","hosts":[{"name":"h","provision":{"for":{` + forNames(MaxObjects/2+1) + `}}},{"name":"i","provision":{"FOR":{` + forNames(MaxObjects/2+1) + `}}}]}`, true},
		{"long argv", `{"lab":"x","effects":[{"host":"a","kind":"proc","id":"p","argv":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 1_000_000), ",") + `]}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, File), []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			_, err := Open(dir)
			runtime.ReadMemStats(&m1)
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "refusing to decode") {
				t.Fatalf("%d bytes (%s): %v, want refused", len(tc.doc), tc.name, err)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > 4*uint64(len(tc.doc))+(16<<20) {
				t.Errorf("refusing %d bytes allocated %d MiB", len(tc.doc), a>>20)
			}
		})
	}
}

// forNames is n members "<hex>":null of a provision record's for map.
func forNames(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"%x":null`, i)
	}
	return sb.String()
}

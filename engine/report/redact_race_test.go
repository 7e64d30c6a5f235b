package report

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRedactorConcurrent: the captures are read on every core, and each
// one's section asks for the report's redactor, which is made once and
// kept (builder.redact). In a run directory without its lab (nothing
// asked for it before the captures) the first calls came from those
// goroutines together: a data race on the kept redactor (go test -race).
// It is made before they start.
func TestRedactorConcurrent(t *testing.T) {
	dir := copyDir(t, fixture)
	if err := os.RemoveAll(filepath.Join(dir, "lab")); err != nil {
		t.Fatal(err)
	}
	pcap, err := os.ReadFile(filepath.Join(dir, "hosts/server/captures/cap.roce.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if err := os.WriteFile(filepath.Join(dir, "hosts/server/captures/"+n+".roce.pcap"), pcap, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Captures) < 2 {
		t.Fatalf("%d captures read, want several at once", len(d.Captures))
	}
}

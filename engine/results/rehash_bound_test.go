package results

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRehashManifestBounded: rlab report of a received run directory
// rehashes its manifest.json, which its complete.json names: a manifest of
// more than MaxManifestEntries empty entries (12 MB) is refused before it
// is built (it was decoded whole: 256 MiB of "{}," some 8 GB), and the
// manifest is left as it was.
func TestRehashManifestBounded(t *testing.T) {
	dir := t.TempDir()
	manifest := []byte("[" + strings.TrimSuffix(strings.Repeat("{},", MaxManifestEntries+1), ",") + "]")
	sum := sha256.Sum256(manifest)
	for name, b := range map[string][]byte{
		ManifestFile:  manifest,
		CompleteFile:  []byte(`{"manifest_sha256":"` + hex.EncodeToString(sum[:]) + `"}`),
		"report.html": []byte("<html></html>"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := Rehash(dir, "report.html")
	runtime.ReadMemStats(&m1)
	a := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("%d bytes, %d allocated: %v", len(manifest), a, err)
	if err == nil || !strings.Contains(err.Error(), "refusing to decode") {
		t.Fatalf("%v, want the manifest refused", err)
	}
	// Read twice (CheckComplete, Rehash) and scanned; nothing built.
	if a > 4*uint64(len(manifest))+(16<<20) {
		t.Errorf("refusing %d bytes allocated %d MiB", len(manifest), a>>20)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ManifestFile)); string(got) != string(manifest) {
		t.Errorf("manifest.json changed")
	}
}

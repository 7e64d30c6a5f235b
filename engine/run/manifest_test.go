package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestManifestMatchesFiles: manifest.json lists every regular file of the
// run directory with the size and sha256 read here independently, in path
// order, hard links under each of their names (a class's student folders),
// without symlinks, manifest.json and complete.json; the same whether the
// files are few or thousands (hashed and synced in parallel).
func TestManifestMatchesFiles(t *testing.T) {
	for _, n := range []int{0, 1, 3, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			write := func(rel, text string) {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("results.json", "{}\n")
			write(results.CompleteFile, "old")
			write(ManifestFile, "old")
			for i := range n {
				h := fmt.Sprintf("hosts/h%03d", i)
				write(h+"/facts.json", fmt.Sprintf(`{"hostname":"h%d"}`, i))
				write(h+"/logs/w.log", string(make([]byte, i*37)))
				s := filepath.Join(dir, "students", fmt.Sprintf("s%03d", i), h)
				if err := os.MkdirAll(s, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(filepath.Join(dir, h, "facts.json"), filepath.Join(s, "facts.json")); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("results.json", filepath.Join(dir, "link.json")); err != nil {
				t.Fatal(err)
			}
			var want []ManifestEntry
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				if rel == ManifestFile || rel == results.CompleteFile {
					return nil
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				want = append(want, ManifestEntry{Path: filepath.ToSlash(rel), Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })
			if err := writeManifest(dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			var got []ManifestEntry
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(want) != 1+3*n {
				t.Fatalf("the test wrote %d files, want %d", len(want), 1+3*n)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("manifest.json (-want +got):\n%s", d)
			}
		})
	}
	// A folder that cannot be read is an error naming the run directory.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeManifest(filepath.Join(dir, "missing")); err == nil {
		t.Error("manifest of a missing run directory: no error")
	}
}

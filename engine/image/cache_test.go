package image

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPrune: prune removes what this rlab would never boot (an image of an
// older recipe, an incomplete one, what a dead build left) and keeps the
// current image and any folder a process has open (here this test's own
// open file, seen through /proc as a running qemu's image is); --all also
// removes the current image, never one in use.
func TestPrune(t *testing.T) {
	cur := DefaultRecipe("").Name()
	old := "debian-bookworm-0123456789abcdef"
	busy := "debian-trixie-fedcba9876543210"
	mk := func(t *testing.T) string {
		dir := t.TempDir()
		for _, name := range []string{cur, old, busy} {
			d := filepath.Join(dir, name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for n, b := range map[string]string{"image.json": `{"release":"bookworm","built_at":"2026-11-01T00:00:00Z"}`, "root.ext4": "root", "vmlinuz": "k", "initrd.img": "i"} {
				if err := os.WriteFile(filepath.Join(d, n), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, d := range []string{"debian-bookworm-minimal-" + MinimalRecipe("").Hash(), ".build-" + cur + "-999999999"} {
			if err := os.MkdirAll(filepath.Join(dir, d, "rootfs"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Open(filepath.Join(dir, busy, "root.ext4"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return dir
	}
	names := func(cs []Cached) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		sort.Strings(out)
		return out
	}
	for _, tc := range []struct {
		name string
		all  bool
		gone []string
	}{
		{"unused", false, []string{".build-" + cur + "-999999999", old, "debian-bookworm-minimal-" + MinimalRecipe("").Hash()}},
		{"all", true, []string{".build-" + cur + "-999999999", cur, old, "debian-bookworm-minimal-" + MinimalRecipe("").Hash()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(t)
			sort.Strings(tc.gone)
			dry, err := Prune(dir, tc.all, true)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.gone, names(dry)); d != "" {
				t.Errorf("dry run (-want +got):\n%s", d)
			}
			gone, err := Prune(dir, tc.all, false)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.gone, names(gone)); d != "" {
				t.Errorf("pruned (-want +got):\n%s", d)
			}
			left, err := List(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range left {
				for _, g := range tc.gone {
					if c.Name == g {
						t.Errorf("%s still in the cache", g)
					}
				}
				if c.Name == busy && !c.InUse {
					t.Errorf("%s is open but not in use", busy)
				}
			}
			if len(left)+len(tc.gone) != 5 {
				t.Errorf("left %v", names(left))
			}
		})
	}
}

// TestListEmpty: a cache folder that does not exist is an empty cache.
func TestListEmpty(t *testing.T) {
	l, err := List(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(l) != 0 {
		t.Fatalf("List = %v, %v", l, err)
	}
}

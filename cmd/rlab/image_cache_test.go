package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestImageListPrune: rlab image list shows each cached image with its size,
// age and state; prune removes the one of an older recipe and keeps the
// current one.
func TestImageListPrune(t *testing.T) {
	dir := t.TempDir()
	cur, old := image.DefaultRecipe("").Name(), "debian-bookworm-0123456789abcdef"
	for _, name := range []string{cur, old} {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, b := range map[string]string{"image.json": `{"release":"bookworm"}`, "root.ext4": strings.Repeat("r", 1<<20), "vmlinuz": "k", "initrd.img": "i"} {
			if err := os.WriteFile(filepath.Join(d, n), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, _, code := rlab(t, "image", "list", "--dir", dir)
	for _, want := range []string{cur + "  1 MiB", "current", old, "unused: built from an older recipe"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("image list: exit %d, %q lacks %q", code, out, want)
		}
	}
	out, _, code = rlab(t, "image", "prune", "--dir", dir, "--dry-run")
	if code != exitOK || !strings.Contains(out, "would remove "+old) || strings.Contains(out, "remove "+cur) {
		t.Errorf("image prune --dry-run: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, old)); err != nil {
		t.Errorf("--dry-run removed %s", old)
	}
	out, _, code = rlab(t, "image", "prune", "--dir", dir)
	if code != exitOK || !strings.Contains(out, "removed "+old) || strings.Contains(out, "removed "+cur) {
		t.Errorf("image prune: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, old)); err == nil {
		t.Errorf("%s still there", old)
	}
	if _, err := os.Stat(filepath.Join(dir, cur)); err != nil {
		t.Errorf("current image pruned: %v", err)
	}
}

// TestImagePruneAll: --all removes the current image too.
func TestImagePruneAll(t *testing.T) {
	dir := t.TempDir()
	cur := image.DefaultRecipe("").Name()
	if err := os.MkdirAll(filepath.Join(dir, cur), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, b := range map[string]string{"image.json": `{"release":"bookworm"}`, "root.ext4": "r", "vmlinuz": "k", "initrd.img": "i"} {
		if err := os.WriteFile(filepath.Join(dir, cur, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, _, _ := rlab(t, "image", "prune", "--dir", dir); !strings.Contains(out, "nothing to prune") {
		t.Errorf("image prune without --all: %q", out)
	}
	out, _, code := rlab(t, "image", "prune", "--dir", dir, "--all")
	if code != exitOK || !strings.Contains(out, "removed "+cur) {
		t.Errorf("image prune --all: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, cur)); err == nil {
		t.Errorf("%s still there", cur)
	}
}

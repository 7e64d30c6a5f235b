package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
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

// TestCacheOfAnotherUser: the default cache, /var/tmp/rlab-cache, is a
// fixed name in a folder every local user may write. A cache folder (or a
// symlink by its name) another user made, or one others may write, is
// refused before rlab boots an image from it, creates its build lock in it
// (a symlink there made root create any file: /etc/nologin) or prunes it
// (a symlink to /etc made prune remove every folder there).
func TestCacheOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: folders and symlinks of another uid")
	}
	const other = 65534
	r := DefaultRecipe("")
	base := t.TempDir()
	os.Chmod(base, 0o755)
	victim := filepath.Join(base, "etc") // what root must not touch
	if err := os.MkdirAll(filepath.Join(victim, "keep-me"), 0o755); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(base, "theirs")
	mkImage := func(dir string) {
		d := filepath.Join(dir, r.Name())
		os.MkdirAll(d, 0o755)
		for _, n := range []string{"image.json", "root.ext4", "vmlinuz", "initrd.img"} {
			os.WriteFile(filepath.Join(d, n), []byte(`{"release":"bookworm"}`), 0o644)
		}
	}
	mkImage(theirs)
	if err := os.Symlink(filepath.Join(victim, "nologin"), filepath.Join(theirs, "."+r.Name()+".lock")); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(theirs, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, other, other) })
	open := filepath.Join(base, "open")
	mkImage(open)
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, other, other)
	for _, tc := range []struct{ name, dir, want string }{
		{"another user's folder", theirs, "belongs to uid 65534"},
		{"writable by others", open, "writable by other users"},
		{"another user's symlink", link, "symlink made by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Lookup(tc.dir, r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Lookup: %v, want %q", err, tc.want)
			}
			if _, err := Ensure(context.Background(), r, Options{Dir: tc.dir}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Ensure: %v, want %q", err, tc.want)
			}
			if _, err := Prune(tc.dir, true, false); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Prune: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(victim, "nologin")); err == nil {
		t.Error("the build lock was created through another user's symlink")
	}
	if _, err := os.Stat(filepath.Join(victim, "keep-me")); err != nil {
		t.Errorf("a folder behind another user's symlink was pruned: %v", err)
	}
	// A cache of one's own holding folders rlab did not make: prune, even
	// --all, leaves them.
	mine := t.TempDir()
	mkImage(mine)
	os.MkdirAll(filepath.Join(mine, "photos"), 0o700)
	gone, err := Prune(mine, true, false)
	if err != nil || len(gone) != 1 || gone[0].Name != r.Name() {
		t.Errorf("prune --all of a cache with a foreign folder: %v, %v", gone, err)
	}
	if _, err := os.Stat(filepath.Join(mine, "photos")); err != nil {
		t.Errorf("prune removed a folder rlab did not make: %v", err)
	}
}

// TestPruneLockSurvivesRemoval: prune unlinks an image's build lock only
// while it holds it, and a builder holds the lock only once the file it
// locked is still the one the path names (engine/vm's snapshot locks do
// the same, SECURITY 170). Before, prune unlinked .NAME.lock without
// holding it: (1) A, about to build, opens it; (2) prune removes the image
// folder and unlinks the lock; (3) A locks the unlinked file and builds;
// (4) C opens a new .NAME.lock and locks it at once, a second build of the
// same image into the same folder, and a second prune removes A's.
func TestPruneLockSurvivesRemoval(t *testing.T) {
	dir := t.TempDir()
	old := "debian-bookworm-0123456789abcdef"
	img := filepath.Join(dir, old)
	if err := os.MkdirAll(img, 0o755); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "."+old+".lock")
	pruned := false
	lockOpened = func(string) {
		if pruned {
			return
		}
		pruned = true // B, between A's open and A's lock
		gone, err := Prune(dir, false, false)
		if err != nil || len(gone) != 1 || gone[0].Name != old {
			t.Errorf("B's prune: %v, %v; want %s gone", gone, err, old)
		}
	}
	a, err := lockFile(context.Background(), lock, false) // A: about to build
	lockOpened = nil
	if err != nil {
		t.Fatalf("A's build lock: %v", err)
	}
	defer a.Close()
	if !pruned {
		t.Fatal("B never ran")
	}
	if err := os.MkdirAll(img, 0o755); err != nil { // A builds
		t.Fatal(err)
	}
	if c, err := lockFile(context.Background(), lock, false); err == nil {
		c.Close()
		t.Error("C took the build lock A holds")
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("C's build lock: %v, want EWOULDBLOCK", err)
	}
	gone, err := Prune(dir, false, false)
	if len(gone) != 0 || err == nil || !strings.Contains(err.Error(), "a build of it is running") {
		t.Errorf("D's prune during A's build: gone %v, %v; want nothing gone and the build named", gone, err)
	}
	if _, err := os.Stat(img); err != nil {
		t.Errorf("A's image folder: %v", err)
	}
}

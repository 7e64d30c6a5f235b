package program

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/kinds"
)

// sh runs one of the cache scripts with the real sh in dir (the work dir)
// and returns its last line.
func sh(t *testing.T, dir, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script, "rlab-program-cache"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// TestCacheScripts runs the cache's two scripts with the real sh and
// coreutils: a store keeps the build (0700, a complete entry), a lookup
// copies it back with its executable bits; a missing or incomplete entry,
// or one that is a symlink, is a miss that leaves nothing; a tree larger
// than the bound is not kept; beyond the entry bound the least recently
// used go, and a lookup counts as a use.
func TestCacheScripts(t *testing.T) {
	root := filepath.Join(t.TempDir(), "programs")
	work := t.TempDir()
	build := func(name string) string {
		d := filepath.Join(work, "programs", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "server"), []byte("#!/bin/sh\n"), 0o755)
		os.WriteFile(filepath.Join(d, "server.c"), []byte("int main(){}\n"), 0o644)
		return filepath.Join("programs", name)
	}
	const kib, n = "1024", "2"
	if got := sh(t, work, cacheLookup, root, "k1", "programs/out1"); got != "miss" {
		t.Errorf("lookup before any store: %q", got)
	}
	if got := sh(t, work, cacheStore, root, "k1", build("b1"), kib, n); got != "stored" {
		t.Errorf("store: %q", got)
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache root: %v %v, want 0700", fi.Mode(), err)
	}
	if got := sh(t, work, cacheStore, root, "k1", build("b1"), kib, n); got != "present" {
		t.Errorf("second store of one key: %q", got)
	}
	if got := sh(t, work, cacheLookup, root, "k1", "programs/out1"); got != "hit" {
		t.Fatalf("lookup after store: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(work, "programs", "out1", "server")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the copied server: %v %v, want executable", fi, err)
	}
	// Incomplete (no done) and symlinked entries are misses.
	os.MkdirAll(filepath.Join(root, "half", "tree"), 0o700)
	os.Symlink(filepath.Join(root, "k1"), filepath.Join(root, "link"))
	for _, k := range []string{"half", "link"} {
		if got := sh(t, work, cacheLookup, root, k, "programs/out-"+k); got != "miss" {
			t.Errorf("lookup of %s: %q, want miss", k, got)
		}
		if _, err := os.Stat(filepath.Join(work, "programs", "out-"+k)); !os.IsNotExist(err) {
			t.Errorf("a miss of %s left programs/out-%s (%v)", k, k, err)
		}
	}
	os.RemoveAll(filepath.Join(root, "half"))
	os.Remove(filepath.Join(root, "link"))
	// Too large: not kept.
	big := build("big")
	os.WriteFile(filepath.Join(work, big, "blob"), make([]byte, 2<<20), 0o644)
	if got := sh(t, work, cacheStore, root, "kbig", big, kib, n); !strings.HasPrefix(got, "not kept") {
		t.Errorf("store of a 2 MiB tree with a 1 MiB bound: %q", got)
	}
	// The bound: k1 used last (a lookup), k2 older, k3 new: k2 goes.
	past := time.Now().Add(-time.Hour)
	if got := sh(t, work, cacheStore, root, "k2", build("b2"), kib, n); got != "stored" {
		t.Fatalf("store k2: %q", got)
	}
	os.Chtimes(filepath.Join(root, "k1"), past, past)
	os.Chtimes(filepath.Join(root, "k2"), past.Add(-time.Minute), past.Add(-time.Minute))
	sh(t, work, cacheLookup, root, "k1", "programs/out1b")
	sh(t, work, cacheStore, root, "k3", build("b3"), kib, n)
	var left []string
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if strings.Join(left, ",") != "k1,k3" {
		t.Errorf("after a third store with room for %s: %v, want k1 (used) and k3 (new)", n, left)
	}
}

// TestCacheRootAndKey: the cache is beside the default work dir only, and
// its key changes with the source, the build argv and the platform.
func TestCacheRootAndKey(t *testing.T) {
	for wd, want := range map[string]string{
		"/home/ana/.cache/rlab/runs/r1/server": "/home/ana/.cache/rlab/programs",
		"/srv/work":                            "",
		"relative/.cache/rlab/runs/r1/h":       "",
		"/home/ana/.cache/rlab/runs/../../x":   "",
	} {
		if got := CacheRoot(wd); got != want {
			t.Errorf("CacheRoot(%q) = %q, want %q", wd, got, want)
		}
	}
	p := &kinds.Source{Hash: strings.Repeat("a", 64), Build: []string{"make"}}
	base := CacheKey(p, []string{"x86_64", "debian", "12"})
	q := *p
	q.Hash = strings.Repeat("b", 64)
	r := *p
	r.Build = []string{"make", "all"}
	keys := map[string]bool{base: true}
	for i, k := range []string{CacheKey(&q, []string{"x86_64", "debian", "12"}), CacheKey(&r, []string{"x86_64", "debian", "12"}), CacheKey(p, []string{"aarch64", "debian", "12"})} {
		if keys[k] {
			t.Errorf("key %d equals another: %s", i, k)
		}
		keys[k] = true
	}
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" || base != CacheKey(p, []string{"x86_64", "debian", "12"}) {
		t.Errorf("key %q: want 32 hex digits, the same for the same input", base)
	}
}

package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSelfHashCached plants a self-hash cache entry holding a made-up hash
// and checks when it is believed: only for the running binary's exact
// identity on this machine and boot, in a file of ours.
func TestSelfHashCached(t *testing.T) {
	real, err := SelfHash()
	if err != nil {
		t.Fatal(err)
	}
	fake := strings.Repeat("f", 64)
	cases := []struct {
		name   string
		root   bool
		change func(e *cacheEntry, c *toolsCache) // before writing
		after  func(t *testing.T, path string)
		want   string
	}{
		{name: "exact identity: cached value used", want: fake},
		{name: "other inode", want: real, change: func(e *cacheEntry, _ *toolsCache) { e.Ino++ }},
		{name: "other size", want: real, change: func(e *cacheEntry, _ *toolsCache) { e.Size++ }},
		{name: "other mtime", want: real, change: func(e *cacheEntry, _ *toolsCache) { e.Mtime++ }},
		{name: "other ctime", want: real, change: func(e *cacheEntry, _ *toolsCache) { e.Ctime++ }},
		{name: "other device", want: real, change: func(e *cacheEntry, _ *toolsCache) { e.Dev++ }},
		{name: "other boot", want: real, change: func(_ *cacheEntry, c *toolsCache) { c.BootID = "11111111-2222-3333-4444-555555555555" }},
		{name: "not a sha256", want: real, change: func(e *cacheEntry, _ *toolsCache) { e.Value = "ff" }},
		{name: "foreign owner", root: true, want: real, after: func(t *testing.T, p string) {
			if err := os.Chown(p, 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlinked", want: real, after: func(t *testing.T, p string) {
			elsewhere := filepath.Join(t.TempDir(), "x.json")
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "corrupt", want: real, after: func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			fakeHost(t)
			dir := cacheDirForTest(t)
			old := agentCacheDir
			agentCacheDir = func() string { return dir }
			t.Cleanup(func() { agentCacheDir = old })
			id, err := readHostIdentity()
			if err != nil {
				t.Fatal(err)
			}
			fid, err := statFileID(selfHashKey)
			if err != nil {
				t.Fatal(err)
			}
			e := cacheEntry{fileID: fid, Value: fake}
			c := toolsCache{Version: toolsCacheVersion, MachineID: id.machineID, BootID: id.bootID}
			path := filepath.Join(dir, "self-"+strconv.Itoa(os.Geteuid())+"-"+id.machineID+".json")
			if tc.change != nil {
				tc.change(&e, &c)
			}
			c.Entries = map[string]cacheEntry{selfHashKey: e}
			if err := saveToolsCache(path, c); err != nil {
				t.Fatal(err)
			}
			if tc.after != nil {
				tc.after(t, path)
			}
			got, err := SelfHashCached()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("SelfHashCached() = %.12s..., want %.12s...", got, tc.want)
			}
			if tc.want == real {
				// Recomputed: the next start is answered from the rewritten
				// cache, with the real hash (unless the file cannot be
				// replaced by a regular one of ours, which all these can).
				if again, _ := SelfHashCached(); again != real {
					t.Errorf("second call = %.12s..., want the real hash", again)
				}
			}
		})
	}
}

// Outside rlab's agent cache (this test binary) nothing is cached.
func TestSelfHashCachedOutsideCache(t *testing.T) {
	h, err := SelfHashCached()
	want, _ := SelfHash()
	if err != nil || h != want {
		t.Errorf("SelfHashCached() = %q, %v; want %q", h, err, want)
	}
}

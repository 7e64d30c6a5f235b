package server

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
)

var updateCache = flag.Bool("update-tools-cache", false, "rewrite testdata/tools-cache.json from this machine")

// cacheDirForTest is a private cache dir for one test.
func cacheDirForTest(t testing.TB) string {
	d := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// fakeHost points the machine and boot ids at files of the test's own, so
// a test can move the host to another machine or reboot it.
func fakeHost(t *testing.T) (setMachine, setBoot func(string)) {
	dir := t.TempDir()
	m, b := filepath.Join(dir, "machine-id"), filepath.Join(dir, "boot_id")
	oldM, oldB := machineIDPath, bootIDPath
	machineIDPath, bootIDPath = m, b
	t.Cleanup(func() { machineIDPath, bootIDPath = oldM, oldB })
	write := func(p string) func(string) {
		return func(s string) {
			if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	setMachine, setBoot = write(m), write(b)
	setMachine("0123456789abcdef0123456789abcdef")
	setBoot("0843ffc9-7f4d-49b3-ac58-0ea1b517eae8")
	return setMachine, setBoot
}

// TestFactsCachedSameAsUncached: on this machine, facts answered from the
// cache are the facts answered by asking every tool.
func TestFactsCachedSameAsUncached(t *testing.T) {
	if _, err := readHostIdentity(); err != nil {
		t.Skipf("no cache on this machine: %v", err)
	}
	ctx := context.Background()
	work := t.TempDir()
	dir := cacheDirForTest(t)
	uncached := collectFactsOpt(ctx, work, toolsOptions{})
	primed := collectFactsOpt(ctx, work, toolsOptions{cacheDir: dir})
	cached := collectFactsOpt(ctx, work, toolsOptions{cacheDir: dir})
	refreshed := collectFactsOpt(ctx, work, toolsOptions{cacheDir: dir, refresh: true})
	ents, _ := filepath.Glob(filepath.Join(dir, "tools-*.json"))
	if len(ents) != 1 {
		t.Fatalf("cache files %v, want one", ents)
	}
	if len(uncached.Tools) == 0 {
		t.Fatal("no tools found on this machine: nothing compared")
	}
	// The platform (platform.go) is read afresh every call, never cached:
	// a warm call must still carry it, equal to a cold one.
	if uncached.Platform.Virtualization == "" || uncached.Platform.DistroID == "" {
		t.Fatalf("platform not read on this machine: %+v", uncached.Platform)
	}
	// Free disk may move between calls; it is not what the cache touches.
	norm := func(f proto.Facts) proto.Facts { f.FreeBytes = 0; return f }
	for name, f := range map[string]proto.Facts{"primed": primed, "cached": cached, "refreshed": refreshed} {
		if d := cmp.Diff(norm(uncached), norm(f)); d != "" {
			t.Errorf("%s facts differ from uncached (-uncached +%s):\n%s", name, name, d)
		}
	}
}

// fakeTool writes an executable script that prints a tcpdump-like version
// line and appends a line to a counter file each time it runs, so a test
// sees whether the cache answered.
func fakeTool(t *testing.T, dir, version string) (path, counter string) {
	path, counter = filepath.Join(dir, "tcpdump"), filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho x >> '" + counter + "'\necho 'tcpdump version " + version + "'\n"
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // a package upgrade renames too
		t.Fatal(err)
	}
	return path, counter
}

func runs(t *testing.T, counter string) int {
	b, err := os.ReadFile(counter)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestToolsCacheInvalidation primes the cache with a fake tcpdump, changes
// one thing, and checks whether the next facts asked the tool again and
// what version it reports.
func TestToolsCacheInvalidation(t *testing.T) {
	cases := []struct {
		name    string
		root    bool // needs root (chown)
		change  func(t *testing.T, env *cacheEnv)
		refresh bool
		wantRun bool
		wantVer string
		noCache bool // the cache cannot be written back: every call asks
	}{
		{name: "unchanged", wantVer: "4.99.3"},
		{name: "refresh asked", refresh: true, wantRun: true, wantVer: "4.99.3"},
		{name: "tool replaced", wantRun: true, wantVer: "4.99.4", change: func(t *testing.T, e *cacheEnv) {
			fakeTool(t, e.bin, "4.99.4")
		}},
		{name: "tool rewritten in place, same size", wantRun: true, wantVer: "4.99.9", change: func(t *testing.T, e *cacheEnv) {
			// File times have the kernel's clock-tick granularity: rewrite
			// until the identity shows it (a rewrite within the tick of
			// the stat is the one case the key cannot see; package
			// managers rename a new file in instead).
			primed, _ := statFileID(e.tool)
			b, _ := os.ReadFile(e.tool)
			for i := 0; ; i++ {
				if err := os.WriteFile(e.tool, []byte(strings.Replace(string(b), "4.99.3", "4.99.9", 1)), 0o755); err != nil {
					t.Fatal(err)
				}
				if now, _ := statFileID(e.tool); now != primed || i == 100 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
		{name: "mtime changed", wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
			if err := os.Chtimes(e.tool, old, old); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "other machine id", wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			// Same file name as the other machine would use: only the
			// content tells them apart.
			mine := e.cacheFile(t)
			e.setMachine("fedcba9876543210fedcba9876543210")
			if err := os.Rename(mine, e.cacheFile(t)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rebooted", wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			e.setBoot("11111111-2222-3333-4444-555555555555")
		}},
		{name: "corrupt file", wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			if err := os.WriteFile(e.cacheFile(t), []byte(`{"version":1,"entries":{`), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "group-writable file", wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			if err := os.Chmod(e.cacheFile(t), 0o620); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "foreign owner", root: true, wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			if err := os.Chown(e.cacheFile(t), 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlinked cache file", wantRun: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			// A link to a valid cache (even our own) is refused: whoever
			// can write the directory could point it anywhere.
			f := e.cacheFile(t)
			elsewhere := filepath.Join(t.TempDir(), "elsewhere.json")
			if err := os.Rename(f, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, f); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "cache file is a directory", wantRun: true, noCache: true, wantVer: "4.99.3", change: func(t *testing.T, e *cacheEnv) {
			f := e.cacheFile(t)
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(f, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			e := newCacheEnv(t)
			ctx := context.Background()
			tools, _, _ := collectToolsOpt(ctx, toolsOptions{cacheDir: e.dir})
			if got := tools["tcpdump"]; got.Path != e.tool || got.Version != "4.99.3" {
				t.Fatalf("primed: tcpdump = %+v, want %s 4.99.3", got, e.tool)
			}
			if n := runs(t, e.counter); n != 1 {
				t.Fatalf("priming ran the tool %d times, want 1", n)
			}
			if fi, err := os.Lstat(e.cacheFile(t)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("cache file: %v, mode %v; want 0600", err, fi.Mode())
			}
			if tc.change != nil {
				tc.change(t, e)
			}
			before := runs(t, e.counter)
			tools, _, errs := collectToolsOpt(ctx, toolsOptions{cacheDir: e.dir, refresh: tc.refresh})
			if ran := runs(t, e.counter) > before; ran != tc.wantRun {
				t.Errorf("tool asked again = %v, want %v", ran, tc.wantRun)
			}
			if got := tools["tcpdump"].Version; got != tc.wantVer {
				t.Errorf("tcpdump version %q, want %q", got, tc.wantVer)
			}
			if len(errs) != 0 {
				t.Errorf("errors: %v", errs)
			}
			// Whatever happened, the next call is answered from a cache
			// that holds the current answer.
			before = runs(t, e.counter)
			tools, _, _ = collectToolsOpt(ctx, toolsOptions{cacheDir: e.dir})
			if (runs(t, e.counter) != before) != tc.noCache || tools["tcpdump"].Version != tc.wantVer {
				t.Errorf("third call: ran %d more times, version %q; want version %q, asked again = %v",
					runs(t, e.counter)-before, tools["tcpdump"].Version, tc.wantVer, tc.noCache)
			}
		})
	}
}

type cacheEnv struct {
	dir, bin, tool, counter string
	setMachine, setBoot     func(string)
}

func newCacheEnv(t *testing.T) *cacheEnv {
	e := &cacheEnv{dir: cacheDirForTest(t), bin: t.TempDir()}
	e.setMachine, e.setBoot = fakeHost(t)
	e.tool, e.counter = fakeTool(t, e.bin, "4.99.3")
	t.Setenv("PATH", e.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return e
}

func (e *cacheEnv) cacheFile(t *testing.T) string {
	id, err := readHostIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return toolsCachePath(e.dir, id)
}

// TestToolsCacheNoIdentity: without a machine id there is no cache (it
// could not be told from another host's), and facts still answer.
func TestToolsCacheNoIdentity(t *testing.T) {
	for _, id := range []string{"", "not-hex", "0123456789ABCDEF0123456789ABCDEF"} {
		e := newCacheEnv(t)
		e.setMachine(id)
		for range 2 {
			tools, _, _ := collectToolsOpt(context.Background(), toolsOptions{cacheDir: e.dir})
			if tools["tcpdump"].Version != "4.99.3" {
				t.Errorf("machine id %q: tcpdump %+v", id, tools["tcpdump"])
			}
		}
		if n := runs(t, e.counter); n != 2 {
			t.Errorf("machine id %q: tool ran %d times, want 2 (no cache)", id, n)
		}
		if ents, _ := os.ReadDir(e.dir); len(ents) != 0 {
			t.Errorf("machine id %q: cache dir holds %d files, want none", id, len(ents))
		}
	}
}

// TestAgentCacheDir: only an agent installed in rlab's per-user cache keeps
// a tool cache, next to itself.
func TestAgentCacheDir(t *testing.T) {
	if d := agentCacheDir(); d != "" {
		t.Errorf("test binary keeps a cache in %q; want none outside .cache/rlab/agent", d)
	}
}

func TestParseToolsCache(t *testing.T) {
	good := `{"version":1,"machine_id":"0123456789abcdef0123456789abcdef","boot_id":"b","entries":{"/usr/bin/tcpdump\u0000--version":{"dev":1,"ino":2,"size":3,"mtime_ns":4,"ctime_ns":5,"value":"4.99.3"}}}`
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"good", good, true},
		{"no entries", `{"version":1}`, true},
		{"other version", strings.Replace(good, `"version":1`, `"version":2`, 1), false},
		{"truncated", good[:len(good)-3], false},
		{"not json", "tcpdump version 4.99.3", false},
		{"empty", "", false},
		{"too big", `{"version":1,"machine_id":"` + strings.Repeat("a", toolsCacheMax) + `"}`, false},
	}
	for _, tc := range cases {
		c, err := parseToolsCache([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err == nil && c.Entries == nil {
			t.Errorf("%s: nil entries", tc.name)
		}
	}
}

// FuzzParseToolsCache: any bytes either fail or give a cache that encodes
// and decodes to itself.
func FuzzParseToolsCache(f *testing.F) {
	seed, err := os.ReadFile("testdata/tools-cache.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"entries":{"":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseToolsCache(b)
		if err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := parseToolsCache(out)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if d := cmp.Diff(c, c2, cmp.AllowUnexported(cacheEntry{})); d != "" {
			t.Errorf("round trip (-first +second):\n%s", d)
		}
	})
}

// TestToolsCacheFixture keeps testdata/tools-cache.json (the fuzz seed) a
// file this agent writes; -update-tools-cache regenerates it here.
func TestToolsCacheFixture(t *testing.T) {
	if *updateCache {
		dir := cacheDirForTest(t)
		collectToolsOpt(context.Background(), toolsOptions{cacheDir: dir})
		id, err := readHostIdentity()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(toolsCachePath(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/tools-cache.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("testdata/tools-cache.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseToolsCache(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entries) == 0 {
		t.Error("fixture has no entries")
	}
}

// TestRDMACoreVersionFastPath: the multiarch directory gives what the
// globs over every /usr/lib directory give, on this machine and in a tree.
func TestRDMACoreVersionFastPath(t *testing.T) {
	if got, want := rdmaCoreVersion(), rdmaCoreVersionGlobs(); got != want {
		t.Errorf("rdmaCoreVersion() = %q, globs give %q", got, want)
	}
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"debian 12", []string{"libibverbs.so.1", "libibverbs.so.1.14.44.0", "libc.so.6"}, "44.0"},
		{"first in name order", []string{"libibverbs.so.1.14.50.0", "libibverbs.so.1.14.44.0"}, "44.0"},
		{"not a version", []string{"libibverbs.so.1.x"}, ""},
		{"soname link wins", []string{"libibverbs.so.1.14.39.0", "libibverbs.so.1->libibverbs.so.1.14.44.0", "libibverbs.so.1.14.44.0"}, "44.0"},
		{"dangling link without version", []string{"libibverbs.so.1->libibverbs-dev", "libibverbs.so.1.14.44.0"}, "44.0"},
		{"none", []string{"libc.so.6"}, ""},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		for _, f := range tc.files {
			if name, target, ok := strings.Cut(f, "->"); ok {
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := rdmaCoreVersionIn(dir); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := rdmaCoreVersionIn(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("missing dir: %q", got)
	}
}

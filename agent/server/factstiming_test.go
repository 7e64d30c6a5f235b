package server

import (
	"context"
	"os"
	"os/user"
	"runtime"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFactsTimings logs what each facts collector costs on this machine
// (medians of 31). It asserts nothing about time; it is how the costs in
// BENCHMARKS.md ("Facts") were measured. RLAB_FACTS_TIMING=1 runs it.
func TestFactsTimings(t *testing.T) {
	if os.Getenv("RLAB_FACTS_TIMING") == "" {
		t.Skip("set RLAB_FACTS_TIMING=1 to log per-collector timings")
	}
	ctx := context.Background()
	tools, _, _ := collectTools(ctx)
	cdir := cacheDirForTest(t)
	oldDir := agentCacheDir
	agentCacheDir = func() string { return cdir }
	defer func() { agentCacheDir = oldDir }()
	steps := []struct {
		name string
		fn   func()
	}{
		{"self hash (sha256 of the agent)", func() { _, _ = SelfHash() }},
		{"self hash, cached (SelfHashCached)", func() { _, _ = SelfHashCached() }},
		{"hostname+uname", func() { _, _ = os.Hostname(); var u unix.Utsname; _ = unix.Uname(&u) }},
		{"os-release", func() { _, _ = readOSRelease() }},
		{"meminfo", func() { _, _ = memTotal() }},
		{"user.Current", func() { _, _ = user.Current() }},
		{"netdevs (netlink)", func() { _, _ = readNetdevs() }},
		{"platform (dmi, cpuinfo, os-release...)", func() { _ = readPlatform() }},
		{"rdma sysfs", func() { _, _ = readRDMADevices() }},
		{"rxe module state", func() { _ = rxeModuleState(kernelRelease()) }},
		{"statfs", func() { var st unix.Statfs_t; _ = unix.Statfs(t.TempDir(), &st) }},
		{"lookTool x18", func() {
			for _, n := range defaultProbeSet().names() {
				_, _ = lookTool(n)
			}
		}},
		{"rdmaCoreVersion glob", func() { _ = rdmaCoreVersion() }},
		{"collectTools (uncached)", func() { _, _, _ = collectToolsOpt(ctx, toolsOptions{refresh: true}) }},
		{"collectTools (cached)", func() { _, _, _ = collectToolsOpt(ctx, toolsOptions{cacheDir: cdir}) }},
		{"collectFacts (uncached)", func() { _ = collectFactsOpt(ctx, t.TempDir(), toolsOptions{refresh: true}) }},
		{"collectFacts (cached)", func() { _ = collectFactsOpt(ctx, t.TempDir(), toolsOptions{cacheDir: cdir}) }},
	}
	for name, tv := range defaultProbeSet().versions {
		if tl, ok := tools[name]; ok {
			steps = append(steps, struct {
				name string
				fn   func()
			}{name + " " + tv.args[0], func() { _, _, _ = runCmd(ctx, tl.Path, tv.args...) }})
		}
	}
	t.Logf("GOMAXPROCS %d", runtime.GOMAXPROCS(0))
	for _, s := range steps {
		s.fn() // warm
		var ds []time.Duration
		for range 31 {
			t0 := time.Now()
			s.fn()
			ds = append(ds, time.Since(t0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("%-34s median %8.2f ms  min %8.2f ms", s.name, float64(ds[15].Microseconds())/1000, float64(ds[0].Microseconds())/1000)
	}
}

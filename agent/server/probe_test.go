package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestDefaultProbes: the agent's own list (for a request that names no
// programs) is well formed and holds no workload tool: those come from the
// controller (engine/remote.FactsParams).
func TestDefaultProbes(t *testing.T) {
	ps, err := newProbeSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rdma", "ibv_devinfo", "ibv_devices", "tcpdump", "modprobe"}
	if got := ps.names(); !slices.Equal(got, want) {
		t.Errorf("default probes %v, want %v", got, want)
	}
	for _, n := range []string{"rdma", "tcpdump", "modprobe"} {
		if _, ok := ps.versions[n]; !ok {
			t.Errorf("%s: not asked its version", n)
		}
	}
}

// TestProbeListChecked: a probe list naming a path or carrying a bad
// pattern is a bad request, not a program run.
func TestProbeListChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe proto.Probe
		want  string
	}{
		{"path", proto.Probe{Name: "/bin/sh"}, "not a program name"},
		{"dotdot", proto.Probe{Name: ".."}, "not a program name"},
		{"empty", proto.Probe{}, "not a program name"},
		{"pattern", proto.Probe{Name: "x", Args: []string{"-V"}, Pattern: "("}, "version pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newProbeSet([]proto.Probe{tc.probe})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newProbeSet(%+v) = %v, want an error with %q", tc.probe, err, tc.want)
			}
			s := &Server{}
			params, _ := json.Marshal(proto.FactsParams{Probe: []proto.Probe{tc.probe}})
			if _, err := s.facts(context.Background(), nil, params); err == nil {
				t.Errorf("facts with probe %+v: no error", tc.probe)
			}
		})
	}
}

// TestProbeListFollowed: the agent looks for exactly the programs the
// request names (here one that every host has and one no host has).
func TestProbeListFollowed(t *testing.T) {
	ps, err := newProbeSet([]proto.Probe{{Name: "sh"}, {Name: "rlab-no-such-program"}})
	if err != nil {
		t.Fatal(err)
	}
	tools, _, _ := collectToolsOpt(context.Background(), toolsOptions{probes: ps})
	var got []string
	for n := range tools {
		got = append(got, n)
	}
	if !slices.Equal(got, []string{"sh"}) {
		t.Errorf("found %v, want [sh]", got)
	}
}

// TestProbesRunAsOwner: a root agent working for a user runs the version
// probes a facts request names as that user. The request names the program
// and its arguments, and with SECURITY.md's sudoers rule the login user can
// send it: a probe of `sh -c ...` ran as root (found in attack round 10,
// high). Each probe here reports the uid it ran as.
func TestProbesRunAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop privileges")
	}
	const uid, gid = 65534, 65534 // nobody
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o711)
	if err := os.Chown(base, uid, gid); err != nil {
		t.Fatal(err)
	}
	c, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "w"), Owner: &Owner{UID: uid, GID: gid}})
	for _, tc := range []struct {
		name  string
		probe proto.Probe
	}{
		{"version args", proto.Probe{Name: "sh", Args: []string{"-c", "echo uid=$(id -u)"}, Pattern: `uid=(\d+)`}},
		{"perftest help", proto.Probe{Name: "sh", PerftestHelp: true, HelpFlags: []string{"--uid-65534"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := proto.FactsParams{Refresh: true, Probe: []proto.Probe{tc.probe}}
			if tc.probe.PerftestHelp {
				// sh --help is no usage text; put the uid where the
				// options are read from: a script named sh in PATH.
				bin := t.TempDir()
				os.Chmod(filepath.Dir(bin), 0o711)
				os.Chmod(bin, 0o755)
				script := "#!/bin/sh\necho \"  --uid-$(id -u)   the uid\"\n"
				if err := os.WriteFile(filepath.Join(bin, "sh"), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
			}
			var f proto.Facts
			c.mustCall(proto.MethodFacts, p, &f)
			if tc.probe.PerftestHelp {
				if !slices.Contains(f.PerftestFlags, "--uid-65534") {
					t.Errorf("--help ran as another uid than the owner's: flags %v", f.PerftestFlags)
				}
				return
			}
			if got := f.Tools["sh"].Version; got != strconv.Itoa(uid) {
				t.Errorf("the probe ran as uid %q, want the owner's %d", got, uid)
			}
		})
	}
}

// TestNoToolCacheForOwner: a root agent working for a user neither writes
// nor reads the tool-version cache: its probes run as the user, and the
// cache (keyed by the effective uid, root) is written by path (attack round
// 11, medium: the user swapped ~/.cache/rlab/agent for a symlink into
// root's between the probes and the write). It writes no tools-* file; the
// same agent as root alone does (else the test proves nothing).
func TestNoToolCacheForOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop privileges")
	}
	const uid, gid = 65534, 65534
	cdir := t.TempDir()
	old := agentCacheDir
	agentCacheDir = func() string { return cdir }
	t.Cleanup(func() { agentCacheDir = old })
	probe := proto.Probe{Name: "sh", Args: []string{"-c", "echo v=42"}, Pattern: `v=(\d+)`}
	for _, owner := range []*Owner{{UID: uid, GID: gid}, nil} {
		base := t.TempDir()
		os.Chmod(filepath.Dir(base), 0o711)
		os.Chown(base, uid, gid)
		c, _ := startAgent(t, Options{WorkDir: filepath.Join(base, "w"), Owner: owner})
		var f proto.Facts
		c.mustCall(proto.MethodFacts, proto.FactsParams{Probe: []proto.Probe{probe}}, &f)
		ents, _ := filepath.Glob(filepath.Join(cdir, "tools-*"))
		if owner != nil && len(ents) != 0 {
			t.Errorf("root working for uid %d wrote the tool-version cache: %v", uid, ents)
		}
		if owner == nil && len(ents) == 0 {
			t.Errorf("root alone wrote no tool-version cache in %s: the test proves nothing", cdir)
		}
		if f.Tools["sh"].Version != "42" {
			t.Errorf("owner %v: sh version %q, want 42", owner, f.Tools["sh"].Version)
		}
	}
}

package vm

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/agentdisk"
)

// TestWarmScript runs what a snapshot's template runs before its save, in
// bash on this machine with the real agent on a disk image standing in for
// the agent disk: the agent lands in its per-hash folder with a warm
// tool-version cache for this machine, and the warm-up's work dir is gone.
// Then the identity script's carry-over moves that cache to a new machine
// id (what each restored VM gets), rewriting the id it holds.
func TestWarmScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	mid, err := os.ReadFile("/etc/machine-id")
	if err != nil || len(strings.TrimSpace(string(mid))) != 32 {
		t.Skipf("no machine id here to key the cache by: %v", err)
	}
	old := strings.TrimSpace(string(mid))
	d := t.TempDir()
	probe := filepath.Join(d, "probe")
	if err := os.WriteFile(probe, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("dd", "if="+probe, "bs=4096", "count=1", "iflag=direct", "of=/dev/null").CombinedOutput(); err != nil {
		t.Skipf("this file system has no O_DIRECT for the test's disk image: %v: %s", err, out)
	}
	bin := filepath.Join(d, "rlab-agent")
	if out, err := exec.Command("go", "build", "-o", bin, "../../agent/cmd/rlab-agent").CombinedOutput(); err != nil {
		t.Fatalf("build the agent: %v: %s", err, out)
	}
	agent, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sys, dev, home := filepath.Join(d, "sys"), filepath.Join(d, "dev"), filepath.Join(d, "home")
	for _, p := range []string{filepath.Join(sys, "vda"), filepath.Join(sys, "vdb"), dev, home} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// vda is the root disk: an empty serial, no newline, as the guest has
	// it (a read that fails: the warm-up stopped there under set -e).
	if err := os.WriteFile(filepath.Join(sys, "vda", "serial"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "vdb", "serial"), []byte(agentdisk.Serial+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := agentdisk.Write(filepath.Join(dev, "vdb"), agent); err != nil {
		t.Fatal(err)
	}
	run := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v: %s", err, out)
		}
		return string(out)
	}

	if warmScript(sys, dev, nil, []byte(`{"id":1,"method":"facts"}`)) != "" || warmScript(sys, dev, agent, []byte(`{"x":"'"}`)) != "" {
		t.Error("a warm-up without an agent, or with a quote in its request, was written")
	}
	out := run(warmScript(sys, dev, agent, []byte(`{"id":1,"method":"facts"}`)))
	sum := sha256.Sum256(agent)
	folder := filepath.Join(home, ".cache/rlab/agent", hex.EncodeToString(sum[:]))
	if b, err := os.ReadFile(filepath.Join(folder, "rlab-agent")); err != nil || len(b) != len(agent) {
		t.Errorf("agent not installed in %s (%v):\n%s", folder, err, out)
	}
	cache := filepath.Join(folder, "tools-"+strconv.Itoa(os.Geteuid())+"-"+old+".json")
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatalf("no warm tool-version cache: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".cache/rlab/runs", warmRunID)); !os.IsNotExist(err) {
		t.Errorf("the warm-up's work dir is left: %v", err)
	}

	nb := make([]byte, 16)
	rand.Read(nb)
	n := hex.EncodeToString(nb)
	run("n=" + n + "; o=" + old + "\n" + carryToolsCache)
	moved := filepath.Join(folder, "tools-"+strconv.Itoa(os.Geteuid())+"-"+n+".json")
	nbuf, err := os.ReadFile(moved)
	if err != nil {
		t.Fatalf("cache not carried to the new machine id: %v", err)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("the old machine id's cache is left: %v", err)
	}
	var before, after map[string]any
	if json.Unmarshal(b, &before) != nil || json.Unmarshal(nbuf, &after) != nil {
		t.Fatalf("not JSON:\n%s\n%s", b, nbuf)
	}
	if after["machine_id"] != n || before["machine_id"] != old {
		t.Errorf("machine ids %v -> %v, want %s -> %s", before["machine_id"], after["machine_id"], old, n)
	}
	before["machine_id"], after["machine_id"] = nil, nil
	x, _ := json.Marshal(before)
	y, _ := json.Marshal(after)
	if string(x) != string(y) {
		t.Errorf("the carried cache changed beyond its machine id:\n%s\n%s", x, y)
	}
	if fi, err := os.Stat(moved); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("carried cache mode %o, want 600", fi.Mode().Perm())
	}
	// Not a machine id: nothing is touched.
	run("n=" + n + "; o='*'\n" + carryToolsCache)
	if _, err := os.Stat(moved); err != nil {
		t.Errorf("a bad old id touched the cache: %v", err)
	}
}

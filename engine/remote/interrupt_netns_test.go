package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// An agent upload cut off on a real sshd host (the sshd processes serving
// the session killed while the bytes flow) fails on that host alone with
// an error saying so; the partial copy stays under its temp name, never
// executable, and the cache's real name is never written. The next run
// uploads the whole agent again and starts it from the verified name, and
// what is left in the cache is that agent and the one dead temp file.
func TestInstallInterruptedNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	ag := realAgent(t)
	bin := ag.bin(runtime.GOARCH)
	h0, h1 := bed.Host("h0"), bed.Host("h1")
	// h0's own home (not the bed's shared one): its cache starts empty and
	// what the test sees there is this host's alone.
	home := bed.PrivateHome(t, h0, nil)
	cache := filepath.Join(home, CacheDir, bin.hash)
	final := filepath.Join(cache, "rlab-agent")
	// Slow enough (4 MB at 2 Mbit/s) that the upload is surely cut off
	// mid-way; the cut is made when bytes have landed, not after a delay.
	lift := bed.Throttle(t, h0, "2mbit")

	specs := []Spec{bedSpec(bed, h0), bedSpec(bed, h1)}
	type gathered struct {
		res []Result
		st  GatherStats
		err error
	}
	done := make(chan gathered, 1)
	go func() {
		res, st, err := Gather(context.Background(), specs, bedOptions(bed, ag))
		done <- gathered{res, st, err}
	}()
	tmp := waitPartial(t, cache, bin.size)
	killed := bed.KillSessions(t, h0)
	g := <-done
	if g.err != nil {
		t.Fatal(g.err)
	}
	t.Logf("cut %s after %d of %d bytes (%d sshd processes killed)", filepath.Base(tmp), size(tmp), bin.size, killed)

	r0, r1 := g.res[0], g.res[1]
	if r1.Err != nil || r1.Facts == nil {
		t.Errorf("h1 (not interrupted): %v", r1.Err)
	}
	if r0.Err == nil {
		t.Fatal("h0: interrupted upload reported no error")
	}
	gz, err := bin.gzipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`host "h0"`, "install agent", "upload to ", CacheDir + "/" + bin.hash + "/" + filepath.Base(tmp), "of " + strconv.Itoa(len(gz)) + " bytes"} {
		if !strings.Contains(r0.Err.Error(), w) {
			t.Errorf("h0: error %q lacks %q", r0.Err, w)
		}
	}
	t.Logf("h0: %v", r0.Err)
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Errorf("after the cut, %s exists (stat: %v): a partial agent under the name that runs", final, err)
	}
	// The install script removes its temp file when it outlives the cut
	// (gzip sees the stream end early); killed with its sshd, it leaves
	// it, partial and not executable.
	tmpLeft := true
	if fi, err := os.Stat(tmp); os.IsNotExist(err) {
		tmpLeft = false
	} else if err != nil {
		t.Fatalf("partial temp file: %v", err)
	} else if fi.Size() >= bin.size || fi.Mode()&0o111 != 0 {
		t.Errorf("partial temp file %s: %d bytes, mode %v; want fewer than %d bytes and not executable", tmp, fi.Size(), fi.Mode(), bin.size)
	}
	for pid, cmd := range bed.Pids(t, h0) {
		// An agent is a process of the agent binary (argv[0]); the
		// install script, which names rlab-agent in its text, may still
		// be ending after the cut (seen under load: its bash listed here).
		if f := strings.Fields(cmd); len(f) > 0 && filepath.Base(f[0]) == "rlab-agent" {
			t.Errorf("h0 runs an agent after a failed upload: pid %d: %s", pid, cmd)
		}
	}

	// The next run, link back to full speed: the whole agent is sent
	// again, verified and renamed, and it is what runs.
	lift()
	res, st, err := Gather(context.Background(), specs[:1], bedOptions(bed, ag))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].Facts == nil {
		t.Fatalf("h0 after the cut: %v", res[0].Err)
	}
	if st.AgentBytes != int64(len(gz)) {
		t.Errorf("run after the cut shipped %d bytes, want the whole agent gzip'd (%d)", st.AgentBytes, len(gz))
	}
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != bin.hash {
		t.Errorf("%s: sha256 %x, want %s", final, sum, bin.hash)
	}
	if fi, err := os.Stat(final); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v (%v), want 0700", final, fi.Mode(), err)
	}
	// Gather closed its session: the agent it started has stopped.
	waitNoAgent(t, bed, h0)
	// The agent runs from the verified name: the process's executable.
	d, err := sshx.NewDialer(bedOptions(bed, ag).SSH)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.Dial(context.Background(), specs[0].Target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, inst, err := ag.Open(context.Background(), c, StartOptions{Host: "h0", RunID: "interrupt"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if inst.Sent != 0 {
		t.Errorf("third run shipped %d bytes, want 0 (cached)", inst.Sent)
	}
	var exes []string
	for pid, cmd := range bed.Pids(t, h0) {
		// An agent is a process of the agent binary (argv[0]); the
		// install script, which names rlab-agent in its text, may still
		// be ending after the cut (seen under load: its bash listed here).
		if f := strings.Fields(cmd); len(f) > 0 && filepath.Base(f[0]) == "rlab-agent" {
			exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
			exes = append(exes, exe)
		}
	}
	if len(exes) != 1 || !strings.HasSuffix(exes[0], "/"+bin.hash+"/rlab-agent") {
		t.Errorf("agent processes on h0 run %q, want one from .../%s/rlab-agent", exes, bin.hash)
	}
	// Left in the cache: the agent, and the temp file of the cut session
	// if its script died with its sshd (installs leave it until it is an
	// hour old).
	ents, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		// The agent's own caches (tool versions, its sha256) live here too.
		if n := e.Name(); strings.HasSuffix(n, ".json") && (strings.HasPrefix(n, "tools-") || strings.HasPrefix(n, "self-")) {
			continue
		}
		names = append(names, e.Name())
	}
	want := []string{"rlab-agent"}
	if tmpLeft {
		want = append(want, filepath.Base(tmp))
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("cache holds %q, want %q", names, want)
	}
}

// waitPartial waits until an agent temp file in dir holds some bytes but not
// all, and returns its path. The deadline only bounds a broken test.
func waitPartial(t *testing.T, dir string, full int64) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		m, _ := filepath.Glob(filepath.Join(dir, "rlab-agent.tmp-*"))
		for _, p := range m {
			if n := size(p); n > 0 && n < full {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no partial upload appeared in %s", dir)
	return ""
}

// waitNoAgent waits until no agent runs on h (it stops when its session's
// stdin closes). The deadline only bounds a broken test.
func waitNoAgent(t *testing.T, bed *testbed.Bed, h *testbed.Host) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for _, cmd := range bed.Pids(t, h) {
			if strings.Contains(cmd, "rlab-agent") {
				left = append(left, cmd)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("agents still running on %s after their session closed: %q", h.Name, left)
}

func size(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
)

// TestBecomeSystemAgentNetns: become on real sshd hosts with real sudo
// (SECURITY 176), a login that is not root.
//
//   - The old rule of SECURITY.md (the agent in the user's cache, with its
//     sha256) no longer gives a working agent: sudo runs it, and the root
//     agent refuses to serve from a file the user can rewrite, an error that
//     names the root-owned install.
//   - The new rule, naming the root-owned copy under
//     /usr/local/libexec/rlab/agent/<sha256>/, starts that copy: the
//     agent's process runs as root from that file, with nothing in the
//     user's cache (no upload, cold and warm).
//   - A login with NOPASSWD: ALL (cloud images' default users) gets the
//     root-owned copy installed on its first become, root's 0755 in root's
//     folders, and runs from it.
func TestBecomeSystemAgentNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	ag := realAgent(t)
	hash := ag.bin(runtime.GOARCH).hash
	sys := proto.SystemAgentPath(hash)
	removeSys := func() { os.RemoveAll(filepath.Dir(sys)) }
	removeSys()
	t.Cleanup(removeSys)
	h := bed.Hosts[0]
	uid, gid := testbed.UID(t, bed.UserNoSudo)
	home := filepath.Join(filepath.Dir(bed.Home), bed.UserNoSudo)
	cache := filepath.Join(home, CacheDir, hash, "rlab-agent")
	os.RemoveAll(filepath.Join(home, ".cache"))
	os.RemoveAll(filepath.Join(bed.Home, CacheDir, hash))

	d, err := sshx.NewDialer(bedOptions(bed, ag).SSH)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	open := func(t *testing.T, user, runID string) (*Agent, *Installed, error) {
		t.Helper()
		tg := bedSpec(bed, h).Target
		tg.User = user
		c, err := d.Dial(context.Background(), tg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		a, inst, err := ag.Open(context.Background(), c, StartOptions{Host: h.Name, RunID: runID, Become: true})
		if err == nil {
			t.Cleanup(func() { a.Close() })
		}
		return a, inst, err
	}
	// runsFrom is the executable of the agent's process and its uid.
	runsFrom := func(t *testing.T, a *Agent) (string, int) {
		t.Helper()
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", a.Hello.PID))
		if err != nil {
			t.Fatal(err)
		}
		return exe, a.Hello.UID
	}

	t.Run("old rule: the user's cache", func(t *testing.T) {
		bed.SudoRule(t, fmt.Sprintf(`%s ALL=(root) NOPASSWD: sha256:%s %s serve --run-id * --work-dir %s/.cache/rlab/runs/* --owner %d\:%d`,
			bed.UserNoSudo, hash, cache, home, uid, gid))
		_, _, err := open(t, bed.UserNoSudo, "old-rule")
		if err == nil {
			t.Fatal("the agent served as root from the user's cache through the old rule")
		}
		for _, want := range []string{"refused to run as root", "unsafe executable for a root agent", "belongs to uid " + fmt.Sprint(uid), "rlab agent export"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q\nlacks %q", err, want)
			}
		}
		if _, err := os.Lstat(sys); err == nil {
			t.Errorf("%s installed by a user sudo allows only the agent", sys)
		}
	})

	t.Run("new rule: the root-owned copy", func(t *testing.T) {
		b, err := os.ReadFile(cache)
		if err != nil {
			t.Fatal(err) // the old rule's run uploaded it
		}
		if err := os.MkdirAll(filepath.Dir(sys), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sys, b, 0o755); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(home, ".cache")) // nothing to start but the root-owned copy
		bed.SudoRule(t, fmt.Sprintf(`%s ALL=(root) NOPASSWD: sha256:%s %s serve --run-id * --work-dir %s/.cache/rlab/runs/* --owner %d\:%d`,
			bed.UserNoSudo, hash, sys, home, uid, gid))
		for _, run := range []string{"new-rule-1", "new-rule-2"} {
			a, inst, err := open(t, bed.UserNoSudo, run)
			if err != nil {
				t.Fatalf("%s: %v", run, err)
			}
			if exe, u := runsFrom(t, a); exe != sys || u != 0 {
				t.Errorf("%s: the agent runs from %s as uid %d, want %s as root", run, exe, u, sys)
			}
			if inst.Sent != 0 {
				t.Errorf("%s: shipped %d agent bytes, want none (the root-owned copy is there)", run, inst.Sent)
			}
			a.Close()
		}
		if _, err := os.Lstat(cache); err == nil {
			t.Errorf("%s uploaded though the root-owned copy was there", cache)
		}
	})

	t.Run("NOPASSWD ALL: installed root-owned", func(t *testing.T) {
		removeSys()
		a, _, err := open(t, bed.User, "nopasswd-all")
		if err != nil {
			t.Fatal(err)
		}
		if exe, u := runsFrom(t, a); exe != sys || u != 0 {
			t.Errorf("the agent runs from %s as uid %d, want %s as root", exe, u, sys)
		}
		for p := sys; p != "/"; p = filepath.Dir(p) {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
				t.Errorf("%s: uid %d mode %o, want root's, not group/other-writable", p, st.Uid, fi.Mode().Perm())
			}
		}
		if left, _ := filepath.Glob(sys + ".part*"); len(left) > 0 {
			t.Errorf("temp copies left behind: %v", left)
		}
	})
}

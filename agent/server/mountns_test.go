package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestOwnerWorkDirInUsersMountNSRefused: the sudoers rule's * takes any
// path under the user's runs folder, and a symlink of theirs there may lead
// through /proc/PID/root into a mount namespace of their own (an
// unprivileged user namespace), where they bind /proc (or any kernel
// filesystem) onto a folder inside the work dir. The work dir itself was on
// their tmpfs or home (kernelFS passed it), and os.Root crosses mounts:
// files.write appended "0 0 4294967295" to /proc/PID/uid_map of a user
// namespace of theirs, which the kernel grants by the opener's
// capabilities (CAP_SETUID, CAP_SETFCAP, CAP_SYS_ADMIN: setfsuid clears
// only the filesystem ones), and the user became uid 0 of the host
// (attack round 17, host side, high: /etc/shadow read, a root file made in
// /etc, with the real agent under sudo and the documented rule).
func TestOwnerWorkDirInUsersMountNSRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root agent working for a user")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	const uid = 65534
	base := ownedTempDir(t, uid)
	realDir := filepath.Join(base, "realDir")
	p := filepath.Join(realDir, "X", "p")
	for _, d := range []string{realDir, filepath.Dir(p), p} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	asUser := func(args ...string) *exec.Cmd {
		cmd := exec.Command(unshare, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return cmd
	}
	start := func(cmd *exec.Cmd) {
		t.Helper()
		if err := cmd.Start(); err != nil {
			t.Skipf("start %v: %v", cmd.Args, err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	// The victim: a user namespace of the user's, its uid_map not set.
	victim := asUser("-U", "sleep", "60")
	start(victim)
	// The user's mount namespace, /proc bound inside the work dir.
	ns := asUser("-Urm", "sh", "-c", `mount --bind /proc "$1" && echo bound && exec sleep 60`, "sh", p)
	out, err := ns.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start(ns)
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "bound\n" {
		t.Skipf("no user and mount namespaces for uid %d (%q)", uid, l)
	}
	mine, _ := os.Readlink("/proc/self/ns/user")
	uidMap := fmt.Sprintf("/proc/%d/uid_map", victim.Process.Pid)
	for i := 0; ; i++ {
		if theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", victim.Process.Pid)); theirs != mine && theirs != "" {
			break
		}
		if i == 100 {
			t.Skip("the victim never entered its user namespace")
		}
		time.Sleep(20 * time.Millisecond)
	}
	link := filepath.Join(base, "runs")
	if err := os.Symlink(fmt.Sprintf("/proc/%d/root%s", ns.Process.Pid, realDir), link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, uid, uid)

	mapped := func() string {
		b, err := os.ReadFile(uidMap)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	s, err := New(Options{WorkDir: filepath.Join(link, "X"), Hash: "h", Owner: &Owner{UID: uid, GID: uid}})
	if err != nil {
		t.Logf("refused: %v", err)
	} else {
		defer s.wd.close()
		params, _ := json.Marshal(proto.FilesWriteParams{
			Path: fmt.Sprintf("p/%d/uid_map", victim.Process.Pid), Data: []byte("0 0 4294967295\n"), Append: true,
		})
		_, werr := s.filesWrite(context.Background(), nil, params)
		t.Logf("files.write: %v", werr)
	}
	if m := mapped(); m != "" {
		t.Errorf("the user's namespace got the uid map %q from the root agent: its uid 0 is the host's root", m)
	}
}

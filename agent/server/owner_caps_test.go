package server

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// capEff is the calling thread's effective capability set, as
// /proc/thread-self/status says it.
func capEff(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no CapEff in /proc/thread-self/status")
	return ""
}

// TestAsOwnerDropsCapabilities: while a root agent works on files for its
// owner (asOwnerFS), its thread has no capability in effect, not only no
// file capability: the kernel judges a user namespace's uid_map by the
// opener's CAP_SETUID, and with it a files.write as the user made the user
// the host's root (attack round 17, host side). After, the thread has
// them all back.
func TestAsOwnerDropsCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := capEff(t)
	if before == "0000000000000000" {
		t.Skip("root without capabilities here")
	}
	var during string
	err := asOwnerFS(&Owner{UID: 65534, GID: 65534}, []int{65534}, "test", func() error {
		during = capEff(t)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != "0000000000000000" {
		t.Errorf("capabilities in effect while working as the owner: %s, want none", during)
	}
	if after := capEff(t); after != before {
		t.Errorf("capabilities after: %s, want %s as before", after, before)
	}
}

// TestAsOwnerCannotMapRoot is the attack itself, without the work dir: a
// user's own user namespace (a process of uid 65534 in one) and its
// uid_map, written through asOwnerFS as that user. A user may map only
// its own uid; with root's CAP_SETUID in effect the kernel let the map
// "0 0 4294967295" through, which makes the user the host's root.
func TestAsOwnerCannotMapRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cmd := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "unshare", "-U", "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no setpriv/unshare: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	m := fmt.Sprintf("/proc/%d/uid_map", cmd.Process.Pid)
	// Wait until the process is in its own namespace (its uid_map file
	// exists from the start; the namespace differs from ours once
	// unshare has run).
	self, _ := os.Readlink("/proc/self/ns/user")
	for i := 0; i < 100; i++ {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid)); err == nil && ns != self {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	werr := asOwnerFS(&Owner{UID: 65534, GID: 65534}, []int{65534}, "write uid_map", func() error {
		f, err := os.OpenFile(m, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write([]byte("0 0 4294967295\n"))
		return err
	})
	b, _ := os.ReadFile(m)
	if werr == nil || strings.TrimSpace(string(b)) != "" {
		t.Fatalf("the user mapped root into its namespace (write: %v; uid_map now %q)", werr, b)
	}
	t.Logf("refused: %v", werr)
}

package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestBootRetriesADeadGuest: a VM whose qemu exits before sshd answers (a
// guest that panicked while booting under load) is started once more; here
// the second start runs (a fake qemu with no sshd), so Boot ends at the SSH
// wait of that second try, having said it boots the VM again. (The wait is
// 8 s: with 2 s, a loaded machine started the fake qemu, which dies after
// 1 s, too late, and the first try's wait ended the boot before any retry.)
func TestBootRetriesADeadGuest(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("RLAB_VM_TEST_ROLE", "qemu-dies-once")
	t.Setenv("RLAB_VM_TEST_DIR", dir)
	root := filepath.Join(dir, "root.raw")
	if err := os.WriteFile(root, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	im := &image.Image{Dir: dir, Root: root, Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initrd")}
	var mu sync.Mutex
	var states []string
	_, err = Boot(context.Background(), []Machine{{Name: "a", BootTimeout: 8 * time.Second}}, filepath.Join(dir, "run"),
		Options{Image: im, Accel: AccelTCG, QEMU: self, PowerdownTimeout: -1, Progress: func(host, state string) {
			mu.Lock()
			states = append(states, host+": "+state)
			mu.Unlock()
		}})
	mu.Lock()
	defer mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "did not answer within 8s") {
		t.Fatalf("Boot: %v; want the second try's SSH wait to end it", err)
	}
	if !strings.Contains(strings.Join(states, "\n"), "a: died while booting") {
		t.Errorf("progress %q: the retry was not said", states)
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "vm", "a", "console.log.1")); err != nil {
		t.Errorf("the first try's console log was not kept: %v", err)
	}
}

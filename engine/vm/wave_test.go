package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestBootWaves: with BootWave 2, four VMs boot two at a time: the second
// wave starts only once the first's sshd answers. The stand-in qemu here
// boots no guest, so the first wave times out and the second never starts
// (two qemu started, not four); without waves all four start at once.
// (That a wave whose guests answer lets the next one start is the boot of
// a real class: make test-vm with --parallel.)
func TestBootWaves(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed")
	}
	bin := t.TempDir()
	argvFile := filepath.Join(bin, "argv")
	script := "#!/bin/sh\necho \"$@\" >> " + argvFile + "\n" +
		"for a; do case $a in unix:*qmp.sock*) p=$(printf %s \"${a#unix:}\" | sed 's/,server=.*//; s/,,/,/g'); touch \"$p\";; esac; done\nexec sleep 4\n"
	qemu := filepath.Join(bin, "qemu-system-x86_64")
	if err := os.WriteFile(qemu, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	img := &image.Image{Dir: bin, Root: filepath.Join(bin, "root.ext4"), Kernel: filepath.Join(bin, "vmlinuz"), Initrd: filepath.Join(bin, "initrd.img")}
	for _, f := range []string{img.Kernel, img.Initrd} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(img.Root)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Truncate(64 << 20)
	f.Close()
	var ms []Machine
	for _, n := range []string{"a", "b", "c", "d"} {
		ms = append(ms, Machine{Name: n, BootTimeout: time.Second, Networks: []Network{{Name: "pair-" + map[string]string{"a": "x", "b": "x", "c": "y", "d": "y"}[n]}}})
	}
	for _, tt := range []struct {
		wave, started int
	}{{2, 2}, {0, 4}} {
		_ = os.Remove(argvFile)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// A run directory with a comma in its name: QEMU's option lists
		// get it doubled (optPath).
		runDir := filepath.Join(t.TempDir(), "run,1")
		set, err := Boot(ctx, ms, runDir, Options{Image: img, QEMU: qemu, Accel: AccelTCG, BootWave: tt.wave, PowerdownTimeout: -1})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "did not answer within 1s") {
			t.Errorf("wave %d: boot: %v, want a timeout", tt.wave, err)
		}
		if set != nil {
			t.Errorf("wave %d: a failed boot returned its set", tt.wave)
		}
		b, _ := os.ReadFile(argvFile)
		if n := strings.Count(string(b), "\n"); n != tt.started {
			t.Errorf("wave %d: %d qemu started, want %d:\n%s", tt.wave, n, tt.started, b)
		}
		// Every VM has the agent disk, read-only, at its fixed slot.
		for _, argv := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			for _, want := range []string{"run,,1/vm/agent.disk,if=none,id=agent,format=raw,readonly=on", "/qmp.sock,server=on", "run,,1/", "virtio-blk-pci,drive=agent,serial=rlab-agent,addr=0x1f"} {
				if !strings.Contains(argv, want) {
					t.Errorf("wave %d: qemu started without %q: %s", tt.wave, want, argv)
				}
			}
		}
	}
}

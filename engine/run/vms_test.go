package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
)

// TestLocalVMsAttrs: a vm block's image, memory, cpus and boot_timeout
// reach qemu, with a stand-in qemu-system-x86_64 on PATH that records its
// argv and never boots: image "trixie" boots the cached trixie image (its
// root is the overlay's backing file, its kernel -kernel), memory and cpus
// are -m and -smp, and the boot gives up after boot_timeout.
func TestLocalVMsAttrs(t *testing.T) {
	if _, err := os.Stat("/usr/bin/qemu-img"); err != nil {
		t.Skip("qemu-img not installed")
	}
	bin := t.TempDir()
	argvFile := filepath.Join(bin, "argv")
	// It makes the QMP path qemu would listen on (rlab waits for it), then
	// outlives boot_timeout a little.
	script := "#!/bin/sh\ncase \"$*\" in *kvm*) exit 1;; esac\necho \"$@\" >> " + argvFile + "\n" +
		"for a; do case $a in unix:*qmp.sock*) p=${a#unix:}; touch \"${p%%,*}\";; esac; done\nexec sleep 5\n"
	if err := os.WriteFile(filepath.Join(bin, "qemu-system-x86_64"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cache := t.TempDir()
	t.Setenv("RLAB_CACHE", cache)
	r := image.DefaultRecipe("trixie")
	d := filepath.Join(cache, r.Name())
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"image.json": `{"hash":"` + r.Hash() + `","release":"trixie"}`, "vmlinuz": "k", "initrd.img": "i"}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(d, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(filepath.Join(d, "root.ext4"), 0); err != nil {
		f, err := os.Create(filepath.Join(d, "root.ext4"))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(64 << 20)
		f.Close()
	}
	l := loadLab(t, `lab "vmattrs" {}
host "a" {
  vm {
    image        = "trixie"
    memory       = "768MiB"
    cpus         = 3
    boot_timeout = "2s"
    network "n" { address = "10.98.0.1/24" }
  }
}
workload "x" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	set, err := (&LocalVMs{}).Boot(ctx, l.Hosts, t.TempDir())
	if set != nil {
		if s, ok := set.(*vmSet); ok {
			_ = s.s.Shutdown(ctx)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Errorf("boot: %v, want a timeout after boot_timeout 2s", err)
	}
	b, _ := os.ReadFile(argvFile)
	argv := " " + strings.TrimSpace(string(b)) + " "
	for _, want := range []string{" -m 768 ", " -smp 3 ", " -kernel " + filepath.Join(d, "vmlinuz") + " "} {
		if !strings.Contains(argv, want) {
			t.Errorf("qemu argv lacks %q:\n%s", want, argv)
		}
	}
}

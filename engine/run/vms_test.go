package run

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
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

// TestLocalVMsMinimalInternet: image "minimal" boots the cached minimal
// image (its root is the overlay's backing file, its kernel -kernel), and
// internet = true lifts restrict=on from that VM's management NIC only (the
// other keeps it); with a stand-in qemu as in TestLocalVMsAttrs.
func TestLocalVMsMinimalInternet(t *testing.T) {
	if _, err := os.Stat("/usr/bin/qemu-img"); err != nil {
		t.Skip("qemu-img not installed")
	}
	bin := t.TempDir()
	argvFile := filepath.Join(bin, "argv")
	script := "#!/bin/sh\ncase \"$*\" in *kvm*) exit 1;; esac\necho \"$@\" >> " + argvFile + "\n" +
		"for a; do case $a in unix:*qmp.sock*) p=${a#unix:}; touch \"${p%%,*}\";; esac; done\nexec sleep 5\n"
	if err := os.WriteFile(filepath.Join(bin, "qemu-system-x86_64"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cache := t.TempDir()
	t.Setenv("RLAB_CACHE", cache)
	dirs := map[string]string{}
	for _, r := range []image.Recipe{image.MinimalRecipe(""), image.DefaultRecipe("")} {
		d := filepath.Join(cache, r.Name())
		dirs[r.Variant] = d
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, b := range map[string]string{"image.json": `{"hash":"` + r.Hash() + `","release":"bookworm"}`, "vmlinuz": "k", "initrd.img": "i"} {
			if err := os.WriteFile(filepath.Join(d, n), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(d, "root.ext4"))
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Truncate(64 << 20)
		f.Close()
	}
	l := loadLab(t, `lab "vmnet" {}
host "a" {
  vm {
    image        = "minimal"
    internet     = true
    boot_timeout = "2s"
    network "n" { address = "10.98.0.1/24" }
  }
}
host "b" {
  vm {
    boot_timeout = "2s"
    network "n" { address = "10.98.0.2/24" }
  }
}
workload "x" {
  tool   = "tcp"
  server = host.a
  client = host.b
}
`)
	if !l.Hosts[0].VM.Internet || l.Hosts[1].VM.Internet || l.Hosts[0].VM.Image != "minimal" {
		t.Fatalf("vm blocks decoded as %+v and %+v", l.Hosts[0].VM, l.Hosts[1].VM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runDir := t.TempDir()
	set, err := (&LocalVMs{}).Boot(ctx, l.Hosts, runDir)
	if set != nil {
		if s, ok := set.(*vmSet); ok {
			_ = s.s.Shutdown(ctx)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Errorf("boot: %v, want a timeout after boot_timeout 2s", err)
	}
	b, _ := os.ReadFile(argvFile)
	argvs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		for _, h := range []string{"a", "b"} {
			if strings.Contains(line, "-name rlab-"+h+" ") {
				argvs[h] = " " + line + " "
			}
		}
	}
	for h, want := range map[string]struct {
		image    string
		restrict bool
	}{"a": {dirs["minimal"], false}, "b": {dirs[""], true}} {
		argv := argvs[h]
		if !strings.Contains(argv, " -kernel "+filepath.Join(want.image, "vmlinuz")+" ") {
			t.Errorf("host %s: qemu argv does not boot %s:\n%s", h, want.image, argv)
		}
		if !strings.Contains(argv, " user,id=n0,") || strings.Contains(argv, "restrict=on") != want.restrict {
			t.Errorf("host %s: management NIC restricted %v, want %v:\n%s", h, !want.restrict, want.restrict, argv)
		}
		out, err := exec.Command("qemu-img", "info", "--output=json", filepath.Join(runDir, "vm", h, "overlay.qcow2")).Output()
		if err != nil || !strings.Contains(string(out), filepath.Join(want.image, "root.ext4")) {
			t.Errorf("host %s: overlay's backing file is not %s: %v %s", h, filepath.Join(want.image, "root.ext4"), err, out)
		}
	}
}

// TestWarmRequest: what a snapshot's template agent is asked is one facts
// request line with the run's probes, fit for the warm-up's shell quoting
// (no quote, newline or NUL; engine/vm refuses it otherwise).
func TestWarmRequest(t *testing.T) {
	b := warmRequest()
	var req struct {
		ID     uint64 `json:"id"`
		Method string `json:"method"`
		Params struct {
			Probe []json.RawMessage `json:"probe"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &req); err != nil || req.ID != 1 || req.Method != "facts" || len(req.Params.Probe) == 0 {
		t.Fatalf("request %s (%v): want id 1, facts, with probes", b, err)
	}
	if strings.ContainsAny(string(b), "'\n\r\x00") {
		t.Errorf("request has a quote or line break: %s", b)
	}
}

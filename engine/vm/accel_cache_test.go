package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProbeCache: the KVM probe's answer is reused while what it depends on
// (host boot, qemu binary, kernel, /dev/kvm) is unchanged, and probed again
// once the kernel changes.
func TestProbeCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	kernel := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(kernel, []byte("k1"), 0o644); err != nil {
		t.Fatal(err)
	}
	const qemu = "sh" // any program on PATH stands in for qemu
	if _, _, cached := probeCached(qemu, kernel); cached {
		t.Fatal("cached before any probe")
	}
	saveProbe(qemu, kernel, false, "a probe guest under KVM printed nothing in 15s")
	ok, why, cached := probeCached(qemu, kernel)
	if !cached || ok || !strings.HasPrefix(why, "a probe guest under KVM printed nothing in 15s (probed earlier") {
		t.Errorf("after a failed probe: ok %v, why %q, cached %v", ok, why, cached)
	}
	saveProbe(qemu, kernel, true, "")
	if ok, _, cached := probeCached(qemu, kernel); !ok || !cached {
		t.Errorf("after a good probe: ok %v, cached %v", ok, cached)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(kernel, later, later); err != nil {
		t.Fatal(err)
	}
	if _, _, cached := probeCached(qemu, kernel); cached {
		t.Error("a changed kernel still used the cached answer")
	}
}

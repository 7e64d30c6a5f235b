package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Accelerators.
const (
	AccelKVM = "kvm"
	AccelTCG = "tcg"
)

const (
	kvmGetAPIVersion = 0xAE00 // _IO(KVMIO, 0x00)
	kvmCreateVM      = 0xAE01 // _IO(KVMIO, 0x01)
	kvmAPIVersion    = 12
)

// ProbeKVM reports whether KVM can run a guest here: /dev/kvm opens, speaks
// API version 12 and lets us create a VM. /dev/kvm existing is not enough
// (containers and some nested setups expose a node that fails later). The
// reason is set when it cannot.
func ProbeKVM() (ok bool, reason string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Sprintf("open /dev/kvm: %v", err)
	}
	defer f.Close()
	v, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), kvmGetAPIVersion, 0)
	if errno != 0 {
		return false, fmt.Sprintf("KVM_GET_API_VERSION: %v", errno)
	}
	if v != kvmAPIVersion {
		return false, fmt.Sprintf("KVM API version %d, want %d", v, kvmAPIVersion)
	}
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), kvmCreateVM, 0)
	if errno != 0 {
		return false, fmt.Sprintf("KVM_CREATE_VM: %v", errno)
	}
	unix.Close(int(fd))
	return true, ""
}

// ProbeKVMBoot starts kernel under KVM (-cpu host) for at most timeout and
// reports whether it got as far as printing its banner on the serial
// console. Nested setups can pass every ioctl yet fail on the first MSR
// write, or hang in the kernel's decompressor; only running it tells.
func ProbeKVMBoot(ctx context.Context, qemu, kernel string, timeout time.Duration) (ok bool, reason string) {
	if ok, why := ProbeKVM(); !ok {
		return false, why
	}
	dir, err := os.MkdirTemp("", "rlab-kvm-probe-")
	if err != nil {
		return false, err.Error()
	}
	defer os.RemoveAll(dir)
	console := filepath.Join(dir, "console")
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, "-accel", "kvm", "-cpu", "host", "-machine", "pc", "-m", "256",
		"-nodefaults", "-no-user-config", "-display", "none", "-serial", "file:"+console,
		"-kernel", kernel, "-append", "console=ttyS0 panic=-1 loglevel=7", "-no-reboot")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return false, err.Error()
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { cancel(); <-exited }()
	for {
		if b, _ := os.ReadFile(console); bytes.Contains(b, []byte("Linux version")) {
			return true, ""
		}
		select {
		case <-exited:
			if ctx.Err() != nil { // killed by our own deadline
				return false, fmt.Sprintf("a probe guest under KVM printed nothing in %s", timeout)
			}
			msg := strings.TrimSpace(stderr.String())
			if i := strings.IndexByte(msg, '\n'); i > 0 {
				msg = msg[:i]
			}
			return false, "a probe guest under KVM died: " + msg
		case <-ctx.Done():
			return false, fmt.Sprintf("a probe guest under KVM printed nothing in %s", timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PredictAccel says which accelerator Boot would choose here, without
// booting anything (for `rlab plan`): RLAB_VM_ACCEL when set; else TCG when
// /dev/kvm cannot make a VM (ProbeKVM), KVM when it can. Boot's probe
// guest may still find KVM unusable; the run then says so.
func PredictAccel() (accel, why string) {
	switch a := os.Getenv("RLAB_VM_ACCEL"); a {
	case AccelTCG, AccelKVM:
		return a, "RLAB_VM_ACCEL=" + a
	}
	if ok, reason := ProbeKVM(); !ok {
		return AccelTCG, "KVM not usable: " + reason
	}
	return AccelKVM, "/dev/kvm usable"
}

// PredictEmulated names, of the local VM hosts given, those that will
// boot under TCG here, as far as can be told without booting
// (PredictAccel), with why: plan.Options.Emulated, so that `rlab plan`
// and plan.json say which workloads get a raised QP timeout. The run
// itself goes by the accelerator its VMs were booted with, and the facts
// of SSH hosts. Nil when there are no VM hosts or they will run under KVM.
func PredictEmulated(vmHosts []string) map[string]string {
	if len(vmHosts) == 0 {
		return nil
	}
	accel, why := PredictAccel()
	if accel != AccelTCG {
		return nil
	}
	out := map[string]string{}
	for _, h := range vmHosts {
		out[h] = fmt.Sprintf("host %s is a local VM that will run under TCG (%s)", h, why)
	}
	return out
}

// chooseAccel resolves "" (auto) and checks an explicit "kvm" by booting
// the kernel briefly under KVM.
func chooseAccel(ctx context.Context, want, qemu, kernel string) (accel, note string, err error) {
	const probeTimeout = 15 * time.Second
	switch want {
	case "", "auto":
		ok, why, cached := probeCached(qemu, kernel)
		if !cached {
			ok, why = ProbeKVMBoot(ctx, qemu, kernel, probeTimeout)
			if ctx.Err() == nil {
				saveProbe(qemu, kernel, ok, why)
			}
		}
		if ok {
			return AccelKVM, "KVM", nil
		}
		return AccelTCG, "TCG software emulation (KVM not usable: " + why + ")", nil
	case AccelKVM:
		if ok, why := ProbeKVMBoot(ctx, qemu, kernel, probeTimeout); !ok {
			return "", "", fmt.Errorf("accelerator kvm asked for but not usable: %s", why)
		}
		return AccelKVM, "KVM", nil
	case AccelTCG:
		return AccelTCG, "TCG software emulation (asked for)", nil
	}
	return "", "", fmt.Errorf("unknown accelerator %q (want kvm, tcg or auto)", want)
}

// The probe boot costs up to 15 s of every run on a host where KVM hangs
// (a third of `make demo` here), and its answer does not change until the
// host reboots, qemu or the kernel changes, or /dev/kvm comes or goes: it is
// kept under the user's cache folder for that long. An explicit
// RLAB_VM_ACCEL=kvm always probes anew.

type probeRecord struct {
	Key string `json:"key"`
	OK  bool   `json:"ok"`
	Why string `json:"why,omitempty"`
}

// probeKey names what the probe's answer depends on, or "" when that is
// unknown (then nothing is cached).
func probeKey(qemu, kernel string) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "boot %s\n", bytes.TrimSpace(boot))
	q, err := exec.LookPath(qemu)
	if err != nil {
		return ""
	}
	for _, p := range []string{q, kernel, "/dev/kvm"} {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
			if sys, ok := st.Sys().(*unix.Stat_t); ok {
				fmt.Fprintf(h, "ctime %d.%d\n", sys.Ctim.Sec, sys.Ctim.Nsec)
			}
		} else {
			fmt.Fprintf(h, "%s absent\n", p)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// probeFile is where the answer for key is kept: one file per key, so a
// second qemu or kernel never overwrites the first one's answer.
func probeFile(key string) string {
	dir, err := os.UserCacheDir()
	if err != nil || key == "" {
		return ""
	}
	return filepath.Join(dir, "rlab", "kvm-probe-"+key[:16]+".json")
}

func probeCached(qemu, kernel string) (ok bool, why string, cached bool) {
	key := probeKey(qemu, kernel)
	f := probeFile(key)
	if key == "" || f == "" {
		return false, "", false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return false, "", false
	}
	var r probeRecord
	if json.Unmarshal(b, &r) != nil || r.Key != key {
		return false, "", false
	}
	if !r.OK {
		r.Why += " (probed earlier since this boot; remove " + f + " to probe again)"
	}
	return r.OK, r.Why, true
}

func saveProbe(qemu, kernel string, ok bool, why string) {
	key := probeKey(qemu, kernel)
	f := probeFile(key)
	if key == "" || f == "" {
		return
	}
	b, err := json.Marshal(probeRecord{Key: key, OK: ok, Why: why})
	if err != nil || os.MkdirAll(filepath.Dir(f), 0o700) != nil {
		return
	}
	tmp := f + ".tmp" + fmt.Sprint(os.Getpid())
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, f)
	}
}

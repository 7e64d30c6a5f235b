package vm

import (
	"bytes"
	"context"
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

// chooseAccel resolves "" (auto) and checks an explicit "kvm" by booting
// the kernel briefly under KVM.
func chooseAccel(ctx context.Context, want, qemu, kernel string) (accel, note string, err error) {
	const probeTimeout = 15 * time.Second
	switch want {
	case "", "auto":
		if ok, why := ProbeKVMBoot(ctx, qemu, kernel, probeTimeout); ok {
			return AccelKVM, "KVM", nil
		} else {
			return AccelTCG, "TCG software emulation (KVM not usable: " + why + ")", nil
		}
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

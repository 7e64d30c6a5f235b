package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// qmpPowerdown asks the guest to power off (ACPI) through the QMP socket,
// within 5 s.
func qmpPowerdown(ctx context.Context, sock string) error {
	q, err := dialQMP(ctx, sock, 5*time.Second)
	if err != nil {
		return err
	}
	defer q.Close()
	_, err = q.do("system_powerdown", nil)
	return err
}

// procStartTime returns field 22 of /proc/pid/stat (start time in clock
// ticks since boot): with the pid it names one process for good.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// comm may hold spaces and parens: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("short /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// isOurQEMU reports whether pid is still the qemu process a VMState names:
// same start time, a qemu-system binary, and our pid file on its command line.
func isOurQEMU(st VMState) bool {
	if st.PID <= 0 {
		return false
	}
	t, err := procStartTime(st.PID)
	if err != nil || t != st.StartTime {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	if len(args) == 0 || !strings.Contains(args[0], "qemu-system") {
		return false
	}
	for _, a := range args {
		if a == st.PIDFile {
			return true
		}
	}
	return false
}

// stopVM powers a VM off: ACPI powerdown through QMP and up to grace for the
// guest to stop, then SIGTERM, then SIGKILL, each only while the pid is still
// our qemu. exited, when not nil, closes when the process has been reaped
// (we are its parent); otherwise /proc is polled.
func stopVM(ctx context.Context, st VMState, grace time.Duration, exited <-chan struct{}) error {
	gone := func() bool {
		if exited != nil {
			select {
			case <-exited:
				return true
			default:
				return false
			}
		}
		return !isOurQEMU(st)
	}
	wait := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if gone() {
				return true
			}
			select {
			case <-ctx.Done():
				return gone()
			case <-exited:
			case <-time.After(100 * time.Millisecond):
			}
		}
		return gone()
	}
	if gone() {
		return nil
	}
	if grace > 0 && st.QMP != "" && ctx.Err() == nil {
		if err := qmpPowerdown(ctx, st.QMP); err == nil && wait(grace) {
			return nil
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if gone() {
			return nil
		}
		if !isOurQEMU(st) {
			return nil // exited (or the pid was reused: not ours to signal)
		}
		if err := syscall.Kill(st.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop vm %q: signal qemu pid %d: %w", st.Host, st.PID, err)
		}
		// The grace here must not depend on ctx: a cancelled run still stops its VMs.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && !gone() {
			select {
			case <-exited:
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if !gone() {
		return fmt.Errorf("stop vm %q: qemu pid %d still running after SIGKILL", st.Host, st.PID)
	}
	return nil
}

// Running reports whether the qemu process v names is still running.
func (v VMState) Running() bool { return isOurQEMU(v) }

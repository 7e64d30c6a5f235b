package vm

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// ReadMachine returns what this machine has for VMs: MemAvailable from
// /proc/meminfo (the kernel's estimate of what can be given out without
// swapping) in bytes, and the CPUs this process may run on.
func ReadMachine() (memAvailable int64, cpus int, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, fmt.Errorf("read this machine's memory: %w", err)
	}
	n, err := parseMemAvailable(b)
	if err != nil {
		return 0, 0, fmt.Errorf("read this machine's memory: /proc/meminfo: %w", err)
	}
	return n, runtime.NumCPU(), nil
}

// parseMemAvailable reads the MemAvailable line of /proc/meminfo
// ("MemAvailable:    3456789 kB"; the kernel's kB are KiB).
func parseMemAvailable(b []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("MemAvailable line %q is not \"N kB\"", sc.Text())
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 || n > 1<<43 { // 8 EiB in KiB: past that, bytes overflow
			return 0, fmt.Errorf("MemAvailable %q is not a size in kB", f[0])
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no MemAvailable line (Linux 3.14 or later has one)")
}

package steps

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// maxDmesgLine bounds each kernel log line DmesgTail keeps.
const maxDmesgLine = 2048

// DmesgTail runs `dmesg` on a host through the agent and returns its last n
// lines: saved next to a hung workload, since a stuck RDMA tool is usually
// explained by the kernel (rxe warnings, OOM, soft lockups).
func DmesgTail(ctx context.Context, env *Env, host, hd string, n int) (string, error) {
	var p Procs
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := StartProc(ctx, env, &p, "dmesg", ProcSpec{Host: host, Handle: hd, Argv: []string{"dmesg"}, Role: "command", Root: true}); err != nil {
		return "", err
	}
	r, err := WaitProc(ctx, env, &p, host, hd, Remaining(ctx))
	if err != nil {
		uctx, ucancel := undoContext(ctx)
		p.StopAll(uctx, env)
		ucancel()
		return "", fmt.Errorf("dmesg on host %q: %w", host, err)
	}
	if r.ExitCode != 0 {
		return "", ProcError("dmesg", "command", host, r)
	}
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	// A kernel line is at most about 1 KiB (printk's LOG_LINE_MAX); the
	// output is the host's, and a line of megabytes was kept whole
	// (SECURITY 144).
	for i, l := range lines {
		if len(l) > maxDmesgLine {
			lines[i] = strings.ToValidUTF8(l[:maxDmesgLine], "") + "…"
		}
	}
	return strings.Join(lines, "\n") + "\n", nil
}

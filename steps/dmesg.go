package steps

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DmesgTail runs `dmesg` on a host through the agent and returns its last n
// lines: saved next to a hung workload, since a stuck RDMA tool is usually
// explained by the kernel (rxe warnings, OOM, soft lockups).
func DmesgTail(ctx context.Context, env *Env, host, hd string, n int) (string, error) {
	var p procs
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := startProc(ctx, env, &p, "dmesg", procSpec{Host: host, Handle: hd, Argv: []string{"dmesg"}, Role: "command", Root: true}); err != nil {
		return "", err
	}
	r, err := waitProc(ctx, env, &p, host, hd, remaining(ctx))
	if err != nil {
		uctx, ucancel := undoContext(ctx)
		p.stopAll(uctx, env)
		ucancel()
		return "", fmt.Errorf("dmesg on host %q: %w", host, err)
	}
	if r.ExitCode != 0 {
		return "", procError("dmesg", "command", host, r)
	}
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n", nil
}

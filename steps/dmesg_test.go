package steps

import (
	"context"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// dmesgHost answers dmesg with out.
type dmesgHost struct{ out string }

func (h *dmesgHost) Name() string { return "h" }

func (h *dmesgHost) Send(_ context.Context, r *rpc.Request) error {
	if p, res, ok := rpc.Match(r, rpc.ProcStart); ok {
		*res = proto.ProcStarted{Handle: p.Handle, PID: 1}
	} else if p, res, ok := rpc.Match(r, rpc.ProcWait); ok {
		*res = proto.ProcResult{Handle: p.Handle, Stdout: h.out}
	}
	return nil
}

// TestDmesgTailBounded: the kernel log tail kept beside a hung workload
// keeps its last lines, each at most maxDmesgLine bytes (SECURITY 144: 8
// lines of a megabyte were kept whole); honest lines are kept as printed.
// The output is at most proto.OutputLimit (an answer past it is refused
// where it is decoded, proto.Bounds): 8 lines of 128 KiB fill it.
func TestDmesgTailBounded(t *testing.T) {
	honest := "[    1.0] rdma_rxe: loaded\n[    2.0] rxe0: port 1 ACTIVE\n"
	for _, tc := range []struct {
		name, out string
		max       int
	}{
		{"honest", honest, len(honest)},
		{"lines of 128 KiB", strings.Repeat(strings.Repeat("k", proto.OutputLimit/8-1)+"\n", 8), 8 * (maxDmesgLine + 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{Hosts: map[string]Host{"h": &dmesgHost{out: tc.out}}}
			got, err := DmesgTail(t.Context(), env, "h", "dmesg.w", 200)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > tc.max || tc.name == "honest" && got != honest {
				t.Errorf("kept %d bytes (%.80q), want at most %d", len(got), got, tc.max)
			}
		})
	}
}

package steps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/kinds"
)

// The tools' QP timeouts as their families describe them (kinds/perftest,
// kinds/pingpong, kinds/rping, whose tests steps cannot import).
var (
	perftestQPT = kinds.Tool{Name: "ib_write_bw", QPTimeout: kinds.QPTimeout{Flag: "-u", Long: "--qp-timeout", Default: 14}}
	pingpongQPT = kinds.Tool{Name: "ibv_rc_pingpong", QPTimeout: kinds.QPTimeout{Default: 14, Fixed: "ibv_rc_pingpong sets QP timeout 14 itself and has no option for it"}}
	rpingQPT    = kinds.Tool{Name: "rping", QPTimeout: kinds.QPTimeout{Fixed: "rping has no option for it"}}
	tcpQPT      = kinds.Tool{Name: "tcp"}
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "toolout", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExplainRetries: a run whose tool reported its RC QP's retries
// exhausted (real outputs: perftest's "Failed status 12", ibv_rc_pingpong's
// "transport retry counter exceeded (12)", rping's "cq completion failed
// status 12") fails with the tool's words, then the cause and the fix that
// fit the tool and the host: raise -u on an emulated host, say that the
// raised one ran out too, or that the tool has no option. Other failures
// are left as they are; status 9 is explained only on an emulated host.
func TestExplainRetries(t *testing.T) {
	perftest12 := fixture(t, "ib_write_bw.failed.composed.txt")
	pingpong12 := fixture(t, "world/ibv_rc_pingpong.mlx5-retry.client.txt")
	const rping12 = "cq completion failed status 12\nrping: client.c: wait for RDMA_WRITE_ADV state 10\n"
	const status9 = " Completion with error at client\n Failed status 9: wr_id 0 syndrom 0x0\n"
	const emu = "host server is a local VM under TCG"
	tests := []struct {
		name      string
		tool      kinds.Tool
		out       string
		timeout   int
		emulated  string
		wantHints []string // "" : err unchanged
	}{
		{"perftest, emulated, not raised", perftestQPT, perftest12, 0, emu,
			[]string{"status 12", "QP timeout 14 (67ms a try), 7 retries", emu, `args = ["-u", "18"]`}},
		{"perftest, emulated, raised and still out", perftestQPT, perftest12, 18, emu,
			[]string{"QP timeout 18 (1.07s a try)", "even the raised timeout ran out", `["-u", "20"]`}},
		{"perftest, real hardware", perftestQPT, perftest12, 0, "",
			[]string{"the other end stalled or the link lost packets", `args = ["-u", "18"]`}},
		{"pingpong, emulated", pingpongQPT, pingpong12, 0, emu,
			[]string{"status 12", emu, "has no option for it"}},
		{"rping, plain", rpingQPT, rping12, 0, "",
			[]string{"status 12", "rping has no option for it"}},
		{"status 9 under TCG", perftestQPT, status9, 18, emu,
			[]string{"remote invalid request (status 9)", "even the raised timeout"}},
		{"status 9 on real hardware: not ours to explain", perftestQPT, status9, 0, "", nil},
		{"another failure", perftestQPT, " Couldn't connect to 10.0.0.1:18515\n", 0, emu, nil},
		{"no RC QP", tcpQPT, "status 12", 0, emu, nil},
		{"status 120 is not 12", perftestQPT, "Failed status 120: wr_id 0", 0, emu, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := errors.New("ib_write_bw client on host \"client\": exit 1")
			got := explainRetries(base, tt.tool, tt.timeout, tt.emulated, &proto.ProcResult{Stdout: tt.out}, nil)
			if !errors.Is(got, base) {
				t.Fatalf("the tool's error is lost: %v", got)
			}
			if tt.wantHints == nil {
				if got != base {
					t.Errorf("explained a failure that is not retries exhausted:\n%v", got)
				}
				return
			}
			var qe *QPTimeoutError
			if !errors.As(got, &qe) || !strings.HasPrefix(got.Error(), base.Error()+"\ncause: ") {
				t.Fatalf("not explained: %v", got)
			}
			for _, h := range tt.wantHints {
				if !strings.Contains(qe.Hint, h) {
					t.Errorf("hint %q lacks %q", qe.Hint, h)
				}
			}
		})
	}
}

// TestEmulated: a host is emulated when the run booted it under TCG, or
// when its facts say it is a QEMU guest without KVM; a KVM guest, bare
// metal and a host without facts are not.
func TestEmulated(t *testing.T) {
	env := &Env{
		Emulation: map[string]string{"vm": "booted under TCG"},
		Facts: map[string]*proto.Facts{
			"tcg":   {Platform: proto.Platform{Virtualization: "qemu"}},
			"kvm":   {Platform: proto.Platform{Virtualization: "kvm"}},
			"metal": {Platform: proto.Platform{Virtualization: "none"}},
		},
	}
	for host, want := range map[string]bool{"vm": true, "tcg": true, "kvm": false, "metal": false, "unknown": false} {
		if got := env.Emulated(host) != ""; got != want {
			t.Errorf("Emulated(%q) = %q, want emulated %v", host, env.Emulated(host), want)
		}
	}
}

// retryHost is an agent whose clients exit 1 with out on stdout.
type retryHost struct {
	clockHost
	out string
}

func (h *retryHost) Send(ctx context.Context, r *rpc.Request) error {
	if p, res, ok := rpc.Match(r, rpc.ProcWait); ok && strings.Contains(p.Handle, "client") {
		*res = proto.ProcResult{Handle: p.Handle, ExitCode: 1, Stdout: h.out}
		return nil
	}
	return h.clockHost.Send(ctx, r)
}

// TestPairExplainsRetries: a workload whose client ran out of retries fails
// with the cause and the fix in its error, from the QP timeout and the
// emulated end its family put in the run.
func TestPairExplainsRetries(t *testing.T) {
	h := &retryHost{clockHost: clockHost{name: "h"}, out: fixture(t, "ib_write_bw.failed.composed.txt")}
	env := &Env{Hosts: map[string]Host{"h": h}}
	w := &Workload{Workload: kinds.Workload{Name: "bw", Slug: "bw", Tool: "ib_write_bw"}, ServerHost: "h", ClientHost: "h"}
	w.Sizes = []int64{65536}
	planTrials(w)
	s := &pairWorkload{w: w, build: func(env *Env, u kinds.Planned) (*PairRun, error) {
		size, rep := u.Size, u.Repeat
		return &PairRun{
			Server:    ProcSpec{Host: "h", Handle: Handle(w, "server", size, rep), Argv: []string{"ib_write_bw"}, Role: "server"},
			Client:    ProcSpec{Host: "h", Handle: Handle(w, "client", size, rep), Argv: []string{"ib_write_bw", "x"}, Role: "client"},
			QPTimeout: 18, Emulated: "host h is a local VM under TCG",
		}, nil
	}}
	err := s.Apply(context.Background(), env)
	if s.out.Status != StatusFailed {
		t.Fatalf("status %q, want failed (%v)", s.out.Status, err)
	}
	for _, want := range []string{"Failed status 12", "cause: the RC QP ran out of retries", "host h is a local VM under TCG", "even the raised timeout ran out"} {
		if !strings.Contains(s.out.Error, want) {
			t.Errorf("workload error lacks %q:\n%s", want, s.out.Error)
		}
	}
}

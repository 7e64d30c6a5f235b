package vm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runErrorCases runs the RDMA mistakes of issue 16 on the examples pair, on
// real rxe and siw: each must end in seconds with its exit code, name the
// host (or the lab file's line and column) and say what to do, and leave
// no device and no agent behind. README: exit 1 for a lab error, 2 for
// infrastructure and preflight.
func runErrorCases(ctx context.Context, t *testing.T, bin, root string, set *Set, khFile string) {
	gs := make([]*guest, len(set.VMs))
	for i, v := range set.VMs {
		c, err := v.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		gs[i] = &guest{name: v.Name, c: c}
	}
	server, client := gs[0], gs[1]
	iwarp, err := os.ReadFile(filepath.Join(root, "labs", "iwarp.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	// What iWARP cannot do (labs/README.md, "RDMA devices"): an atomic
	// tool and a UD transport over siw, refused when the lab loads.
	unsupported := string(iwarp) + `
workload "atomic_iwarp" {
  tool   = "ib_atomic_bw"
  server = siw.server
  client = siw.client
}

workload "ud_iwarp" {
  tool      = "ib_send_bw"
  server    = siw.server
  client    = siw.client
  transport = "UD"
}
`
	cases := []struct {
		name string
		lab  string // labs/NAME.hcl, or src
		src  string
		vars []string
		// before and after run on the guests around the run.
		before, after func(t *testing.T)
		code          int
		want          []*regexp.Regexp // each must match rlab's output
	}{
		{
			name: "bad_device",
			lab:  "found", vars: []string{"device=mlx5_nope", "iterations=10"},
			code: 2,
			want: []*regexp.Regexp{
				regexp.MustCompile(`host "server": rdma "server": device mlx5_nope port 1: no such RDMA device on the host: name one it has: `),
				regexp.MustCompile(`host "client": rdma "client": device mlx5_nope port 1: no such RDMA device on the host: name one it has: `),
			},
		},
		{
			// An admin's rxe on both guests, the client's eth1 set down:
			// its port is DOWN, which preflight says before anything runs.
			name: "port_down",
			lab:  "found", vars: []string{"device=rxe_admin", "iterations=10"},
			before: func(t *testing.T) {
				for _, g := range gs {
					g.must(t, ctx, "modprobe", "rdma_rxe")
					g.must(t, ctx, "rdma", "link", "add", "rxe_admin", "type", "rxe", "netdev", "eth1")
				}
				client.must(t, ctx, "ip", "link", "set", "eth1", "down")
			},
			after: func(t *testing.T) {
				client.must(t, ctx, "ip", "link", "set", "eth1", "up")
				for _, g := range gs {
					if links := g.must(t, ctx, "rdma", "link", "show"); !strings.Contains(links, "rxe_admin") {
						t.Errorf("%s: the admin's rxe_admin is gone: %s", g.name, links)
					}
					g.must(t, ctx, "rdma", "link", "delete", "rxe_admin")
				}
			},
			code: 2,
			want: []*regexp.Regexp{
				regexp.MustCompile(`host "client": rdma "client": device rxe_admin port 1: port is DOWN \(physical state [A-Z_]+\), not ACTIVE: bring the link up \(.*ip link set DEV up`),
			},
		},
		{
			name: "siw_unsupported",
			src:  unsupported,
			code: 1,
			want: []*regexp.Regexp{
				regexp.MustCompile(`(?s)on [^ ]*siw_unsupported\.hcl:\d+,\d+-\d+:.*tool   = "ib_atomic_bw"`),
				regexp.MustCompile(`(?s)on [^ ]*siw_unsupported\.hcl:\d+,\d+-\d+:.*transport = "UD"`),
				regexp.MustCompile(`iWARP has no atomic operations .*Run it over rxe \(Soft-RoCE\) instead`),
				regexp.MustCompile(`iWARP carries only RC .*, not UD .*; use transport = "RC"`),
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := []byte(c.src)
			if c.lab != "" {
				if src, err = os.ReadFile(filepath.Join(root, "labs", c.lab+".hcl")); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			labFile := filepath.Join(dir, c.name+".hcl")
			// SSH over the management network (the forwarded ports), so a
			// data NIC set down leaves the host reachable.
			direct := map[string]string{"server": set.VMs[0].Addr, "client": set.VMs[1].Addr}
			if err := os.WriteFile(labFile, retarget(t, src, direct, nil, "", set.VMs[0].IdentityFile, khFile), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.before != nil {
				c.before(t)
			}
			if c.after != nil {
				defer c.after(t)
			}
			out := filepath.Join(dir, "run")
			args := []string{"run", "--out", out}
			for _, v := range c.vars {
				args = append(args, "-var", v)
			}
			t0 := time.Now()
			cmd := rlabCommand(ctx, t, rlabLimit, bin, append(args, labFile)...)
			cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
			b, err := cmd.CombinedOutput()
			t.Logf("rlab %s (%s):\n%s", strings.Join(args, " "), time.Since(t0).Round(time.Second), b)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Errorf("rlab run: %v, want exit code %d", err, c.code)
			}
			for _, re := range c.want {
				if !re.Match(b) {
					t.Errorf("rlab's output does not match %s", re)
				}
			}
			// Nothing left behind: no device rlab made, no agent.
			for _, g := range []*guest{server, client} {
				links, _, _ := g.run(ctx, time.Minute, "rdma", "link", "show")
				if strings.Contains(links, "rxe_eth1") || strings.Contains(links, "siw_eth1") {
					t.Errorf("%s: a device rlab made is left: %s", g.name, links)
				}
				if err := g.waitUntil(ctx, 30*time.Second, "gone", "sh", "-c", "pgrep -f '[r]lab-agent' >/dev/null || echo gone"); err != nil {
					ps, _, _ := g.run(ctx, time.Minute, "pgrep", "-af", "[r]lab-agent")
					t.Errorf("%s: an rlab agent is still running: %s", g.name, ps)
				}
			}
		})
	}
}

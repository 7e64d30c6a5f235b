package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/iwarp"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/roce"
)

// BTH opcodes (IBA 9.2; RC unless said) the capture checks read.
var (
	opWrite    = []int{6, 7, 8, 10}            // RDMA WRITE First, Middle, Last, Only
	opReadReq  = []int{12}                     // RDMA READ Request
	opReadResp = []int{13, 14, 15, 16}         // RDMA READ Response First, Middle, Last, Only
	opACK      = []int{17}                     // Acknowledge
	opUDSend   = 100                           // UD SEND Only: how CM MADs (to QP 1) travel
	cmSetup    = []string{"REQ", "REP", "RTU"} // one of each per RDMA-CM connection
)

// exampleLab is one SSH example of labs/ run on the shared VM pair.
type exampleLab struct {
	name string
	vars []string // -var NAME=VALUE, sized for TCG
	// direct: the lab's own jump host → the VM (index) it is, reached at
	// 127.0.0.1:<forwarded port>. data: a host block → the VM data address
	// it gets, reached through an added jump host "vm_gateway" (the server
	// VM), for a lab whose hosts must be reached at their data address.
	// Other hosts keep their address (through the lab's jump host). A tcp
	// workload dials its server's rxe address whichever way SSH goes
	// (checkTCPDialed).
	direct map[string]int
	data   map[string]string
	files  map[string]string // written beside the lab
	// captures: capture file stem ("cap.control") → what its comment
	// promises, checked on the summary of all its ring files.
	captures map[string]func(t *testing.T, s *captureSum)
	// before runs on the guests (server, client) before the run; after,
	// after it, with the run folder.
	before func(t *testing.T, ctx context.Context, gs []*guest)
	after  func(t *testing.T, ctx context.Context, gs []*guest, out string)
	// createsNone: the lab's devices are all rdma blocks (found, never
	// created), so there is no created device whose removal to check.
	createsNone bool
	// check, when set, checks the run dir and the VMs after the run.
	check func(ctx context.Context, t *testing.T, runDir string, set *Set)
}

// TestE2EExampleLabs runs every example lab written for SSH hosts
// (walkthrough, nightly, cloud-bastion, class) with the real rlab binary on
// one pair of local VMs booted once: each lab is copied with its host
// blocks pointed at the VMs (user root, the VMs' login key, a known_hosts
// with each VM's exact key under its forwarded port and its data address),
// and only the -var values a lab already has sized for TCG. A jump host
// (cloud-bastion, class) is the server VM itself, reaching both VMs over the
// data network. Every workload must end ok with measured samples, every rxe
// device must be removed, and every capture must hold what the lab's
// comment says. (quickstart and operations-tour boot their own VMs in
// TestE2ERlabRun; netns-tcp runs on the netns bed in TestExampleNetnsLab.)
func TestE2EExampleLabs(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	set, khFile, root := bootExamplePair(ctx, t)
	only := os.Getenv("RLAB_VM_LABS")
	for _, el := range exampleLabs() {
		if only != "" && !strings.Contains(","+only+",", ","+el.name+",") {
			continue
		}
		t.Run(el.name, func(t *testing.T) { runExampleLab(ctx, t, bin, root, set, khFile, el) })
	}
	// Not an example: a run ended by Ctrl-C and by SIGKILL (e2e_impair_test.go).
	if only == "" || strings.Contains(","+only+",", ",impair-interrupt,") {
		t.Run("impair-interrupt", func(t *testing.T) { testImpairInterrupt(ctx, t, bin, root, set, khFile) })
	}
	// The RDMA mistakes (e2e_errors_test.go): seconds each, on this pair.
	if only == "" || strings.Contains(","+only+",", ",errors,") {
		t.Run("errors", func(t *testing.T) { runErrorCases(ctx, t, bin, root, set, khFile) })
	}
}

// bootExamplePair boots the server/client pair the examples run on (torn
// down at the test's end) and writes the known_hosts they use.
func bootExamplePair(ctx context.Context, t *testing.T) (set *Set, khFile, root string) {
	t.Helper()
	im, err := image.Ensure(ctx, image.DefaultRecipe(""), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root, err = filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	ms := []Machine{
		{Name: "server", Slug: "server", BootTimeout: 10 * time.Minute, Networks: []Network{{Name: "rdma", Address: "10.99.0.1/24"}}},
		{Name: "client", Slug: "client", BootTimeout: 10 * time.Minute, Networks: []Network{{Name: "rdma", Address: "10.99.0.2/24"}}},
	}
	t0 := time.Now()
	set, err = Boot(ctx, ms, runDir, Options{Image: im, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 VMs booted in %s (%s)", time.Since(t0).Round(time.Second), set.AccelNote)
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 2*time.Minute)
		defer c()
		if err := set.Shutdown(sctx); err != nil {
			t.Error(err)
		}
		for _, v := range set.VMs {
			if syscall.Kill(v.PID, 0) == nil {
				t.Errorf("qemu of %s (pid %d) still running", v.Name, v.PID)
			}
		}
	})
	// Each VM's exact host key, under its forwarded port and under its data
	// address (port 22, what a jump host dials).
	var kh strings.Builder
	for _, v := range set.VMs {
		data, _, _ := strings.Cut(v.Networks[0].Address, "/")
		for _, name := range []string{knownhosts.Normalize(v.Addr), data} {
			kh.WriteString(knownhosts.Line([]string{name}, v.HostKey) + "\n")
		}
	}
	khFile = filepath.Join(runDir, "known_hosts_labs")
	if err := os.WriteFile(khFile, []byte(kh.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return set, khFile, root
}

// runExampleLab runs one example on the booted pair and checks it.
func runExampleLab(ctx context.Context, t *testing.T, bin, root string, set *Set, khFile string, el exampleLab) {
	src, err := os.ReadFile(filepath.Join(root, "labs", el.name+".hcl"))
	if err != nil {
		t.Fatal(err)
	}
	direct := map[string]string{}
	for h, i := range el.direct {
		direct[h] = set.VMs[i].Addr
	}
	dir := t.TempDir()
	labFile := filepath.Join(dir, el.name+".hcl")
	if err := os.WriteFile(labFile, retarget(t, src, direct, el.data, set.VMs[0].Addr, set.VMs[0].IdentityFile, khFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, body := range el.files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var gs []*guest
	if el.before != nil || el.after != nil {
		for _, v := range set.VMs {
			c, err := v.Dial(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			gs = append(gs, &guest{name: v.Name, c: c})
		}
	}
	if el.before != nil {
		el.before(t, ctx, gs)
	}
	out := filepath.Join(dir, "run")
	keepOnFailure(t, out)
	args := []string{"run", "--out", out}
	for _, v := range el.vars {
		args = append(args, "-var", v)
	}
	t0 := time.Now()
	cmd := rlabCommand(ctx, t, rlabLimit, bin, append(args, labFile)...)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	b, err := cmd.CombinedOutput()
	t.Logf("rlab %s (%s):\n%s", strings.Join(append(args, "labs/"+el.name+".hcl"), " "), time.Since(t0).Round(time.Second), b)
	for again := 1; again <= siwReruns && err != nil && siwFlake(b); again++ {
		// A race in the guest kernel's siw (Debian 6.1 under TCG), seen on
		// the landed tree too (about 1 run in 14, and twice in a row in
		// the CI run of 2026-11-28 12:03 at load 4-6): the lab runs again,
		// said here, so the kernel's flake does not fail the suite. Any
		// other failure, or a stall every time, still does.
		t.Logf("labs/%s.hcl: siw's known race (rping stalled, or rdma_cm refused a listener it showed): running it again (%d of %d)", el.name, again, siwReruns)
		out = filepath.Join(dir, fmt.Sprintf("run-again-%d", again))
		keepOnFailure(t, out)
		args[2] = out
		t0 = time.Now()
		cmd = rlabCommand(ctx, t, rlabLimit, bin, append(args, labFile)...)
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
		b, err = cmd.CombinedOutput()
		t.Logf("rlab %s (%s):\n%s", strings.Join(append(args, "labs/"+el.name+".hcl"), " "), time.Since(t0).Round(time.Second), b)
	}
	if err != nil {
		t.Errorf("rlab run labs/%s.hcl: %v", el.name, err)
	}
	checkResults(t, out)
	checkTCPDialed(t, out, dataNet)
	if !el.createsNone {
		checkRXETeardown(t, out)
	}
	if el.after != nil {
		el.after(t, ctx, gs, out)
	}
	for stem, check := range el.captures {
		s := sumCaptures(t, out, stem)
		t.Logf("%s: %d frames, opcodes %v, CM %v", stem, s.frames, s.ops, s.cm)
		if s.frames == 0 {
			t.Errorf("capture %s is empty", stem)
			continue
		}
		check(t, s)
		if rec := os.Getenv("RLAB_VM_RECORD"); rec != "" && s.iwConns > 0 {
			recordIWARP(t, out, stem, filepath.Join(rec, "testdata/iwarp/recorded"), el.name)
		}
	}
	if len(el.captures) > 0 {
		checkConnectionsNamed(ctx, t, bin, out)
	}
	if el.check != nil {
		el.check(ctx, t, out, set)
	}
}

// checkConnectionsNamed runs `rlab pcap --json RUN` on the run and checks
// that every connection its captures hold is named by the workload that made
// it (issue 26 item 2: by a QPN in the tool's output, a tcp server's port or
// the workload's time window), RoCEv2 and iWARP alike. SSH (port 22), which a
// jump through the server's data address carries, is no workload's.
func checkConnectionsNamed(ctx context.Context, t *testing.T, bin, out string) {
	t.Helper()
	b, err := rlabCommand(ctx, t, rlabLimit, bin, "pcap", "--json", out).Output()
	if err != nil {
		t.Errorf("rlab pcap --json %s: %v", out, err)
		return
	}
	type conn struct {
		Transport  string   `json:"transport"`
		Connection string   `json:"connection"`
		Packets    int      `json:"packets"`
		Workloads  []string `json:"workloads"`
		By         string   `json:"by"`
	}
	type capture struct {
		File string `json:"file"`
		Run  *struct {
			Connections []conn `json:"connections"`
		} `json:"run"`
	}
	var caps []capture
	if err := json.Unmarshal(b, &caps); err != nil {
		// One capture is printed as one object.
		var c capture
		if err2 := json.Unmarshal(b, &c); err2 != nil {
			t.Errorf("rlab pcap --json %s: %v", out, err)
			return
		}
		caps = []capture{c}
	}
	named, all := 0, 0
	for _, c := range caps {
		if c.Run == nil {
			t.Errorf("%s: rlab pcap read it without its run", c.File)
			continue
		}
		for _, x := range c.Run.Connections {
			if strings.Contains(x.Connection, ":22 ") || strings.HasSuffix(x.Connection, ":22") {
				continue
			}
			all++
			if len(x.Workloads) == 0 {
				t.Errorf("%s: %s %s (%d packets) is named by no workload", filepath.Base(c.File), x.Transport, x.Connection, x.Packets)
				continue
			}
			named++
		}
	}
	t.Logf("rlab pcap named %d of %d connections by workload", named, all)
	if all == 0 {
		t.Errorf("rlab pcap %s: no connection in the run's captures", out)
	}
}

// dataNet is the pair's data network (bootExamplePair).
var dataNet = netip.MustParsePrefix("10.99.0.0/24")

// checkTCPDialed reads results.json: every tcp sample's client dialed an
// address on the data network (the server's rxe netdev), never the SSH
// address, which for a direct host is a port forward on this machine.
func checkTCPDialed(t *testing.T, dir string, data netip.Prefix) {
	t.Helper()
	run, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range run.Samples {
		if s.Metric != "tcp_bw" {
			continue
		}
		addr, from := s.Meta.Extra["server_addr"], s.Meta.Extra["server_addr_from"]
		t.Logf("tcp %s repeat %d dialed %s (%s)", s.Meta.Workload, s.Meta.Repeat, addr, from)
		if a, err := netip.ParseAddr(addr); err != nil || !data.Contains(a) || !strings.HasPrefix(from, "rxe ") {
			t.Errorf("tcp %s dialed %q (%s), want the server rxe's address on %s", s.Meta.Workload, addr, from, data)
		}
	}
}

// exampleLabs are the SSH examples and what their captures must hold.
func exampleLabs() []exampleLab {
	oneStudent := `{"bastion_ip": {"value": "127.0.0.1"}, "students": {"value": {"ana": {"server_ip": "10.99.0.1", "client_ip": "10.99.0.2"}}}}`
	return []exampleLab{
		{
			name: "walkthrough",
			// 16 MiB each way, not 1 GiB: TCG moves ~0.1 Gb/s, and the
			// captures' checks need a handful of each opcode (64 MiB took
			// 13 s of transfers and 4 s to fetch the data capture).
			vars: []string{"iterations=16"},
			// SSH over the management network (the port forwards): the tcp
			// baseline must still cross the data network (checkTCPDialed).
			direct: map[string]int{"server": 0, "client": 1},
			captures: map[string]func(*testing.T, *captureSum){
				// "the REQ, REP and RTU that set up each connection ... are
				// MADs sent to the well-known QP 1": two connections, nothing else.
				"cap.control": func(t *testing.T, s *captureSum) {
					for _, m := range cmSetup {
						if s.cm[m] < 2 {
							t.Errorf("%d CM %s, want one per perftest connection (2): %v", s.cm[m], m, s.cm)
						}
					}
					for op, n := range s.ops {
						if op != opUDSend {
							t.Errorf("%d packets of opcode %d: the control capture must hold CM MADs only", n, op)
						}
					}
				},
				// "every other RoCEv2 packet of the two transfers (RDMA WRITE
				// and READ requests, responses and ACKs)".
				"cap.data": func(t *testing.T, s *captureSum) {
					for what, ops := range map[string][]int{"WRITE": opWrite, "READ request": opReadReq, "READ response": opReadResp, "ACK": opACK} {
						if s.count(ops) == 0 {
							t.Errorf("no RDMA %s packets (opcodes %v); have %v", what, ops, s.ops)
						}
					}
					if len(s.cm) > 0 {
						t.Errorf("CM messages %v in the data capture", s.cm)
					}
				},
			},
		},
		{
			name: "nightly",
			// TCG on a loaded machine (load 19 on two cores seen): 100 MiB
			// per 1 MiB repeat (200 timed out at 2m), p99 up to 80 ms (48 ms seen).
			// 20 per size and repeat are enough for the expects to be
			// judged (100 MiB per 1 MiB repeat took 18 of the run's 64 s).
			// 1,000 round trips per latency repeat (5,000 took 16-22 s)
			// and 3 s of TCP (10 s) judge the same expects.
			vars:   []string{"iterations=20", "lat_iterations=1000", "tcp_duration=3s", "min_write_gbps=0.005", "max_write_lat_us=20000", "min_tcp_gbps=0.01"},
			direct: map[string]int{"server": 0, "client": 1},
		},
		{
			name: "cloud-bastion",
			// 256 MiB of TCP, not 2 GiB (47 s at TCG's 0.36 Gb/s), and 5 s
			// of ib_write_bw: enough for the samples, the data address
			// checkTCPDialed reads and the capture's WRITEs and ACKs.
			vars:   []string{"netdev=eth1", `private_addresses={server="10.99.0.1", client="10.99.0.2"}`, "duration=5s", "tcp_bytes=256MiB"},
			direct: map[string]int{"bastion": 0},
			captures: map[string]func(*testing.T, *captureSum){
				// RoCEv2 (udp port 4791) on the client during ib_write_bw: the
				// WRITEs coming in and the ACKs going out.
				"cap.roce": func(t *testing.T, s *captureSum) {
					if s.count(opWrite) == 0 || s.count(opACK) == 0 {
						t.Errorf("want RDMA WRITE and ACK packets; have %v", s.ops)
					}
				},
			},
		},
		{
			name:   "class",
			vars:   []string{"terraform_output=one-student.json"},
			direct: map[string]int{"bastion": 0},
			files:  map[string]string{"one-student.json": oneStudent},
		},
		{
			// siw made and removed by rlab: perftest (-R, added by rlab)
			// and rping over it.
			name: "iwarp",
			vars: []string{"iterations=200"},
			data: map[string]string{"server": "10.99.0.1", "client": "10.99.0.2"},
			after: func(t *testing.T, ctx context.Context, gs []*guest, out string) {
				for _, g := range gs {
					if links := g.must(t, ctx, "rdma", "link", "show"); strings.Contains(links, "siw_eth1") {
						t.Errorf("%s: siw_eth1 outlived the run: %s", g.name, links)
					}
				}
				checkSamples(t, out, "write_iwarp", "bw_avg")
				checkSamples(t, out, "rping_iwarp", "rping_count")
				// The agent says it saw siw's TCP socket listen beside the
				// cm_id, and when it had to wait for it (proto.Ready.IWARP).
				if b, err := os.ReadFile(filepath.Join(out, "hosts", "server", "logs", "agent.log")); err == nil {
					for _, l := range strings.Split(string(b), "\n") {
						if strings.Contains(l, "msg=\"iwarp: ") {
							t.Logf("server agent: %s", l)
						}
					}
				}
				if t.Failed() {
					logHostLogs(t, out)
				}
			},
			captures: map[string]func(*testing.T, *captureSum){
				// iWARP is TCP: frames, and no RoCEv2 (UDP 4791) packet at all;
				// engine/iwarp finds both workloads' connections by their MPA
				// handshake, perftest's RDMA WRITEs and rping's Sends.
				"cap.iwarp": func(t *testing.T, s *captureSum) {
					if len(s.ops) > 0 || len(s.cm) > 0 {
						t.Errorf("RoCEv2 packets in the iWARP capture: %v %v", s.ops, s.cm)
					}
					checkIWARPCapture(t, s, 2, iwarp.OpWrite, iwarp.OpSend)
				},
			},
		},
		{
			// rxe_admin made "by an admin" over ssh before the run, used
			// through the rdma blocks, and still there after it (state.json:
			// found, not created). Alone on eth1: the RDMA CM binds by IP
			// address, so beside a siw on the same netdev it would take the
			// siw's connections (seen in the first VM run of iwarp).
			name:        "found",
			vars:        []string{"iterations=200"},
			createsNone: true,
			data:        map[string]string{"server": "10.99.0.1", "client": "10.99.0.2"},
			before: func(t *testing.T, ctx context.Context, gs []*guest) {
				for _, g := range gs {
					g.must(t, ctx, "modprobe", "rdma_rxe")
					g.must(t, ctx, "rdma", "link", "add", "rxe_admin", "type", "rxe", "netdev", "eth1")
				}
			},
			after: func(t *testing.T, ctx context.Context, gs []*guest, out string) {
				for _, g := range gs {
					links := g.must(t, ctx, "rdma", "link", "show")
					if !strings.Contains(links, "rxe_admin") {
						t.Errorf("%s: rxe_admin is gone after the run: %s", g.name, links)
					}
					g.must(t, ctx, "rdma", "link", "delete", "rxe_admin")
				}
				checkFoundKept(t, out, "rxe_admin")
				checkSamples(t, out, "write", "bw_avg")
				checkSamples(t, out, "rping", "rping_count")
				if t.Failed() {
					logHostLogs(t, out)
				}
			},
		},
		{
			name: "lossy",
			// Two points of the sweep, 0 and 1 %, 2 s each: TCG moves ~0.1
			// Gb/s (thousands of packets a second), so 1 % loses dozens.
			vars: []string{`loss=["0","1"]`, "seconds=2s"},
			data: map[string]string{"server": "10.99.0.1", "client": "10.99.0.2"},
			captures: map[string]func(*testing.T, *captureSum){
				// The server's view of each RDMA point (one capture each):
				// WRITEs resent after the losses at 1 %, and the NAKs it
				// answered with; no NAK at 0 %. checkLossy reads the same
				// per workload, through results.json.
				"cap.roce.1": func(t *testing.T, s *captureSum) {
					t.Logf("cap.roce.1: %d retransmitted PSNs, %d NAKs", s.retransmits, s.naks)
					if s.retransmits == 0 || s.naks == 0 {
						t.Errorf("%d retransmitted PSNs and %d NAKs, want both above zero with 1 %% loss on the client's link (opcodes %v)", s.retransmits, s.naks, s.ops)
					}
				},
				"cap.roce.0": func(t *testing.T, s *captureSum) {
					t.Logf("cap.roce.0: %d retransmitted PSNs (ACK timeouts under TCG), %d NAKs", s.retransmits, s.naks)
					if s.naks != 0 {
						t.Errorf("%d NAKs at 0 %% loss, want none", s.naks)
					}
				},
			},
			check: checkLossy,
		},
		{
			// rxe on a macvlan of eth1 (the RDMA CM then resolves eth1's
			// address to the siw alone: the lab's comment says why), siw on
			// eth1, the tcp baseline over the macvlan: 3 s each at 64 KiB.
			// The macvlan's /25 lies inside the data network, so the
			// baseline still dials an address of it (checkTCPDialed).
			name: "transports",
			vars: []string{"seconds=3s"},
			data: map[string]string{"server": "10.99.0.1", "client": "10.99.0.2"},
			before: func(t *testing.T, ctx context.Context, gs []*guest) {
				mv := map[string]string{"server": "10.99.0.129/25", "client": "10.99.0.130/25"}
				for _, g := range gs {
					g.must(t, ctx, "ip", "link", "add", "link", "eth1", "name", "mveth1", "type", "macvlan", "mode", "bridge")
					g.must(t, ctx, "ip", "addr", "add", mv[g.name], "dev", "mveth1")
					g.must(t, ctx, "ip", "link", "set", "mveth1", "up")
					g.must(t, ctx, "sysctl", "-w", "net.ipv4.conf.all.arp_ignore=1")
				}
			},
			after:    checkTransports,
			captures: transportCaptures,
		},
	}
}

// checkLossy: the impairments were in force, as the agent read the root
// qdisc back (journaled in state.json), and none is left on the VMs.
func checkLossy(ctx context.Context, t *testing.T, runDir string, set *Set) {
	var st struct {
		Effects []struct {
			Host, Kind, ID, Netdev, Detail string
			Undone                         bool
		} `json:"effects"`
	}
	b, err := os.ReadFile(filepath.Join(runDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range st.Effects {
		if e.Kind == "impair" {
			got[e.ID] = e.Host + " " + e.Netdev + " " + e.Detail
			if !e.Undone {
				t.Errorf("impairment %s on %s was not removed: %+v", e.ID, e.Host, e)
			}
		}
	}
	// The root qdisc the agent read back from the guest's kernel once
	// applied, then after removing it.
	want := map[string]string{
		`rdma_loss["0"]`: "client eth1 applied netem 524c: loss 0%", `rdma_loss["1"]`: "client eth1 applied netem 524c: loss 1%",
		`tcp_loss["0"]`: "client eth1 applied netem 524c: loss 0%", `tcp_loss["1"]`: "client eth1 applied netem 524c: loss 1%",
	}
	for id, prefix := range want {
		if !strings.HasPrefix(got[id], prefix) || !strings.Contains(got[id], "; removed, root qdisc now ") || strings.HasSuffix(got[id], "netem 524c:") {
			t.Errorf("impairment %s: journal says %q, want %q, then removed", id, got[id], prefix)
		}
		// Under loss, 0 % included, each packet goes on its own (a TCP
		// sender's GSO bursts would be dropped whole, 1 % of bursts: one
		// run lost no packet of 7.8 MB), and the netdev's own value
		// comes back.
		if !strings.Contains(got[id], "gso_max_segs 1 (was ") || !strings.Contains(got[id], " again") {
			t.Errorf("impairment %s: journal says %q: want gso_max_segs lowered to 1, then given back", id, got[id])
		}
	}
	checkLossPoints(t, runDir)
	if rec := os.Getenv("RLAB_VM_RECORD"); rec != "" {
		recordLossy(t, runDir, filepath.Join(rec, "testdata/report/lossy"))
	}
	for _, v := range set.VMs {
		c, err := v.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g := &guest{name: v.Name, c: c}
		out := g.must(t, ctx, "tc", "qdisc", "show", "dev", "eth1")
		link := g.must(t, ctx, "ip", "-d", "link", "show", "dev", "eth1")
		c.Close()
		if strings.Contains(link, "gso_max_segs 1 ") {
			t.Errorf("%s: eth1 keeps gso_max_segs 1 after the run: %s", v.Name, link)
		}
		t.Logf("%s: tc qdisc show dev eth1: %s", v.Name, strings.TrimSpace(out))
		if strings.Contains(out, "netem") {
			t.Errorf("%s: netem left on eth1 after the run: %s", v.Name, out)
		}
	}
}

// retransCounters are rxe's counters that count retransmissions and
// sequence errors (engine/results Counters): at 1 % loss some must move.
// seqErrCounters are those a loss alone moves (a gap in the PSNs): none at
// 0 %. Under TCG an ACK can come later than the requester's ACK timeout
// (perftest's default, about 67 ms), so even at 0 % the requester resends
// (completer_retry_err) and the responder sees those requests twice
// (duplicate_request): measured 3 and 325 at 0 % in 2 s, against sequence
// errors 0 at 0 % and 54 at 1 % (out_of_seq_request, rcvd_seq_err; the
// capture's NAKs: 54).
var (
	retransCounters = []string{"duplicate_request", "out_of_seq_request", "rcvd_seq_err", "completer_retry_err", "retry_exceeded_err"}
	seqErrCounters  = []string{"out_of_seq_request", "rcvd_seq_err"}
)

// checkLossPoints: per point, from results.json, the samples carry the loss
// in force; rxe's retransmission counters moved at 1 %, its sequence-error
// counters at 1 % and not at 0 %; the capture of that point alone (the
// workload's captures in results.json) shows resent PSNs and NAKs at 1 %
// and no NAK at 0 % (timeouts resend without one); tcp's sender resent
// segments at 1 %.
func checkLossPoints(t *testing.T, runDir string) {
	t.Helper()
	run, err := results.ReadRun(runDir)
	if err != nil {
		t.Fatal(err)
	}
	tagged := map[string]string{}
	retrans := map[string]float64{} // workload -> sum of retransCounters
	seqErr := map[string]float64{}  // workload -> sum of seqErrCounters
	read := map[string]int{}
	tcpRetrans := map[string]float64{} // workload -> the sender's TCP_INFO
	for _, s := range run.Samples {
		w := s.Meta.Workload
		if s.Meta.ImpairLoss != nil {
			tagged[w] = strconv.FormatFloat(*s.Meta.ImpairLoss, 'f', -1, 64)
		}
		if s.Metric == "bw_avg" || s.Metric == "tcp_bw" {
			t.Logf("%s at %s %% loss: %s %.3f %s", w, tagged[w], s.Metric, s.Value, s.Unit)
		}
		if s.Metric == "tcpi_total_retrans" {
			t.Logf("%s: %s tcpi_total_retrans = %g", w, strings.Join(s.Meta.Hosts, ","), s.Value)
			tcpRetrans[w] = s.Value
		}
		if results.IsCounter(s) && slices.Contains(retransCounters, s.Metric) {
			t.Logf("%s: %s %s %s = %g", w, strings.Join(s.Meta.Hosts, ","), strings.Join(s.Meta.Devices, ","), s.Metric, s.Value)
			retrans[w] += s.Value
			read[w]++
			if slices.Contains(seqErrCounters, s.Metric) {
				seqErr[w] += s.Value
			}
		}
	}
	for _, w := range []string{`rdma["1"]`, `tcp["1"]`} {
		if tagged[w] != "1" {
			t.Errorf("samples of %s carry impair_loss %q, want 1", w, tagged[w])
		}
	}
	// TCP's why: the sender's connection resent segments at 1 %.
	if v, ok := tcpRetrans[`tcp["1"]`]; !ok || v == 0 {
		t.Errorf(`tcp["1"]: tcpi_total_retrans %g (read: %v), want above zero at 1 %% loss`, v, ok)
	}
	for _, p := range []struct {
		w    string
		lost bool
	}{{`rdma["0"]`, false}, {`rdma["1"]`, true}} {
		switch {
		case read[p.w] == 0:
			t.Errorf("%s: no samples of %v: the counters were not read", p.w, retransCounters)
		case p.lost && (retrans[p.w] == 0 || seqErr[p.w] == 0):
			t.Errorf("%s: %v sum to %g, %v to %g at 1 %% loss, want both above zero", p.w, retransCounters, retrans[p.w], seqErrCounters, seqErr[p.w])
		case !p.lost && seqErr[p.w] != 0:
			t.Errorf("%s: %v sum to %g at 0 %% loss, want 0", p.w, seqErrCounters, seqErr[p.w])
		}
		var files []string
		for _, w := range run.Workloads {
			if w.Name == p.w {
				files = w.Captures
			}
		}
		if len(files) == 0 {
			t.Errorf("%s: results.json lists no capture of its own", p.w)
			continue
		}
		var rt, naks int64
		for _, f := range files {
			sum := roce.NewSummary()
			if _, err := roce.ScanFile(filepath.Join(runDir, f), func(pk *roce.Packet) error { sum.Add(pk); return nil }); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			sum.Finish()
			for _, fl := range sum.Flows {
				rt += fl.Retransmits
				naks += fl.NAKs
			}
		}
		t.Logf("%s: its capture %v: %d retransmitted PSNs, %d NAKs", p.w, files, rt, naks)
		if p.lost && (rt == 0 || naks == 0) {
			t.Errorf("%s: its capture shows %d retransmitted PSNs and %d NAKs at 1 %% loss, want both above zero", p.w, rt, naks)
		}
		if !p.lost && naks != 0 {
			t.Errorf("%s: its capture shows %d NAKs at 0 %% loss, want none", p.w, naks)
		}
	}
}

// recordLossy keeps the run as engine/report's loss-sweep fixture
// (RLAB_VM_RECORD=<repo root>): results.json, the hosts' facts and the
// per-point captures, each cut to its first maxFixtureFrames frames so the
// fixture stays small (the report test reads them as they are).
func recordLossy(t *testing.T, runDir, dst string) {
	t.Helper()
	const maxFixtureFrames = 1500
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(runDir, "hosts", "*", "facts.json"))
	caps, _ := filepath.Glob(filepath.Join(runDir, "hosts", "*", "captures", "*"))
	for _, f := range append(append([]string{filepath.Join(runDir, "results.json")}, files...), caps...) {
		rel, _ := filepath.Rel(runDir, f)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(rel, "captures") {
			if err := cutPcap(f, out, maxFixtureFrames); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded the run into %s", dst)
}

// cutPcap copies the first n frames of a pcap file.
func cutPcap(src, dst string, n int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(uint32(r.Snaplen()), r.LinkType()); err != nil {
		out.Close()
		return err
	}
	for i := 0; i < n; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if err := w.WritePacket(ci, data); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// logHostLogs puts the hosts' workload logs of a failed run into the test
// output (the run folder is a TempDir, gone after the test).
func logHostLogs(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "hosts", "*", "logs", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		if len(b) > 4096 {
			b = b[len(b)-4096:]
		}
		t.Logf("%s:\n%s", strings.TrimPrefix(f, dir+"/"), b)
	}
}

// checkFoundKept: state.json journals the found device as not created, and
// nothing undid it.
func checkFoundKept(t *testing.T, dir, device string) {
	t.Helper()
	var st struct {
		Effects []struct {
			Host, Kind, ID  string
			Created, Undone bool
		} `json:"effects"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	n := 0
	for _, e := range st.Effects {
		if e.ID != device {
			continue
		}
		n++
		if e.Created || e.Undone {
			t.Errorf("%s on %s journaled created=%v undone=%v; want found and left", e.ID, e.Host, e.Created, e.Undone)
		}
	}
	if n == 0 {
		t.Errorf("state.json does not journal %s", device)
	}
}

// checkSamples: the workload recorded the metric.
func checkSamples(t *testing.T, dir, workload, metric string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Samples []struct {
			Metric string  `json:"metric"`
			Value  float64 `json:"value"`
			Meta   struct {
				Workload string `json:"workload"`
			} `json:"metadata"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Samples {
		if s.Meta.Workload == workload && s.Metric == metric && s.Value > 0 {
			return
		}
	}
	t.Errorf("results.json has no %s > 0 for workload %s", metric, workload)
}

// retarget points a lab's hosts at the VMs: every host and the ssh block
// log in as root with key and knownHosts and without become; a host in
// direct is reached at that 127.0.0.1:port; a host in data gets that address
// and jumps through an added host "vm_gateway" at gateway; the others keep
// their address (through the lab's own jump host).
func retarget(t *testing.T, src []byte, direct, data map[string]string, gateway, key, knownHosts string) []byte {
	t.Helper()
	f, diags := hclwrite.ParseConfig(src, "lab.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	login := func(b *hclwrite.Body) {
		b.SetAttributeValue("user", cty.StringVal("root"))
		b.SetAttributeValue("identity_file", cty.StringVal(key))
		b.SetAttributeValue("known_hosts", cty.StringVal(knownHosts))
		b.SetAttributeValue("become", cty.False)
	}
	at := func(b *hclwrite.Body, hostport string) {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		b.SetAttributeValue("address", cty.StringVal(h))
		b.SetAttributeValue("port", cty.NumberIntVal(int64(port)))
	}
	seen := map[string]bool{}
	for _, b := range f.Body().Blocks() {
		switch b.Type() {
		case "ssh":
			login(b.Body())
		case "host":
			login(b.Body())
			name := b.Labels()[0]
			if hp, ok := direct[name]; ok {
				at(b.Body(), hp)
				seen[name] = true
			}
			if addr, ok := data[name]; ok {
				at(b.Body(), net.JoinHostPort(addr, "22"))
				b.Body().SetAttributeTraversal("jump", hcl.Traversal{hcl.TraverseRoot{Name: "host"}, hcl.TraverseAttr{Name: "vm_gateway"}})
				seen[name] = true
			}
		}
	}
	for name := range direct {
		if !seen[name] {
			t.Fatalf("the lab has no host %q", name)
		}
	}
	for name := range data {
		if !seen[name] {
			t.Fatalf("the lab has no host %q", name)
		}
	}
	if len(data) > 0 {
		gw := f.Body().AppendNewBlock("host", []string{"vm_gateway"}).Body()
		at(gw, gateway)
		login(gw)
	}
	return f.Bytes()
}

// captureSum is what the RoCEv2 decoder found in a capture's files.
type captureSum struct {
	frames int64
	ops    map[int]int64  // BTH opcode → packets
	cm     map[string]int // CM message → count
	// Over all flows: go-back-N resends and NAKs (engine/roce's analysis).
	retransmits, naks int64
	// iWARP (engine/iwarp): connections found, their MPA frames, FPDUs by
	// RDMAP opcode, FPDUs whose CRC was checked and bad.
	iwConns  int
	mpa      int64
	iwOps    map[uint8]int64
	iwCRCBad int64
}

func (s *captureSum) count(ops []int) int64 {
	var n int64
	for _, o := range ops {
		n += s.ops[o]
	}
	return n
}

// sumCaptures decodes every file of a capture (tcpdump's ring numbers them
// <stem>...pcap0, 1, ...) on any host of a run.
func sumCaptures(t *testing.T, runDir, stem string) *captureSum {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(runDir, "hosts", "*", "captures", stem+".*"))
	s := &captureSum{ops: map[int]int64{}, cm: map[string]int{}, iwOps: map[uint8]int64{}}
	for _, f := range files {
		sum := roce.NewSummary()
		iw := iwarp.NewAnalyzer()
		if _, err := roce.ScanFile(f, func(p *roce.Packet) error { sum.Add(p); iw.Add(p); return nil }); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sum.Finish()
		iws := iw.Finish()
		s.iwConns += len(iws.Conns)
		for _, c := range iws.Conns {
			for _, d := range c.Dirs {
				s.mpa += d.MPAFrames
				s.iwCRCBad += d.CRCBad
				for _, o := range d.Ops {
					s.iwOps[o.Opcode] += o.FPDUs
				}
			}
		}
		s.frames += sum.Frames
		for _, o := range sum.Opcodes {
			s.ops[int(o.Opcode)] += o.Packets
		}
		for _, e := range sum.CM {
			s.cm[e.Message]++
		}
		for _, fl := range sum.Flows {
			s.retransmits += fl.Retransmits
			s.naks += fl.NAKs
		}
	}
	if len(files) == 0 {
		all, _ := filepath.Glob(filepath.Join(runDir, "hosts", "*", "captures", "*"))
		t.Errorf("no files of capture %s; the run has %v", stem, all)
	}
	return s
}

// TestRetargetExampleLabs checks, without VMs, what TestE2EExampleLabs runs:
// each example rewritten for the VM pair loads with its -var values, every
// host logs in as root with the given key and known_hosts, the direct ones
// at 127.0.0.1:<port>, the others at a VM's data address through the jump
// host, and every capture the test checks is declared by the lab.
func TestRetargetExampleLabs(t *testing.T) {
	vms := []string{"127.0.0.1:40001", "127.0.0.1:40002"}
	data := map[string]bool{"10.99.0.1": true, "10.99.0.2": true}
	for _, el := range exampleLabs() {
		t.Run(el.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("../../labs", el.name+".hcl"))
			if err != nil {
				t.Fatal(err)
			}
			direct := map[string]string{}
			for h, i := range el.direct {
				direct[h] = vms[i]
			}
			dir := t.TempDir()
			p := filepath.Join(dir, el.name+".hcl")
			if err := os.WriteFile(p, retarget(t, src, direct, el.data, vms[0], "/k/id", "/k/kh"), 0o600); err != nil {
				t.Fatal(err)
			}
			for name, body := range el.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			vars := map[string]string{}
			for _, v := range el.vars {
				k, val, _ := strings.Cut(v, "=")
				vars[k] = val
			}
			l, diags := lab.Load([]string{p}, lab.LoadOptions{Vars: vars})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			for _, h := range l.Hosts {
				if h.User != "root" || h.IdentityFile != "/k/id" || h.KnownHosts != "/k/kh" || h.Become {
					t.Errorf("host %s: user %q key %q known_hosts %q become %v", h.Name, h.User, h.IdentityFile, h.KnownHosts, h.Become)
				}
				addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
				switch {
				case direct[h.Block] != "" || h.Block == "vm_gateway":
					want := direct[h.Block]
					if h.Block == "vm_gateway" {
						want = vms[0]
					}
					if addr != want {
						t.Errorf("host %s at %s, want %s", h.Name, addr, want)
					}
				case el.data[h.Block] != "":
					if h.Address != el.data[h.Block] || h.Port != 22 || h.JumpHost == nil || h.JumpHost.Block != "vm_gateway" {
						t.Errorf("host %s at %s jump %q, want %s:22 through vm_gateway", h.Name, addr, h.Jump, el.data[h.Block])
					}
				case !data[h.Address] || h.Port != 22 || h.JumpHost == nil || direct[h.JumpHost.Block] == "":
					t.Errorf("host %s at %s jump %q: want a VM data address through a direct host", h.Name, addr, h.Jump)
				}
			}
			for stem := range el.captures {
				found := false
				for _, c := range l.Captures {
					found = found || "cap."+c.Slug == stem
				}
				if !found {
					t.Errorf("the test checks capture %s, which the lab does not declare", stem)
				}
			}
		})
	}
}

// checkIWARPCapture: a siw capture holds at least conns iWARP connections,
// each with its MPA Request and Reply, FPDUs of every opcode in want, and
// no FPDU whose CRC was checked and bad.
func checkIWARPCapture(t *testing.T, s *captureSum, conns int, want ...uint8) {
	t.Helper()
	t.Logf("iWARP: %d connections, %d MPA frames, FPDUs by opcode %v", s.iwConns, s.mpa, s.iwOps)
	if s.iwConns < conns || s.mpa < int64(2*conns) {
		t.Errorf("%d iWARP connections with %d MPA frames, want at least %d with a Request and a Reply each", s.iwConns, s.mpa, conns)
	}
	for _, op := range want {
		if s.iwOps[op] == 0 {
			t.Errorf("no %s FPDU in the iWARP capture; have %v", iwarp.OpName(op), s.iwOps)
		}
	}
	if s.iwCRCBad > 0 {
		t.Errorf("%d FPDUs with a bad CRC32c", s.iwCRCBad)
	}
}

// recordIWARP keeps a siw capture (RLAB_VM_RECORD=<repo root>) where
// engine/iwarp's TestAgreesWithTshark compares it with tshark: the
// project's own siw captures, each cut to its first maxFixtureFrames frames.
func recordIWARP(t *testing.T, runDir, stem, dst, labName string) {
	t.Helper()
	const maxFixtureFrames = 3000
	files, _ := filepath.Glob(filepath.Join(runDir, "hosts", "*", "captures", stem+".*"))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		host := filepath.Base(filepath.Dir(filepath.Dir(f)))
		out := filepath.Join(dst, fmt.Sprintf("%s-%s-%s-%d.pcap", labName, host, strings.TrimPrefix(stem, "cap."), i))
		if err := cutPcap(f, out, maxFixtureFrames); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s as %s", f, out)
	}
}

// siwReruns is how many times a lab that failed only by siw's known race
// (siwFlake) runs again on the same VMs.
const siwReruns = 2

// siwFlake tells a run that failed only by siw's known race from one that
// failed: rping over siw stalled to its timeout, or an iWARP perftest
// client was refused by the rdma_cm listener its server had shown.
func siwFlake(out []byte) bool {
	o := string(out)
	stalled := strings.Contains(o, "TIMED OUT workload rping_iwarp")
	refused := strings.Contains(o, "FAILED workload write_iwarp") && strings.Contains(o, "Failed to connect through RDMA CM")
	return stalled || refused
}

// TestSIWFlake: only siw's two known races are run again; any other
// failure of the iwarp lab fails the test.
func TestSIWFlake(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"[00:05:06] TIMED OUT workload rping_iwarp after 5m0s: workload \"rping_iwarp\" (rping): timed out", true},
		{"[00:00:09] FAILED workload write_iwarp after 4.1s: ... 10.99.0.1: killed by segmentation fault: Failed to connect through RDMA CM.", true},
		{"[00:00:09] FAILED workload write_iwarp after 4.1s: ... parse output of ib_write_bw: result table has no rows", false},
		{"[00:00:09] FAILED workload rping_iwarp after 1s: exit 1", false},
		{"TIMED OUT workload write_siw after 5m0s", false},
		{"", false},
	} {
		if got := siwFlake([]byte(c.out)); got != c.want {
			t.Errorf("siwFlake(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

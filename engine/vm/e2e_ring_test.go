package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestE2ERing boots the three VMs labs/ring.hcl describes (its vm blocks:
// one network through the switch of hub.go at MTU 9000) once, and runs two
// labs on them with the real rlab binary, each with its hosts pointed at the
// VMs over SSH: ring.hcl and incast.hcl. (rlab's own boot of vm blocks is
// TestE2ERlabRun's; booting three VMs costs about 3 minutes of TCG, so both
// labs share one boot.)
//
// ring: each node's 8972-byte ping with don't-fragment reaches the next
// (jumbo frames cross the segment whole), the ring of ib_write_bw runs at
// once on real rxe at RoCE MTU 4096, and each node's capture holds RDMA
// WRITEs both to its next node and from its previous one; the switch's
// record is written at shutdown.
//
// incast: two clients write to one server alone, then together (a group);
// summary.md puts each client's bandwidth alone beside together.
//
// RLAB_VM_LABS=ring or =incast runs one of the two.
func TestE2ERing(t *testing.T) {
	bin := e2eBin(t)
	only := os.Getenv("RLAB_VM_LABS")
	names := func(lab string) bool { return only == "" || strings.Contains(","+only+",", ","+lab+",") }
	if !names("ring") && !names("incast") {
		t.Skip("RLAB_VM_LABS names neither ring nor incast")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	set := bootRing(ctx, t, root)
	if names("ring") {
		t.Run("ring", func(t *testing.T) { runRing(ctx, t, bin, root, set) })
	}
	if names("incast") {
		t.Run("incast", func(t *testing.T) { runIncast(ctx, t, bin, root, set) })
	}
	sctx, c := context.WithTimeout(context.Background(), 2*time.Minute)
	defer c()
	if err := set.Shutdown(sctx); err != nil {
		t.Error(err)
	}
	if names("ring") {
		// What the switch did: a lossy switch and a slow ring look alike
		// in the bandwidth alone.
		sw, err := os.ReadFile(filepath.Join(set.Dir, "net-ring.switch.json"))
		if err != nil {
			t.Errorf("the ring network's switch left no record: %v", err)
		}
		t.Logf("switch: %s", bytes.Join(bytes.Fields(sw), []byte(" ")))
	}
}

// bootRing boots the VMs of labs/ring.hcl's host blocks as rlab would
// (engine/run's LocalVMs.Boot: the same machines and networks), shut down
// at the test's end at the latest.
func bootRing(ctx context.Context, t *testing.T, root string) *Set {
	t.Helper()
	l, diags := lab.Load([]string{filepath.Join(root, "labs", "ring.hcl")}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var ms []Machine
	for _, h := range l.Hosts {
		m := Machine{Name: h.Name, Slug: h.Slug, MemoryBytes: h.VM.MemoryBytes, CPUs: h.VM.CPUs, BootTimeout: 10 * time.Minute}
		for _, n := range h.VM.Networks {
			m.Networks = append(m.Networks, Network{Name: n.Name, Address: n.Address, MTU: n.MTU})
		}
		ms = append(ms, m)
	}
	im, err := image.Ensure(ctx, image.DefaultRecipe(""), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	set, err := Boot(ctx, ms, t.TempDir(), Options{Image: im, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d VMs booted in %s (%s)", len(set.VMs), time.Since(t0).Round(time.Second), set.AccelNote)
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
	return set
}

// runOnRing runs a lab whose hosts retarget pointed at the ring's VMs and
// returns its run folder.
func runOnRing(ctx context.Context, t *testing.T, bin string, set *Set, name string, src []byte, vars ...string) string {
	t.Helper()
	dir := t.TempDir()
	labFile := filepath.Join(dir, name+".hcl")
	if err := os.WriteFile(labFile, src, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	keepOnFailure(t, out)
	t0 := time.Now()
	args := []string{"run", "--out", out}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	cmd := rlabCommand(ctx, t, rlabLimit, bin, append(args, labFile)...)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	b, err := cmd.CombinedOutput()
	t.Logf("rlab run labs/%s.hcl in %s:\n%s", name, time.Since(t0).Round(time.Second), b)
	if err != nil {
		t.Errorf("rlab run labs/%s.hcl: %v", name, err)
	}
	return out
}

// retargetRing points labs/ring.hcl's node hosts (for_each) at the VMs:
// no vm block, each node at its VM's forwarded port, root with the VMs' key
// and known_hosts.
func retargetRing(t *testing.T, src []byte, set *Set) []byte {
	t.Helper()
	f, diags := hclwrite.ParseConfig(src, "ring.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var ports []string
	for _, v := range set.VMs {
		_, p, err := net.SplitHostPort(v.Addr)
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, fmt.Sprintf("%q = %s", strings.TrimPrefix(v.Slug, "node."), p))
	}
	expr, diags := hclwrite.ParseConfig([]byte("port = {"+strings.Join(ports, ", ")+"}[each.key]\n"), "port.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	n := 0
	for _, b := range f.Body().Blocks() {
		if b.Type() != "host" || b.Labels()[0] != "node" {
			continue
		}
		n++
		for _, vb := range b.Body().Blocks() {
			if vb.Type() == "vm" {
				b.Body().RemoveBlock(vb)
			}
		}
		b.Body().SetAttributeValue("address", cty.StringVal("127.0.0.1"))
		b.Body().SetAttributeRaw("port", expr.Body().GetAttribute("port").Expr().BuildTokens(nil))
		b.Body().SetAttributeValue("user", cty.StringVal("root"))
		b.Body().SetAttributeValue("identity_file", cty.StringVal(set.VMs[0].IdentityFile))
		b.Body().SetAttributeValue("known_hosts", cty.StringVal(set.VMs[0].KnownHosts))
	}
	if n != 1 {
		t.Fatalf("ring.hcl has %d host \"node\" blocks, want 1", n)
	}
	return f.Bytes()
}

// runRing runs labs/ring.hcl on the VMs and checks what its comment says.
func runRing(ctx context.Context, t *testing.T, bin, root string, set *Set) {
	src, err := os.ReadFile(filepath.Join(root, "labs", "ring.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	out := runOnRing(ctx, t, bin, set, "ring", retargetRing(t, src, set))
	checkRXETeardown(t, out)
	rb, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run results.Run
	if err := json.Unmarshal(rb, &run); err != nil {
		t.Fatal(err)
	}
	if run.Status != results.RunOK || len(run.Workloads) != 6 {
		t.Errorf("run status %q (%s), %d workloads; want ok and 6", run.Status, run.Error, len(run.Workloads))
	}
	for _, w := range run.Workloads {
		if w.Status != results.StatusOK {
			t.Errorf("workload %s: %s: %s", w.Name, w.Status, w.Error)
		}
	}
	bw := map[string]float64{}
	for _, s := range run.Samples {
		if s.Meta.Tool != "ib_write_bw" || results.IsCounter(s) { // counter deltas carry no MTU
			continue
		}
		if s.Meta.MTU != 4096 {
			t.Errorf("%s %s: RoCE MTU %d, want 4096 on a 9000-byte network", s.Meta.Workload, s.Metric, s.Meta.MTU)
		}
		if s.Metric == "bw_avg" {
			bw[s.Meta.Workload] = s.Value
		}
	}
	addr := map[string]string{"n0": "10.99.0.1", "n1": "10.99.0.2", "n2": "10.99.0.3"}
	next := map[string]string{"n0": "n1", "n1": "n2", "n2": "n0"}
	prev := map[string]string{"n1": "n0", "n2": "n1", "n0": "n2"}
	for node := range next {
		w := fmt.Sprintf("ring[%q]", node)
		if bw[w] <= 0 {
			t.Errorf("%s: bw_avg %v, want a measured bandwidth", w, bw[w])
		}
		// The jumbo pings: all answered, none fragmented (-M do).
		ping, err := os.ReadFile(filepath.Join(out, "hosts", "node."+node, "logs", "wl.jumbo_ping."+node+".exec.r0.stdout"))
		if err != nil || !bytes.Contains(ping, []byte("3 received, 0% packet loss")) || !bytes.Contains(ping, []byte("8980 bytes from "+addr[next[node]])) {
			t.Errorf("node %s: 8972-byte DF pings to %s: %v\n%s", node, addr[next[node]], err, ping)
		}
		t.Logf("node %s: %s bw_avg %.3f Gb/s; ping: %s", node, w, bw[w], lastLine(ping))
		files, _ := filepath.Glob(filepath.Join(out, "hosts", "node."+node, "captures", "*.pcap*"))
		flows := map[string]int{}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeFlows(data, flows); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		to := addr[node] + ">" + addr[next[node]]
		from := addr[prev[node]] + ">" + addr[node]
		if flows[to] == 0 || flows[from] == 0 {
			t.Errorf("node %s capture %v: RDMA WRITE packets by flow %v, want both %s (to its next) and %s (from its previous)", node, files, flows, to, from)
		}
	}
}

// writeFlows counts the RoCEv2 RDMA WRITE packets (BTH opcodes 6-11) of a
// pcap by "src>dst" IPv4 address.
// runIncast runs labs/incast.hcl on the ring's VMs (server n0, clients n1
// and n2), 3 s per transfer: every workload measured, the together ones
// journaled in their group, and summary.md's "Alone vs together" table puts
// each client's bandwidth alone beside its bandwidth together.
func runIncast(ctx context.Context, t *testing.T, bin, root string, set *Set) {
	src, err := os.ReadFile(filepath.Join(root, "labs", "incast.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	direct := map[string]string{"server": set.VMs[0].Addr, "a": set.VMs[1].Addr, "b": set.VMs[2].Addr}
	out := runOnRing(ctx, t, bin, set, "incast", retarget(t, src, direct, nil, "", set.VMs[0].IdentityFile, set.VMs[0].KnownHosts), "seconds=3s")
	checkResults(t, out)
	checkRXETeardown(t, out)
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range run.Workloads {
		want := map[bool]string{true: "incast", false: ""}[strings.HasSuffix(w.Name, "_together")]
		if w.Group != want {
			t.Errorf("workload %s: group %q, want %q", w.Name, w.Group, want)
		}
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(sum), "## Alone vs together")
	table, _, _ = strings.Cut(table, "\n\n## ")
	t.Logf("summary.md, alone vs together:%s", table)
	for _, c := range []string{"a", "b"} {
		row := regexp.MustCompile(`\| incast \| ` + c + `_together \| ` + c + ` → server \| 64 KiB \| ` + c + `_alone \| [0-9.]+ [MG]b/s \| [0-9.]+ [MG]b/s \| [0-9.]+x \|`)
		if !ok || !row.MatchString(table) {
			t.Errorf("summary.md has no alone vs together row for client %s matching %s", c, row)
		}
	}
	if t.Failed() {
		logHostLogs(t, out)
	}
}

func writeFlows(pcap []byte, flows map[string]int) error {
	r, err := pcapgo.NewReader(bytes.NewReader(pcap))
	if err != nil {
		return err
	}
	for {
		data, _, err := r.ReadPacketData()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip == nil || udp == nil || udp.DstPort != 4791 || len(udp.Payload) < 12 {
			continue
		}
		if op := udp.Payload[0]; op >= 6 && op <= 11 {
			flows[fmt.Sprintf("%s>%s", ip.SrcIP, ip.DstIP)]++
		}
	}
}

func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return string(lines[len(lines)-1])
}

// TestRetargetRingLabs checks, without VMs, what TestE2ERing runs: ring.hcl
// with its node hosts at three forwarded ports instead of vm blocks, and
// incast.hcl with its three hosts there, both load with every host logging
// in as root with the VMs' key and known_hosts at its own VM.
func TestRetargetRingLabs(t *testing.T) {
	set := &Set{VMs: []*VM{
		{Machine: Machine{Slug: "node.n0"}, Addr: "127.0.0.1:40001", IdentityFile: "/k/id", KnownHosts: "/k/kh"},
		{Machine: Machine{Slug: "node.n1"}, Addr: "127.0.0.1:40002", IdentityFile: "/k/id", KnownHosts: "/k/kh"},
		{Machine: Machine{Slug: "node.n2"}, Addr: "127.0.0.1:40003", IdentityFile: "/k/id", KnownHosts: "/k/kh"},
	}}
	ring, err := os.ReadFile("../../labs/ring.hcl")
	if err != nil {
		t.Fatal(err)
	}
	incast, err := os.ReadFile("../../labs/incast.hcl")
	if err != nil {
		t.Fatal(err)
	}
	direct := map[string]string{"server": set.VMs[0].Addr, "a": set.VMs[1].Addr, "b": set.VMs[2].Addr}
	for name, tc := range map[string]struct {
		src  []byte
		want map[string]string // host → address:port
	}{
		"ring":   {retargetRing(t, ring, set), map[string]string{`node["n0"]`: "127.0.0.1:40001", `node["n1"]`: "127.0.0.1:40002", `node["n2"]`: "127.0.0.1:40003"}},
		"incast": {retarget(t, incast, direct, nil, "", "/k/id", "/k/kh"), map[string]string{"server": "127.0.0.1:40001", "a": "127.0.0.1:40002", "b": "127.0.0.1:40003"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name+".hcl")
			if err := os.WriteFile(p, tc.src, 0o600); err != nil {
				t.Fatal(err)
			}
			l, diags := lab.Load([]string{p}, lab.LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			got := map[string]string{}
			for _, h := range l.Hosts {
				if h.VM != nil || h.User != "root" || h.IdentityFile != "/k/id" || h.KnownHosts != "/k/kh" || h.Become {
					t.Errorf("host %s: vm %v user %q key %q known_hosts %q become %v", h.Name, h.VM != nil, h.User, h.IdentityFile, h.KnownHosts, h.Become)
				}
				got[h.Name] = net.JoinHostPort(h.Address, fmt.Sprint(h.Port))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("hosts at %v, want %v", got, tc.want)
			}
		})
	}
}

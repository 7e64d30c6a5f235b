package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/rlab-dev/rlab/engine/results"
)

// TestE2ERing runs labs/ring.hcl with the real rlab binary: three VMs on one
// network (the switch of hub.go) at MTU 9000. Each node's 8972-byte ping
// with don't-fragment reaches the next (jumbo frames cross the segment
// whole), the ring of ib_write_bw runs at once on real rxe at RoCE MTU 4096,
// and each node's capture holds RDMA WRITEs both to its next node and from
// its previous one. The one test that boots three VMs (about 4 minutes of
// TCG); RLAB_VM_LABS=ring runs it alone.
func TestE2ERing(t *testing.T) {
	bin := e2eBin(t)
	if only := os.Getenv("RLAB_VM_LABS"); only != "" && !bytes.Contains([]byte(","+only+","), []byte(",ring,")) {
		t.Skip("RLAB_VM_LABS does not name ring")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	out := filepath.Join(t.TempDir(), "run")
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, bin, "run", "--out", out, filepath.Join("labs", "ring.hcl"))
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	t.Logf("rlab run labs/ring.hcl in %s:\n%s", time.Since(t0).Round(time.Second), b)
	checkNoQEMU(t, out)
	if err != nil {
		t.Fatalf("rlab run: %v", err)
	}
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
	// What the switch did: a lossy switch and a slow ring look alike in
	// the bandwidth alone.
	sw, err := os.ReadFile(filepath.Join(out, "vm", "net-ring.switch.json"))
	if err != nil {
		t.Errorf("the ring network's switch left no record: %v", err)
	}
	t.Logf("switch: %s", bytes.Join(bytes.Fields(sw), []byte(" ")))
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

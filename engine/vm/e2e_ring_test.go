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
	checkResults(t, out)
	checkRXETeardown(t, out)
	rb, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run results.Run
	if err := json.Unmarshal(rb, &run); err != nil {
		t.Fatal(err)
	}
	for _, s := range run.Samples {
		if s.Meta.Tool == "ib_write_bw" && s.Meta.MTU != 4096 {
			t.Errorf("%s %s: RoCE MTU %d, want 4096 on a 9000-byte network", s.Meta.Workload, s.Metric, s.Meta.MTU)
		}
	}
	addr := map[string]string{"n0": "10.99.0.1", "n1": "10.99.0.2", "n2": "10.99.0.3"}
	next := map[string]string{"n0": "n1", "n1": "n2", "n2": "n0"}
	prev := map[string]string{"n1": "n0", "n2": "n1", "n0": "n2"}
	for node := range next {
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

package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
)

// trixieImmLab is ib_write_bw with --write_with_imm between two local VMs of
// Debian trixie (perftest 25.01, which has the flag; bookworm's 4.5 has
// not), with a capture of the data link.
const trixieImmLab = `lab "trixie-imm" {
  description = "perftest's write-with-immediate on trixie VMs, captured"
}

host "server" {
  vm {
    image = "trixie"
    network "rdma" { address = "10.99.0.1/24" }
  }
}

host "client" {
  vm {
    image = "trixie"
    network "rdma" { address = "10.99.0.2/24" }
  }
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

capture "roce" {
  host    = host.server
  netdev  = "eth1"
  filter  = "udp port 4791"
  snaplen = 128
}

workload "imm_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = [512]
  iterations = 300
  args       = ["--write_with_imm"]
}
`

// TestE2ETrixieWriteImm (issue 23 item 5): on two trixie VMs (restored from
// a saved guest) rlab runs ib_write_bw --write_with_imm over real rxe,
// preflight finds the flag in perftest 25.01's --help, and rlab pcap counts
// the RDMA WRITE Only with Immediate packets (BTH opcode 0x0b) in the run's
// capture: a 512-byte message fits one packet at the VMs' IB MTU of 1024, so
// each message is one WRITE Only with Immediate.
func TestE2ETrixieWriteImm(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	t0 := time.Now()
	im, err := image.Ensure(ctx, image.DefaultRecipe("trixie"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s in %s", im.Dir, time.Since(t0).Round(time.Second))
	root := e2eImage(ctx, t)
	dir := t.TempDir()
	labPath := filepath.Join(dir, "trixie-imm.hcl")
	if err := os.WriteFile(labPath, []byte(trixieImmLab), 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	for try := 1; ; try++ {
		out = filepath.Join(dir, fmt.Sprintf("run%d", try))
		keepOnFailure(t, out)
		cmd := rlabCommand(ctx, t, rlabLimit, bin, "run", "--out", out, labPath)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
		t1 := time.Now()
		b, err := cmd.CombinedOutput()
		t.Logf("rlab run (%s):\n%s", time.Since(t1).Round(time.Second), b)
		checkNoQEMU(t, out)
		if err == nil {
			break
		}
		if try == 1 && rxePanicked(string(b)) {
			// Debian trixie's kernel (6.12.118) double-faulted in
			// rdma_rxe's receiver under this workload in CI's stop 36:
			// a bug of the guest's kernel, which rlab names (its VM
			// stopped, the panic quoted). Once more, on fresh VMs.
			t.Logf("the guest's rdma_rxe panicked (a kernel bug, named by rlab above): running the lab once more")
			continue
		}
		t.Fatalf("rlab run: %v", err)
	}
	checkResults(t, out)
	pb, err := rlabCommand(ctx, t, rlabLimit, bin, "pcap", "--json", out).Output()
	if err != nil {
		t.Fatalf("rlab pcap --json: %v\n%s", err, pb)
	}
	var sum struct {
		Opcodes []struct {
			Opcode  uint8  `json:"opcode"`
			Name    string `json:"name"`
			Packets int64  `json:"packets"`
		} `json:"opcodes"`
	}
	if err := json.Unmarshal(pb, &sum); err != nil {
		t.Fatalf("rlab pcap --json: %v\n%s", err, pb)
	}
	var imm, plain int64
	var seen []string
	for _, o := range sum.Opcodes {
		seen = append(seen, o.Name)
		switch o.Opcode {
		case 0x0b:
			imm = o.Packets
			if !strings.Contains(o.Name, "Immediate") {
				t.Errorf("opcode 0x0b named %q", o.Name)
			}
		case 0x0a, 0x06, 0x07, 0x08:
			plain += o.Packets
		}
	}
	t.Logf("rlab pcap: %d RDMA WRITE Only with Immediate, %d other WRITE packets; opcodes %v", imm, plain, seen)
	if imm == 0 {
		t.Errorf("rlab pcap counts no RDMA WRITE Only with Immediate in the capture of ib_write_bw --write_with_imm")
	}
}

// rxePanicked says whether rlab's output names a VM that stopped because
// its guest's kernel panicked in rdma_rxe.
func rxePanicked(out string) bool {
	return strings.Contains(out, "its VM stopped") && strings.Contains(out, "the guest's kernel panicked") && strings.Contains(out, "[rdma_rxe]")
}

package vm

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// TestE2EClassVMs runs labs/class-vms.hcl with two students (four VMs, two
// networks named from the keys) and checks that each pair is its own
// segment: every workload ok, and each pair's capture holds RoCEv2 frames
// from its own two VMs only. Both pairs use the same addresses, so a frame
// of the other pair would show as a third or fourth MAC. (TestClassPairsOwnLinks
// proves the wiring without booting; this is the run on real VMs.)
func TestE2EClassVMs(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	out := filepath.Join(t.TempDir(), "run")
	keepOnFailure(t, out)
	cmd := rlabCommand(ctx, t, rlabLimit, bin, "run", "--out", out, "-var", `students=["ana","bo"]`, filepath.Join("labs", "class-vms.hcl"))
	cmd.Dir = root
	// The four VMs are restored from a saved guest (RLAB_VM_RESTORE=1; the
	// snapshot TestE2ERestore builds fits them): four TCG boots at once on
	// two cores take minutes, and this also proves restore through rlab run,
	// each restored VM with its own MAC on its pair's segment.
	cmd.Env = append(os.Environ(), RestoreEnv+"=1")
	b, err := cmd.CombinedOutput()
	t.Logf("rlab run labs/class-vms.hcl:\n%s", b)
	checkNoQEMU(t, out)
	if err != nil {
		t.Fatalf("rlab run: %v", err)
	}
	checkResults(t, out)
	for _, key := range []string{"ana", "bo"} {
		macs := map[string]int{}
		roce := 0
		err := filepath.WalkDir(filepath.Join(out, "hosts", "server."+key), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".pcap") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			r, err := pcapgo.NewReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			for {
				frame, _, err := r.ReadPacketData()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				p := gopacket.NewPacket(frame, r.LinkType(), gopacket.Default)
				if eth, ok := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); ok {
					macs[eth.SrcMAC.String()]++
				}
				if udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); ok && udp.DstPort == 4791 {
					roce++
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pair %s: %d RoCEv2 frames, source MACs %v", key, roce, macs)
		if roce == 0 {
			t.Errorf("pair %s: no RoCEv2 frame in its capture", key)
		}
		if len(macs) > 2 {
			t.Errorf("pair %s: its capture holds frames from %d MACs %v, want its own two VMs only", key, len(macs), macs)
		}
	}
}

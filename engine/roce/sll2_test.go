package roce

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket/pcapgo"
)

// TestClassicPcapSLL2 reads a classic pcap of link type LINUX_SLL2 (276),
// what `tcpdump -i any` writes, so what a capture with netdev = "any" pulls
// back: gopacket keeps the header's link type in a uint8 (276 reads as 20),
// and every frame was once counted as an unknown link type. The frames are
// the synthesized Ethernet fixture's, re-framed, so both files must give the
// same summary.
func TestClassicPcapSLL2(t *testing.T) {
	src := filepath.Join(pcapDir, "synth-rc-ud-cm.pcap")
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "any.pcap")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 262144)
	binary.LittleEndian.PutUint32(hdr[20:], LinkSLL2)
	w.Write(hdr)
	for {
		data, ci, err := rd.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sll := make([]byte, 20)
		copy(sll[0:2], data[12:14]) // protocol: the Ethernet type
		binary.BigEndian.PutUint32(sll[4:], 2)
		binary.BigEndian.PutUint16(sll[8:], 1) // ARPHRD_ETHER
		sll[11] = 6
		copy(sll[12:], data[6:12])
		frame := append(sll, data[14:]...)
		rec := make([]byte, 16)
		binary.LittleEndian.PutUint32(rec[0:], uint32(ci.Timestamp.Unix()))
		binary.LittleEndian.PutUint32(rec[4:], uint32(ci.Timestamp.Nanosecond()/1000))
		binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
		binary.LittleEndian.PutUint32(rec[12:], uint32(ci.Length-14+20))
		w.Write(rec)
		w.Write(frame)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	eth, _ := summarize(t, src, 0)
	any, _ := summarize(t, out, 0)
	if any.BadLink != 0 || any.RoCEPackets != eth.RoCEPackets || any.RoCEPackets == 0 {
		t.Errorf("SLL2 capture: %d unknown link type, %d RoCE packets; the Ethernet one: %d RoCE packets", any.BadLink, any.RoCEPackets, eth.RoCEPackets)
	}
	if d := cmp.Diff(len(eth.Flows), len(any.Flows)); d != "" {
		t.Errorf("flows (-eth +sll2):\n%s", d)
	}
}

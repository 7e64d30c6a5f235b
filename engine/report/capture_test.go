package report

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// mixedCapture writes a capture made from the real fixture: every RoCEv2
// frame, the 6th sent again at the end (a retransmitted PSN), and a TCP
// segment after each frame (a TCP baseline on the same link).
func mixedCapture(t *testing.T, file string) {
	t.Helper()
	in, err := os.Open(filepath.Join(fixture, "hosts/server/captures/cap.roce.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	var again []byte
	var last time.Time
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			again = append([]byte(nil), data...)
		}
		seg := tcpSegment(t, 1000)
		ci2 := gopacket.CaptureInfo{Timestamp: ci.Timestamp.Add(time.Microsecond), CaptureLength: len(seg), Length: len(seg)}
		if err := w.WritePacket(ci2, seg); err != nil {
			t.Fatal(err)
		}
		last = ci.Timestamp
	}
	ci := gopacket.CaptureInfo{Timestamp: last.Add(100 * time.Microsecond), CaptureLength: len(again), Length: len(again)}
	if err := w.WritePacket(ci, again); err != nil {
		t.Fatal(err)
	}
}

func tcpSegment(t *testing.T, payload int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0x52, 0x54, 0, 0x99, 0, 2}, DstMAC: net.HardwareAddr{0x52, 0x54, 0, 0x99, 0, 1}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{10, 99, 0, 2}, DstIP: net.IP{10, 99, 0, 1}}
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 5201, Seq: 1, ACK: true, Window: 512}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, tcp, gopacket.Payload(make([]byte, payload)))
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCaptureSection: a retransmission shows in the connections table and
// TCP gets its own IO graph line and traffic count.
func TestCaptureSection(t *testing.T) {
	dir := copyDir(t, fixture)
	mixedCapture(t, filepath.Join(dir, "hosts/server/captures/cap.mixed.pcap"))
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	var c *Capture
	for i := range d.Captures {
		if d.Captures[i].Name == "mixed" {
			c = &d.Captures[i]
		}
	}
	if c == nil {
		t.Fatalf("no capture named mixed in %+v", d.Captures)
	}
	if c.Packets != 101 || !strings.Contains(c.Traffic, "TCP 50 packets") {
		t.Errorf("packets %d, traffic %q: want 101 frames, 50 of them TCP", c.Packets, c.Traffic)
	}
	var names []string
	for _, s := range c.IOGraph.Series {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "RoCEv2,WRITE,ACK,TCP" {
		t.Errorf("IO graph series %s, want RoCEv2,WRITE,ACK,TCP", got)
	}
	retrans := c.Connections.Columns[6]
	if retrans != "retransmitted PSNs" {
		t.Fatalf("connections column 6 is %q", retrans)
	}
	if got := c.Connections.Rows[0][6]; got != "1" {
		t.Errorf("retransmitted PSNs of %s->%s = %s, want 1", c.Connections.Rows[0][0], c.Connections.Rows[0][1], got)
	}
}

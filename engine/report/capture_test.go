package report

import (
	"bytes"
	"fmt"
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

// splitRing splits the capture src into n files named base0 … base<n-1>
// as tcpdump's -W ring leaves them after wrapping once: base0 holds the
// newest packets, so name order is not time order.
func splitRing(t *testing.T, src, base string, n int) []string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := pcapgo.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	type frame struct {
		ci   gopacket.CaptureInfo
		data []byte
	}
	var frames []frame
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		frames = append(frames, frame{ci, append([]byte(nil), data...)})
	}
	var files []string
	per := (len(frames) + n - 1) / n
	for i := 0; i < n; i++ {
		name := base + string(rune('0'+(i+1)%n)) // chunk 0 in base1, …, the last chunk in base0
		files = append(files, name)
		out, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := pcapgo.NewWriter(out)
		if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		for _, f := range frames[min(i*per, len(frames)):min((i+1)*per, len(frames))] {
			if err := w.WritePacket(f.ci, f.data); err != nil {
				t.Fatal(err)
			}
		}
		out.Close()
	}
	return files
}

// TestCaptureRingIsOneCapture: the 4 files of one capture's ring are one
// capture in the report (issue 13: it showed four), read in time order.
func TestCaptureRingIsOneCapture(t *testing.T) {
	dir := copyDir(t, fixture)
	whole := filepath.Join(t.TempDir(), "whole.pcap")
	mixedCapture(t, whole)
	files := splitRing(t, whole, filepath.Join(dir, "hosts/server/captures/cap.ring.pcap"), 4)
	if got := OrderCaptureFiles([]string{files[3], files[2], files[1], files[0]}); filepath.Base(got[0]) != "cap.ring.pcap1" || filepath.Base(got[3]) != "cap.ring.pcap0" {
		t.Errorf("time order %v, want pcap1, pcap2, pcap3, pcap0", got)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	var rings []Capture
	for _, c := range d.Captures {
		if strings.HasPrefix(c.Name, "ring") {
			rings = append(rings, c)
		}
	}
	if len(rings) != 1 {
		t.Fatalf("%d captures of the ring, want 1: %+v", len(rings), rings)
	}
	c := rings[0]
	if c.Name != "ring" || c.Packets != 101 || !strings.Contains(c.Traffic, "TCP 50 packets") || c.Connections.Rows[0][6] != "1" {
		t.Errorf("ring: name %q, %d packets, traffic %q, retransmitted %s; want ring, 101, TCP 50, 1", c.Name, c.Packets, c.Traffic, c.Connections.Rows[0][6])
	}
	if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "ring of 4 files") {
		t.Errorf("notes %q lack the ring", c.Notes)
	}
}

func TestCaptureKey(t *testing.T) {
	for in, want := range map[string]string{
		"cap.roce.pcap": "cap.roce.pcap", "cap.roce.pcap0": "cap.roce.pcap", "cap.roce.pcap13": "cap.roce.pcap",
		"cap.data.write_bw.pcap2": "cap.data.write_bw.pcap", "x.pcapng": "x.pcapng", "notes.txt": "notes.txt",
	} {
		if got := CaptureKey(in); got != want {
			t.Errorf("CaptureKey(%q) = %q, want %q", in, got, want)
		}
	}
	got := GroupCaptureFiles([]string{"a/cap.x.pcap0", "a/cap.y.pcap", "a/cap.x.pcap1", "b/cap.x.pcap0"})
	if len(got) != 3 || len(got[0]) != 2 || got[1][0] != "a/cap.y.pcap" || got[2][0] != "b/cap.x.pcap0" {
		t.Errorf("GroupCaptureFiles = %q", got)
	}
}

// TestCaptureSectionIWARP: a siw capture beside the rxe one gets its wire
// analysis too: the traffic line counts its iWARP connections, a table has
// one row per direction with its MPA frame and opcodes, and the IO graph
// draws iWARP (its Sends in SEND). The capture is the public SoftUiWARP
// rping one (testdata/iwarp/public/README.md).
func TestCaptureSectionIWARP(t *testing.T) {
	dir := copyDir(t, fixture)
	b, err := os.ReadFile("../../testdata/iwarp/public/softuiwarp-rping.pcap")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts/server/captures/cap.siw.pcap"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	var c *Capture
	for i := range d.Captures {
		if d.Captures[i].Name == "siw" {
			c = &d.Captures[i]
		}
	}
	if c == nil {
		t.Fatalf("no capture named siw in %+v", d.Captures)
	}
	if !strings.Contains(c.Traffic, "TCP 15 packets") || !strings.Contains(c.Traffic, "iWARP 1 connections") {
		t.Errorf("traffic %q: want TCP 15 packets and one iWARP connection", c.Traffic)
	}
	if c.IWARP == nil || len(c.IWARP.Rows) != 2 {
		t.Fatalf("iWARP table %+v: want a row per direction", c.IWARP)
	}
	want := [][]string{
		{"10.10.1.1:42742", "10.10.1.2:9999", "Request rev 1", "8", "4", "Send ×4"},
		{"10.10.1.2:9999", "10.10.1.1:42742", "Reply rev 1", "7", "1", "RDMA Read Request ×1"},
	}
	for i, w := range want {
		r := c.IWARP.Rows[i]
		got := []string{r[0], r[1], r[2], r[3], r[4], r[10]}
		if strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
	var names []string
	for _, s := range c.IOGraph.Series {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "SEND,TCP,iWARP" && got != "READ,SEND,TCP,iWARP" {
		t.Errorf("IO graph series %s, want SEND (and READ), TCP, iWARP", got)
	}
}

// TestCapturesBounded: a run directory with more captures than a report
// analyses gets the first maxCaptures analysed and one note naming the
// rest, so what a report holds and writes does not grow with the number
// of capture files (1,001 captures: 170 MB and a 21 MB page before).
func TestCapturesBounded(t *testing.T) {
	dir := copyDir(t, fixture)
	capDir := filepath.Join(dir, "hosts/server/captures")
	data, err := os.ReadFile(filepath.Join(capDir, "cap.roce.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxCaptures + 1 { // with cap.roce.pcap: 2 past the bound
		if err := os.WriteFile(filepath.Join(capDir, fmt.Sprintf("cap.r%d.pcap", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Build(dir, Options{NoGraphviz: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Captures) != maxCaptures {
		t.Errorf("%d captures analysed, want the first %d", len(d.Captures), maxCaptures)
	}
	for i, c := range d.Captures {
		if c.Packets == 0 || c.Error != "" {
			t.Fatalf("capture %d (%s): %d packets, error %q: want it analysed", i, c.Name, c.Packets, c.Error)
		}
	}
	want := fmt.Sprintf("the first %d captures of %d; the other 2", maxCaptures, maxCaptures+2)
	if !strings.Contains(d.CapturesNote, want) {
		t.Errorf("captures note %q, want it to say %q", d.CapturesNote, want)
	}
	var page bytes.Buffer
	if err := Write(&page, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), want) {
		t.Errorf("report.html does not say %q", want)
	}
}

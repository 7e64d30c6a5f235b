package roce

import (
	"encoding/binary"
	"flag"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

var update = flag.Bool("update", false, "rewrite the synthesized fixtures and golden files")

// pcapDir holds the fixtures: real captures from rxe VMs and the ones this
// file synthesizes. Every *.pcap and *.pcapng there is checked against tshark.
const pcapDir = "../../testdata/pcap"

// ib builds the IB transport part of a RoCEv2 packet (BTH onwards).
type ib struct {
	op      uint8
	se, ack bool
	fecn    bool
	becn    bool
	pad     uint8
	pkey    uint16
	qp, psn uint32
	ext     []byte // extended headers, in wire order
	payload int    // bytes of payload (filled with a pattern)
}

func (x ib) bytes() []byte {
	b := make([]byte, 12, 12+len(x.ext)+x.payload+int(x.pad)+4)
	b[0] = x.op
	if x.se {
		b[1] |= 0x80
	}
	b[1] |= x.pad << 4
	pkey := x.pkey
	if pkey == 0 {
		pkey = 0xffff
	}
	binary.BigEndian.PutUint16(b[2:], pkey)
	if x.fecn {
		b[4] |= 0x80
	}
	if x.becn {
		b[4] |= 0x40
	}
	put24(b[5:], x.qp)
	if x.ack {
		b[8] = 0x80
	}
	put24(b[9:], x.psn)
	b = append(b, x.ext...)
	for i := 0; i < x.payload+int(x.pad); i++ {
		b = append(b, byte(i))
	}
	// The ICRC covers the IP and UDP headers too: frame.serialize fills it
	// in once they are known.
	return append(b, 0, 0, 0, 0)
}

func put24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }

func reth(va uint64, rkey, n uint32) []byte {
	b := binary.BigEndian.AppendUint64(nil, va)
	b = binary.BigEndian.AppendUint32(b, rkey)
	return binary.BigEndian.AppendUint32(b, n)
}

func aeth(syn uint8, msn uint32) []byte {
	return []byte{syn, byte(msn >> 16), byte(msn >> 8), byte(msn)}
}

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func deth(qkey, srcQP uint32) []byte {
	return append(u32(qkey), 0, byte(srcQP>>16), byte(srcQP>>8), byte(srcQP))
}

func atomicETH(va uint64, rkey uint32, swap, cmp uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, va)
	b = binary.BigEndian.AppendUint32(b, rkey)
	b = binary.BigEndian.AppendUint64(b, swap)
	return binary.BigEndian.AppendUint64(b, cmp)
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// cmMAD builds a 256-byte CM MAD carrying attr with the given body.
func cmMAD(attr uint16, tid uint64, body []byte) []byte {
	m := make([]byte, 256)
	m[0], m[1], m[2], m[3] = 1, mgmtClassCM, 2, 0x03 // base version, class, class version, Send
	binary.BigEndian.PutUint64(m[8:], tid)
	binary.BigEndian.PutUint16(m[16:], attr)
	copy(m[24:], body)
	return m
}

func cmReq(local, qpn, psn uint32, port uint16) []byte {
	d := make([]byte, 232)
	binary.BigEndian.PutUint32(d[0:], local)
	binary.BigEndian.PutUint64(d[8:], 0x0000000001060000|uint64(port))
	binary.BigEndian.PutUint64(d[16:], 0x5254_00ff_fe12_3456)
	binary.BigEndian.PutUint32(d[28:], 0)
	put24(d[32:], qpn)
	put24(d[44:], psn)
	binary.BigEndian.PutUint16(d[48:], 0xffff)
	// Private data as RDMA-CM sends it: its header (version 0, IPv4, the
	// source port, source and destination address), then the caller's.
	pd := d[140:]
	pd[1] = 0x40
	binary.BigEndian.PutUint16(pd[2:], 0xb0c1)
	copy(pd[4+12:], ipOf(1, false))
	copy(pd[20+12:], ipOf(2, false))
	copy(pd[36:], "hello from the client")
	return d
}

// bufferInfo is the private data rlab's example programs put in the REP.
func bufferInfo(va uint64, rkey, n uint32) []byte {
	return cat([]byte(bufferMagic), u32(rkey), binary.BigEndian.AppendUint64(nil, va), u32(n))
}

func cmRep(local, remote, qpn, psn uint32) []byte {
	d := make([]byte, 232)
	binary.BigEndian.PutUint32(d[0:], local)
	binary.BigEndian.PutUint32(d[4:], remote)
	put24(d[12:], qpn)
	put24(d[20:], psn)
	copy(d[36:], bufferInfo(0x7f0000003000, 0x99, 4096))
	return d
}

func cmPair(local, remote uint32) []byte {
	d := make([]byte, 232)
	binary.BigEndian.PutUint32(d[0:], local)
	binary.BigEndian.PutUint32(d[4:], remote)
	return d
}

func cmDreq(local, remote, qpn uint32) []byte {
	d := cmPair(local, remote)
	put24(d[8:], qpn)
	return d
}

func cmRej(local, remote uint32, reason uint16) []byte {
	d := cmPair(local, remote)
	binary.BigEndian.PutUint16(d[10:], reason)
	copy(d[84:], "busy")
	return d
}

// ud wraps a CM MAD into a UD SEND Only to QP1 (GSI).
func udMAD(psn uint32, mad []byte) []byte {
	return append(ib{op: 0x64, qp: 1, psn: psn, ext: deth(0x80010000, 1)}.bytes()[:20], append(mad, 0, 0, 0, 0)...)
}

// frame is one packet of a synthesized capture.
type frame struct {
	vlan     uint16 // 0: untagged
	v6       bool
	src, dst int // host numbers
	tcp      int // >0: a TCP segment with this many payload bytes instead of RoCE
	other    bool
	roce     []byte
	badICRC  bool // leave the ICRC zero
}

func ipOf(n int, v6 bool) net.IP {
	if v6 {
		return net.ParseIP("fd00:99::" + string(rune('0'+n)))
	}
	return net.IPv4(10, 99, 0, byte(n)).To4()
}

func (f frame) serialize(t *testing.T) []byte {
	t.Helper()
	eth := &layers.Ethernet{
		SrcMAC: net.HardwareAddr{0x52, 0x54, 0, 0, 0, byte(f.src)},
		DstMAC: net.HardwareAddr{0x52, 0x54, 0, 0, 0, byte(f.dst)},
	}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth)
	et := layers.EthernetTypeIPv4
	if f.v6 {
		et = layers.EthernetTypeIPv6
	}
	if f.other {
		eth.EthernetType = layers.EthernetTypeARP
		ls = append(ls, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
			HwAddressSize: 6, ProtAddressSize: 4, Operation: 1, SourceHwAddress: eth.SrcMAC,
			SourceProtAddress: ipOf(f.src, false), DstHwAddress: make([]byte, 6), DstProtAddress: ipOf(f.dst, false)})
	} else {
		if f.vlan != 0 {
			eth.EthernetType = layers.EthernetTypeDot1Q
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: f.vlan, Type: et})
		} else {
			eth.EthernetType = et
		}
		var nl gopacket.NetworkLayer
		proto := layers.IPProtocolUDP
		if f.tcp > 0 {
			proto = layers.IPProtocolTCP
		}
		if f.v6 {
			ip := &layers.IPv6{Version: 6, NextHeader: proto, HopLimit: 64, SrcIP: ipOf(f.src, true), DstIP: ipOf(f.dst, true)}
			ls, nl = append(ls, ip), ip
		} else {
			ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, Flags: layers.IPv4DontFragment, SrcIP: ipOf(f.src, false), DstIP: ipOf(f.dst, false)}
			ls, nl = append(ls, ip), ip
		}
		if f.tcp > 0 {
			tcp := &layers.TCP{SrcPort: 40000, DstPort: 5201, Seq: 1, Ack: 1, ACK: true, PSH: true, Window: 512}
			_ = tcp.SetNetworkLayerForChecksum(nl)
			ls = append(ls, tcp, gopacket.Payload(make([]byte, f.tcp)))
		} else {
			udp := &layers.UDP{SrcPort: 49152 + layers.UDPPort(f.src), DstPort: UDPPort}
			_ = udp.SetNetworkLayerForChecksum(nl)
			ls = append(ls, udp, gopacket.Payload(f.roce))
		}
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		t.Fatalf("serialize frame: %v", err)
	}
	if f.roce == nil || f.badICRC {
		return buf.Bytes()
	}
	// Now that the IP and UDP headers are known, the ICRC (the kernel's
	// algorithm, checked on the real rxe capture in TestICRC), then
	// serialize again for the UDP checksum over it.
	b := buf.Bytes()
	ipOff, ipLen := 14, 20
	if f.vlan != 0 {
		ipOff += 4
	}
	if f.v6 {
		ipLen = 40
	}
	binary.BigEndian.PutUint32(f.roce[len(f.roce)-4:], ICRC(b[ipOff:len(b)-4], ipLen))
	buf = gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		t.Fatalf("serialize frame: %v", err)
	}
	return buf.Bytes()
}

// synthCaptures are the captures a test writes under -update: every
// operation the fixture recorded on real rxe lacks.
func synthCaptures() map[string][]frame {
	const a, b = 1, 2         // requester, responder
	const qa, qb = 0x11, 0x22 // their QPs
	rc := func(from int, x ib) frame {
		to := b
		if from == b {
			to = a
		}
		return frame{src: from, dst: to, roce: x.bytes()}
	}
	cm := func(from int, psn uint32, attr uint16, body []byte) frame {
		to := b
		if from == b {
			to = a
		}
		return frame{src: from, dst: to, roce: udMAD(psn, cmMAD(attr, 0x1000+uint64(psn), body))}
	}
	ops := []frame{
		cm(a, 0, CMReq, cmReq(0x1234, qa, 100, 18515)),
		cm(b, 0, CMRep, cmRep(0x5678, 0x1234, qb, 200)),
		cm(a, 1, CMRtu, cmPair(0x1234, 0x5678)),
		rc(a, ib{op: 0x05, qp: qb, psn: 100, se: true, ack: true, pad: 2, ext: u32(0xdeadbeef), payload: 62}),
		rc(b, ib{op: 0x11, qp: qa, psn: 100, ext: aeth(0x1f, 1)}),
		rc(a, ib{op: 0x0c, qp: qb, psn: 101, ack: true, ext: reth(0x7f0000001000, 0x1234, 3000)}),
		rc(b, ib{op: 0x0d, qp: qa, psn: 101, ext: aeth(0x1f, 1), payload: 1024}),
		rc(b, ib{op: 0x0e, qp: qa, psn: 102, payload: 1024}),
		rc(b, ib{op: 0x0f, qp: qa, psn: 103, ext: aeth(0x1f, 2), payload: 952}),
		rc(a, ib{op: 0x13, qp: qb, psn: 104, ack: true, ext: atomicETH(0x7f0000002000, 0x4321, 7, 0)}),
		rc(b, ib{op: 0x12, qp: qa, psn: 104, ext: cat(aeth(0x1f, 3), binary.BigEndian.AppendUint64(nil, 0))}),
		rc(a, ib{op: 0x14, qp: qb, psn: 105, ack: true, ext: atomicETH(0x7f0000002000, 0x4321, 1, 0)}),
		rc(b, ib{op: 0x12, qp: qa, psn: 105, ext: cat(aeth(0x1f, 4), binary.BigEndian.AppendUint64(nil, 7))}),
		rc(a, ib{op: 0x0b, qp: qb, psn: 106, ack: true, ext: cat(reth(0x7f0000003000, 0x99, 512), u32(42)), payload: 512}),
		rc(b, ib{op: 0x11, qp: qa, psn: 106, ext: aeth(0x20|14, 4)}), // RNR NAK, timer 14
		rc(a, ib{op: 0x0b, qp: qb, psn: 106, ack: true, ext: cat(reth(0x7f0000003000, 0x99, 512), u32(42)), payload: 512}),
		rc(b, ib{op: 0x11, qp: qa, psn: 106, ext: aeth(0x1f, 5)}),
		rc(a, ib{op: 0x00, qp: qb, psn: 107, payload: 1024}),
		rc(a, ib{op: 0x01, qp: qb, psn: 108, payload: 1024}),
		rc(a, ib{op: 0x16, qp: qb, psn: 109, ack: true, ext: u32(0xabcd), payload: 100}),
		rc(b, ib{op: 0x11, qp: qa, psn: 109, ext: aeth(0x1f, 6)}),
		rc(a, ib{op: 0x06, qp: qb, psn: 110, fecn: true, ext: reth(0x7f0000004000, 0x77, 2048), payload: 1024}),
		rc(b, ib{op: 0x11, qp: qa, psn: 110, ext: aeth(0x60, 6)}), // NAK: PSN sequence error
		rc(b, ib{op: 0x81, qp: qa, becn: true, ext: make([]byte, 16)}),
		rc(a, ib{op: 0x06, qp: qb, psn: 110, ext: reth(0x7f0000004000, 0x77, 2048), payload: 1024}),
		rc(a, ib{op: 0x08, qp: qb, psn: 111, ack: true, payload: 1024}),
		rc(b, ib{op: 0x11, qp: qa, psn: 111, ext: aeth(0x1f, 7)}),
		rc(a, ib{op: 0x17, qp: qb, psn: 112, ack: true, ext: u32(0x5555)}),
		rc(b, ib{op: 0x11, qp: qa, psn: 112, ext: aeth(0x62, 7)}),                               // NAK: remote access error
		rc(a, ib{op: 0x2a, qp: 0x33, psn: 7, ext: reth(0x7f0000005000, 0x88, 16), payload: 16}), // UC WRITE Only
		rc(a, ib{op: 0x64, qp: 0x44, psn: 9, ext: deth(0x11111111, 0x55), payload: 256}),        // UD SEND Only
		rc(a, ib{op: 0x65, qp: 0x44, psn: 10, ext: cat(deth(0x11111111, 0x55), u32(7)), payload: 64}),
		rc(a, ib{op: 0x1f, qp: qb, psn: 113}), // reserved opcode
		cm(a, 2, CMDreq, cmDreq(0x1234, 0x5678, qb)),
		cm(b, 1, CMDrep, cmPair(0x5678, 0x1234)),
		cm(a, 3, CMReq, cmReq(0x2000, 0x66, 300, 18516)),
		cm(b, 2, CMRej, cmRej(0, 0x2000, 28)), // consumer reject
	}
	mixed := []frame{
		{src: 1, dst: 2, vlan: 100, roce: ib{op: 0x0a, qp: 0x22, psn: 1, ack: true, ext: reth(0x1000, 1, 64), payload: 64}.bytes()},
		{src: 2, dst: 1, vlan: 100, roce: ib{op: 0x11, qp: 0x11, psn: 1, ext: aeth(0x1f, 1)}.bytes()},
		{src: 1, dst: 2, v6: true, roce: ib{op: 0x04, qp: 0x22, psn: 2, ack: true, payload: 1000}.bytes()},
		{src: 2, dst: 1, v6: true, roce: ib{op: 0x11, qp: 0x11, psn: 2, ext: aeth(0x1f, 2)}.bytes()},
		{src: 1, dst: 2, v6: true, vlan: 7, roce: ib{op: 0x14, qp: 0x22, psn: 3, ack: true, ext: atomicETH(0x2000, 2, 1, 0)}.bytes()},
		{src: 1, dst: 2, badICRC: true, roce: ib{op: 0x0a, qp: 0x22, psn: 4, ext: reth(0x1000, 1, 64), payload: 64}.bytes()},
		{src: 1, dst: 2, tcp: 1448},
		{src: 2, dst: 1, tcp: 1},
		{src: 1, dst: 2, tcp: 1448, v6: true},
		{src: 1, dst: 2, other: true},
	}
	return map[string][]frame{
		"synth-rc-ud-cm":      ops,
		"synth-vlan-ipv6-tcp": mixed,
	}
}

// writeCapture writes frames as a pcap (or pcapng) with the given snaplen.
func writeCapture(t *testing.T, path string, frames []frame, snaplen int, ng bool) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var write func(gopacket.CaptureInfo, []byte) error
	if ng {
		w, err := pcapgo.NewNgWriterInterface(out, pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, SnapLength: uint32(snaplen)}, pcapgo.NgWriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}()
		write = w.WritePacket
	} else {
		w := pcapgo.NewWriter(out)
		if err := w.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		write = w.WritePacket
	}
	ts := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for i, f := range frames {
		data := f.serialize(t)
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * 250 * time.Microsecond), Length: len(data), CaptureLength: len(data)}
		if len(data) > snaplen {
			data, ci.CaptureLength = data[:snaplen], snaplen
		}
		if err := write(ci, data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSynthesize writes the synthesized fixtures under -update.
func TestSynthesize(t *testing.T) {
	if !*update {
		t.Skip("fixtures are rewritten with -update")
	}
	for name, frames := range synthCaptures() {
		writeCapture(t, filepath.Join(pcapDir, name+".pcap"), frames, 262144, false)
		if name == "synth-rc-ud-cm" {
			writeCapture(t, filepath.Join(pcapDir, name+"-snaplen128.pcap"), frames, 128, false)
			writeCapture(t, filepath.Join(pcapDir, name+".pcapng"), frames, 262144, true)
		}
		if name == "synth-vlan-ipv6-tcp" {
			writeCapture(t, filepath.Join(pcapDir, name+"-snaplen60.pcap"), frames, 60, false)
		}
	}
}

// Command gen writes a large synthetic capture of the RDMA-vs-TCP kind for
// benchmarking `rlab pcap`: an RDMA WRITE bandwidth run over RoCEv2 (64 KiB
// messages at MTU 1024: WRITE First with RETH, 62 Middle, Last with ack
// request, then the responder's ACK, the shape of the recorded
// ib_write_bw capture) followed by a TCP bulk transfer (1448-byte segments,
// an ACK every second one), cut at a snaplen as tcpdump -s 128 does.
//
//	go run ./bench/pcap/gen -o /var/tmp/rlab-bench.pcap -packets 8000000
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rlab-dev/rlab/engine/roce"
)

func main() {
	out := flag.String("o", "/var/tmp/rlab-bench.pcap", "output pcap file")
	packets := flag.Int("packets", 8_000_000, "frames to write")
	snaplen := flag.Int("snaplen", 128, "bytes kept of each frame")
	tcpShare := flag.Float64("tcp", 0.3, "share of the frames that are the TCP phase")
	flag.Parse()
	if err := write(*out, *packets, *snaplen, *tcpShare); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

var (
	macA = []byte{0x52, 0x54, 0, 0x11, 0, 1}
	macB = []byte{0x52, 0x54, 0, 0x11, 0, 0}
	ipA  = []byte{10, 99, 0, 2}
	ipB  = []byte{10, 99, 0, 1}
)

// frame builds an Ethernet/IPv4 frame with the given L4 protocol and bytes.
func frame(src, dst []byte, proto byte, l4 []byte) []byte {
	f := make([]byte, 0, 34+len(l4))
	if string(src) == string(ipA) {
		f = append(f, macB...)
		f = append(f, macA...)
	} else {
		f = append(f, macA...)
		f = append(f, macB...)
	}
	f = append(f, 0x08, 0x00)
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)))
	ip[6] = 0x40 // don't fragment
	ip[8], ip[9] = 64, proto
	copy(ip[12:], src)
	copy(ip[16:], dst)
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	f = append(f, ip...)
	return append(f, l4...)
}

// roce builds a RoCEv2 frame: UDP to 4791, BTH, extended headers, payload, ICRC.
func roceFrame(src, dst []byte, op byte, qp uint32, ackReq bool, ext []byte, payload int) []byte {
	ib := []byte{op, 0, 0xff, 0xff, 0, byte(qp >> 16), byte(qp >> 8), byte(qp), 0, 0, 0, 0}
	if ackReq {
		ib[8] = 0x80
	}
	ib = append(ib, ext...)
	ib = append(ib, make([]byte, payload+4)...)
	udp := make([]byte, 8, 8+len(ib))
	binary.BigEndian.PutUint16(udp[0:], 0xc000)
	binary.BigEndian.PutUint16(udp[2:], 4791)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(ib)))
	return frame(src, dst, 17, append(udp, ib...))
}

func tcp(src, dst []byte, payload int) []byte {
	h := make([]byte, 20+payload)
	sport, dport := uint16(40000), uint16(5201)
	if string(src) == string(ipB) {
		sport, dport = dport, sport
	}
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	h[12] = 5 << 4
	h[13] = 0x10
	binary.BigEndian.PutUint16(h[14:], 512)
	return frame(src, dst, 6, h)
}

func write(path string, n, snaplen int, tcpShare float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], uint32(snaplen))
	binary.LittleEndian.PutUint32(hdr[20:], 1)
	w.Write(hdr)

	reth := make([]byte, 16)
	binary.BigEndian.PutUint64(reth, 0x561cb5c95000)
	binary.BigEndian.PutUint32(reth[8:], 0xd24)
	binary.BigEndian.PutUint32(reth[12:], 65536)
	first := roceFrame(ipA, ipB, 0x06, 0x1a, false, reth, 1024)
	middle := roceFrame(ipA, ipB, 0x07, 0x1a, false, nil, 1024)
	last := roceFrame(ipA, ipB, 0x08, 0x1a, true, nil, 1024)
	ack := roceFrame(ipB, ipA, 0x11, 0x11, false, []byte{0x1f, 0, 0, 0}, 0)
	seg := tcp(ipA, ipB, 1448)
	tack := tcp(ipB, ipA, 0)

	ts := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC)
	rec := make([]byte, 16)
	put := func(fr []byte, gap time.Duration, psn uint32, msn uint32) {
		ts = ts.Add(gap)
		c := min(len(fr), snaplen)
		binary.LittleEndian.PutUint32(rec[0:], uint32(ts.Unix()))
		binary.LittleEndian.PutUint32(rec[4:], uint32(ts.Nanosecond()/1000))
		binary.LittleEndian.PutUint32(rec[8:], uint32(c))
		binary.LittleEndian.PutUint32(rec[12:], uint32(len(fr)))
		w.Write(rec)
		if fr[23] == 17 { // RoCE: stamp PSN (and MSN of an ACK)
			fr[34+8+9], fr[34+8+10], fr[34+8+11] = byte(psn>>16), byte(psn>>8), byte(psn)
			if fr[34+8] == 0x11 {
				fr[34+8+13], fr[34+8+14], fr[34+8+15] = byte(msn>>16), byte(msn>>8), byte(msn)
			}
			if c == len(fr) { // kept whole: give it a true ICRC
				binary.BigEndian.PutUint32(fr[len(fr)-4:], roce.ICRC(fr[14:len(fr)-4], 20))
			}
		}
		w.Write(fr[:c])
	}
	rdma := int(float64(n) * (1 - tcpShare))
	written, psn, msn := 0, uint32(0), uint32(0)
	for written < rdma {
		// ~1 Gb/s: a 1082-byte frame every 8.7 us.
		put(first, 8700*time.Nanosecond, psn, 0)
		psn++
		for i := 0; i < 62 && written+i+3 < n; i++ {
			put(middle, 8700*time.Nanosecond, psn&0xffffff, 0)
			psn++
		}
		put(last, 8700*time.Nanosecond, psn&0xffffff, 0)
		msn++
		put(ack, 20*time.Microsecond, psn&0xffffff, msn)
		psn++
		written += 65
	}
	seq := uint32(1)
	for i := 0; written < n; i++ {
		binary.BigEndian.PutUint32(seg[34+4:], seq)
		binary.BigEndian.PutUint32(seg[34+8:], 1)
		put(seg, 12*time.Microsecond, 0, 0)
		seq += 1448
		written++
		if i%2 == 1 && written < n {
			binary.BigEndian.PutUint32(tack[34+4:], 1)
			binary.BigEndian.PutUint32(tack[34+8:], seq)
			put(tack, 2*time.Microsecond, 0, 0)
			written++
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

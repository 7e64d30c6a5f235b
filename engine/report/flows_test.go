package report

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rlab-dev/rlab/engine/iwarp"
)

// readFrames is every frame of a classic pcap file.
func readFrames(t *testing.T, file string) [][]byte {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			return out
		}
		out = append(out, data)
	}
}

// plainIPv4 says whether f is Ethernet + IPv4 without options carrying proto.
func plainIPv4(f []byte, proto byte) bool {
	return len(f) > 14+20+20 && f[12] == 0x08 && f[13] == 0 && f[14] == 0x45 && f[23] == proto
}

// ipChecksum sets the checksum of IPv4 header h.
func ipChecksum(h []byte) {
	h[10], h[11] = 0, 0
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	h[10], h[11] = byte(^sum>>8), byte(^sum)
}

// writeCapture writes frames as a classic pcap at dir/name, 10 µs apart,
// each as long on the wire as its IPv4 header says.
func writeCapture(t *testing.T, dir, name string, frames [][]byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(fh)
	if err := w.WriteFileHeader(1<<18, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	for i, f := range frames {
		wire := len(f)
		if len(f) >= 14+20 && f[12] == 0x08 && f[13] == 0 {
			wire = max(wire, 14+(int(f[16])<<8|int(f[17]))) // a frame the recording's snaplen cut
		}
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * 10 * time.Microsecond), CaptureLength: len(f), Length: wire}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAnalyzeSplitFlows: on made captures of many batches, shaped to test
// the split by flow at its ends, AnalyzeSplit on 1, 2, 3, 5 and 7 workers makes
// byte for byte what one pass makes (summaries, iWARP analysis, IO graph):
// one RoCEv2 flow (every packet on one worker; the others only decode),
// one TCP connection carrying iWARP (the siw recording's over and over), and
// many flows (400 RoCEv2 QPs from 4 hosts, their PSNs now and then going
// back as a resend does, and 60 TCP connections, interleaved at random).
func TestAnalyzeSplitFlows(t *testing.T) {
	var roceFrame []byte
	for _, f := range readFrames(t, "../../testdata/pcap/roce-ib_write_bw-10x4KiB.pcap") {
		if plainIPv4(f, 17) && len(f) > 14+20+8+12 {
			roceFrame = f
			break
		}
	}
	siw := readFrames(t, "../../testdata/iwarp/recorded/transports-server-siw-0.pcap")
	var tcp [][]byte
	for _, f := range siw {
		if plainIPv4(f, 6) {
			tcp = append(tcp, f)
		}
	}
	if roceFrame == nil || len(tcp) < 10 {
		t.Fatalf("no RoCEv2 frame or %d TCP frames in the recordings", len(tcp))
	}
	bth := 14 + 20 + 8
	roce := func(src byte, qp, psn uint32) []byte {
		f := append([]byte(nil), roceFrame...)
		f[14+15] = src // the source address's last byte
		f[bth+5], f[bth+6], f[bth+7] = byte(qp>>16), byte(qp>>8), byte(qp)
		f[bth+9], f[bth+10], f[bth+11] = byte(psn>>16), byte(psn>>8), byte(psn)
		return f
	}
	// The siw connection: the TCP frames of the recording's busiest pair of ports.
	ports := func(f []byte) [2]int {
		a, b := int(f[14+20])<<8|int(f[14+21]), int(f[14+22])<<8|int(f[14+23])
		return [2]int{min(a, b), max(a, b)}
	}
	seen := map[[2]int]int{}
	var busiest [2]int
	for _, f := range tcp {
		if seen[ports(f)]++; seen[ports(f)] > seen[busiest] {
			busiest = ports(f)
		}
	}
	var conn [][]byte
	for _, f := range tcp {
		if ports(f) == busiest {
			conn = append(conn, f)
		}
	}
	var one, stream, many [][]byte
	for i := 0; i < 5000; i++ {
		one = append(one, roce(1, 0x11, uint32(i)))
		stream = append(stream, conn[i%len(conn)])
	}
	rng := rand.New(rand.NewPCG(3, 4))
	psn := map[uint32]uint32{}
	for i := 0; i < 8000; i++ {
		if rng.IntN(3) == 0 {
			f := append([]byte(nil), tcp[rng.IntN(len(tcp))]...)
			port := 40000 + rng.IntN(60)
			f[14+20], f[14+21] = byte(port>>8), byte(port) // the source port
			f[14+15] += byte(port % 5)
			many = append(many, f)
			continue
		}
		qp := uint32(rng.IntN(400))
		many = append(many, roce(byte(qp%4), qp, psn[qp]))
		psn[qp] += uint32(1 + rng.IntN(2)) // now and then one missing
		if rng.IntN(10) == 0 {
			psn[qp] -= 3 // a resend: Retransmits, in the flow's order
		}
	}
	// Six copies of the siw connection (other addresses), three of them
	// with their payload zeroed (plain TCP: no MPA frame, no FPDU), each
	// with segments swapped (out of order) and resent later, interleaved
	// at random: segments decoded by one worker for a connection another
	// owns, iWARP and not, in and out of order.
	var streams [][]byte
	var conns [6][][]byte
	for k := range conns {
		last := map[byte]int{} // a direction's last data segment, by index in conns[k]
		count := map[byte]int{}
		for _, f := range conn {
			f = append([]byte(nil), f...)
			f[14+15] += byte(k + 1) // both ends' addresses: still one connection
			f[14+19] += byte(k + 1)
			ipChecksum(f[14 : 14+20])
			thl := int(f[14+20+12]>>4) * 4
			data := 14 + (int(f[16])<<8 | int(f[17])) - (14 + 20 + thl)
			if k%2 == 1 {
				clear(f[min(len(f), 14+20+thl):min(len(f), 14+20+thl+data)]) // the captured part
			}
			conns[k] = append(conns[k], f)
			if data == 0 {
				continue
			}
			n, dir := len(conns[k])-1, f[14+21] // by the source port's low byte
			switch count[dir]++; {
			case count[dir] < 6: // the MPA handshake as it came
			case count[dir]%5 == 2: // ahead of the one before it
				conns[k][n], conns[k][last[dir]] = conns[k][last[dir]], conns[k][n]
			case count[dir]%9 == 4: // sent again
				conns[k] = append(conns[k], f)
			}
			last[dir] = n
		}
	}
	for left := true; left; {
		left = false
		for _, k := range rng.Perm(len(conns)) {
			if len(conns[k]) > 0 {
				n := min(len(conns[k]), 1+rng.IntN(4))
				streams = append(streams, conns[k][:n]...)
				conns[k] = conns[k][n:]
				left = true
			}
		}
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		frames [][]byte
	}{{"one-roce-flow", one}, {"one-tcp-connection", stream}, {"many-flows", many}, {"tcp-streams", streams}} {
		files := []string{writeCapture(t, dir, c.name+".pcap", c.frames)}
		for _, fin := range []bool{false, true} {
			want := analysisText(t, onePass(t, files, time.Millisecond, fin))
			for _, w := range []int{1, 2, 3, 5, 7} {
				a, ok, err := AnalyzeSplit(files, w, time.Millisecond, fin)
				if err != nil || !ok {
					t.Fatalf("%s workers %d: %v %v", c.name, w, ok, err)
				}
				if got := analysisText(t, a); got != want {
					t.Errorf("%s workers %d finish drawn %v:\none pass %s\nsplit %s", c.name, w, fin, want, got)
				}
			}
		}
		// The captures are what their names say.
		a, _, _ := AnalyzeSplit(files, 2, 0, false)
		flows, conns, resent := len(a.Summary.Flows), a.IWARP.TCPConns, int64(0)
		for _, f := range a.Summary.Flows {
			resent += f.Retransmits
		}
		var segResent, segOOO int64
		for _, cs := range [][]*iwarp.Conn{a.IWARP.Conns, a.IWARP.TCP} {
			for _, cn := range cs {
				for _, d := range cn.Dirs {
					segResent += d.Retransmits
					segOOO += d.OutOfOrder
				}
			}
		}
		if shape := fmt.Sprintf("%d flows, %d connections (%d iWARP), %d resent, %d segments resent, %d out of order", flows, conns,
			len(a.IWARP.Conns), resent, segResent, segOOO); c.name == "one-roce-flow" && (flows != 1 || conns != 0) ||
			c.name == "one-tcp-connection" && (flows != 0 || conns != 1 || len(a.IWARP.Conns) != 1) ||
			c.name == "many-flows" && (flows < 300 || conns < 30 || resent < 100) ||
			c.name == "tcp-streams" && (flows != 0 || conns != 6 || len(a.IWARP.Conns) != 3 || segResent < 30 || segOOO < 30) {
			t.Errorf("%s: %s", c.name, shape)
		} else {
			t.Logf("%s: %d frames, %s", c.name, len(c.frames), shape)
		}
	}
}

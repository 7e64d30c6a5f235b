package roce

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// field is one tshark field and how to read the same value from a Packet;
// ok is false when the decoder did not find that header.
type field struct {
	name  string
	bytes bool // tshark prints an FT_BYTES field as bare hex
	text  bool // compared as text: tshark's hex without colons, an address
	ours  func(p *Packet) (v any, ok bool)
}

func hasBTH(p *Packet) bool { return p.Proto == ProtoRoCE && p.HasBTH }

func bthField(name string, get func(b *BTH) uint64) field {
	return field{name: "infiniband.bth." + name, ours: func(p *Packet) (any, bool) { return get(&p.BTH), hasBTH(p) }}
}

func hdrField(name string, h Header, get func(p *Packet) uint64) field {
	return field{name: name, ours: func(p *Packet) (any, bool) { return get(p), p.Headers&h != 0 }}
}

func cmField(name string, attrs []uint16, get func(c *CM) uint64) field {
	return field{name: "infiniband.cm." + name, ours: func(p *Packet) (any, bool) {
		for _, a := range attrs {
			if p.CM.Attr == a && p.Problem != ProblemTruncated {
				return get(&p.CM), true
			}
		}
		return nil, false
	}}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// oracleFields are compared packet by packet with tshark's infiniband
// dissector (tshark 4.0 names, from `tshark -G fields`).
var oracleFields = []field{
	{name: "frame.len", ours: func(p *Packet) (any, bool) { return uint64(p.WireLen), true }},
	{name: "frame.cap_len", ours: func(p *Packet) (any, bool) { return uint64(p.CapLen), true }},
	{name: "vlan.id", ours: func(p *Packet) (any, bool) { return uint64(p.VLAN), p.HasVLAN }},
	{name: "ip.src", ours: func(p *Packet) (any, bool) { return p.Src.String(), p.Src.Is4() }},
	{name: "ip.dst", ours: func(p *Packet) (any, bool) { return p.Dst.String(), p.Dst.Is4() }},
	{name: "ipv6.src", ours: func(p *Packet) (any, bool) { return p.Src.String(), p.Src.Is6() }},
	{name: "ipv6.dst", ours: func(p *Packet) (any, bool) { return p.Dst.String(), p.Dst.Is6() }},
	{name: "tcp.len", ours: func(p *Packet) (any, bool) {
		return uint64(p.L4Payload), p.Proto == ProtoTCP && p.Problem == ProblemNone
	}},
	bthField("opcode", func(b *BTH) uint64 { return uint64(b.Opcode) }),
	bthField("se", func(b *BTH) uint64 { return b2u(b.SE) }),
	bthField("m", func(b *BTH) uint64 { return b2u(b.MigReq) }),
	bthField("padcnt", func(b *BTH) uint64 { return uint64(b.Pad) }),
	bthField("tver", func(b *BTH) uint64 { return uint64(b.TVer) }),
	bthField("p_key", func(b *BTH) uint64 { return uint64(b.PKey) }),
	bthField("destqp", func(b *BTH) uint64 { return uint64(b.DestQP) }),
	bthField("a", func(b *BTH) uint64 { return b2u(b.AckReq) }),
	bthField("psn", func(b *BTH) uint64 { return uint64(b.PSN) }),
	// tshark shows the AtomicETH's VA and rkey under the RETH names.
	{name: "infiniband.reth.va", ours: func(p *Packet) (any, bool) {
		if p.Headers&HdrAtomicETH != 0 {
			return p.Atomic.VA, true
		}
		return p.RETH.VA, p.Headers&HdrRETH != 0
	}},
	{name: "infiniband.reth.r_key", ours: func(p *Packet) (any, bool) {
		if p.Headers&HdrAtomicETH != 0 {
			return uint64(p.Atomic.RKey), true
		}
		return uint64(p.RETH.RKey), p.Headers&HdrRETH != 0
	}},
	hdrField("infiniband.reth.dmalen", HdrRETH, func(p *Packet) uint64 { return uint64(p.RETH.DMALen) }),
	hdrField("infiniband.aeth.syndrome", HdrAETH, func(p *Packet) uint64 { return uint64(p.AETH.Syndrome) }),
	hdrField("infiniband.aeth.msn", HdrAETH, func(p *Packet) uint64 { return uint64(p.AETH.MSN) }),
	hdrField("infiniband.deth.q_key", HdrDETH, func(p *Packet) uint64 { return uint64(p.DETH.QKey) }),
	hdrField("infiniband.deth.srcqp", HdrDETH, func(p *Packet) uint64 { return uint64(p.DETH.SrcQP) }),
	hdrField("infiniband.atomiceth.swapdt", HdrAtomicETH, func(p *Packet) uint64 { return p.Atomic.SwapAdd }),
	hdrField("infiniband.atomiceth.cmpdt", HdrAtomicETH, func(p *Packet) uint64 { return p.Atomic.Compare }),
	hdrField("infiniband.atomicacketh.origremdt", HdrAtomicAckETH, func(p *Packet) uint64 { return p.OrigData }),
	{name: "infiniband.immdt", bytes: true, ours: func(p *Packet) (any, bool) { return uint64(p.ImmDt), p.Headers&HdrImmDt != 0 }},
	{name: "infiniband.ieth", bytes: true, ours: func(p *Packet) (any, bool) { return uint64(p.IETH), p.Headers&HdrIETH != 0 }},
	cmField("req", []uint16{CMReq}, func(c *CM) uint64 { return uint64(c.LocalCommID) }),
	cmField("req.serviceid", []uint16{CMReq}, func(c *CM) uint64 { return c.ServiceID }),
	cmField("req.localqpn", []uint16{CMReq}, func(c *CM) uint64 { return uint64(c.LocalQPN) }),
	cmField("req.startpsn", []uint16{CMReq}, func(c *CM) uint64 { return uint64(c.StartPSN) }),
	cmField("rep", []uint16{CMRep}, func(c *CM) uint64 { return uint64(c.LocalCommID) }),
	cmField("rep.remotecommid", []uint16{CMRep}, func(c *CM) uint64 { return uint64(c.RemoteCommID) }),
	cmField("rep.localqpn", []uint16{CMRep}, func(c *CM) uint64 { return uint64(c.LocalQPN) }),
	cmField("rep.startpsn", []uint16{CMRep}, func(c *CM) uint64 { return uint64(c.StartPSN) }),
	cmField("rtu.localcommid", []uint16{CMRtu}, func(c *CM) uint64 { return uint64(c.LocalCommID) }),
	cmField("rtu.remotecommid", []uint16{CMRtu}, func(c *CM) uint64 { return uint64(c.RemoteCommID) }),
	cmField("dreq.localcommid", []uint16{CMDreq}, func(c *CM) uint64 { return uint64(c.LocalCommID) }),
	cmField("dreq.remotecommid", []uint16{CMDreq}, func(c *CM) uint64 { return uint64(c.RemoteCommID) }),
	cmField("req.remoteqpneecn", []uint16{CMDreq}, func(c *CM) uint64 { return uint64(c.RemoteQPN) }),
	cmField("drsp.localcommid", []uint16{CMDrep}, func(c *CM) uint64 { return uint64(c.LocalCommID) }),
	cmField("drsp.remotecommid", []uint16{CMDrep}, func(c *CM) uint64 { return uint64(c.RemoteCommID) }),
	cmField("rej.localcommid", []uint16{CMRej}, func(c *CM) uint64 { return uint64(c.LocalCommID) }),
	cmField("rej.remotecommid", []uint16{CMRej}, func(c *CM) uint64 { return uint64(c.RemoteCommID) }),
	cmField("rej.reason", []uint16{CMRej}, func(c *CM) uint64 { return uint64(c.Reason) }),
	// tshark shows a REQ's private data as ip_cm (header fields and the
	// consumer's part) when it starts with an RDMA-CM header.
	privateField("req.private", CMReq, func(c *CM) []byte {
		if _, _, ok := c.RDMACM(); ok {
			return nil
		}
		return c.Private()
	}),
	privateField("rep.private", CMRep, (*CM).Private),
	privateField("rtu.private", CMRtu, (*CM).Private),
	privateField("rej.private", CMRej, (*CM).Private),
	privateField("dreq.private", CMDreq, (*CM).Private),
	privateField("drsp.private", CMDrep, (*CM).Private),
	privateField("req.ip_cm.private", CMReq, func(c *CM) []byte {
		if _, _, ok := c.RDMACM(); ok {
			return c.Consumer()
		}
		return nil
	}),
	rdmaCMField("sport", func(src, _ netip.AddrPort) any { return uint64(src.Port()) }),
	rdmaCMField("sip4", func(src, _ netip.AddrPort) any { return src.Addr().String() }),
	rdmaCMField("dip4", func(_, dst netip.AddrPort) any { return dst.Addr().String() }),
}

// privateField compares a CM message's private data (or a part of it), in
// hex, where the capture kept all of it.
func privateField(name string, attr uint16, get func(c *CM) []byte) field {
	return field{name: "infiniband.cm." + name, text: true, ours: func(p *Packet) (any, bool) {
		c := &p.CM
		if c.Attr != attr || int(c.PrivateLen) < c.PrivateSize() || p.Problem == ProblemTruncated {
			return nil, false
		}
		b := get(c)
		return hex.EncodeToString(b), b != nil
	}}
}

// rdmaCMField compares a field of the RDMA-CM header of a REQ.
func rdmaCMField(name string, get func(src, dst netip.AddrPort) any) field {
	return field{name: "infiniband.cm.req.ip_cm." + name, ours: func(p *Packet) (any, bool) {
		src, dst, ok := p.CM.RDMACM()
		if !ok || p.Problem == ProblemTruncated || !src.Addr().Is4() {
			return nil, false
		}
		return get(src, dst), true
	}}
}

// icrcField is compared one way only: tshark leaves the ICRC out of
// packets it calls malformed, where the decoder still reads it.
var icrcField = field{name: "infiniband.invariant.crc", ours: func(p *Packet) (any, bool) { return uint64(p.ICRC), p.HasICRC }}

// parseTshark turns one printed tshark value into what ours returns.
func parseTshark(f field, s string) (any, error) {
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i] // a repeated field: the first occurrence
	}
	if strings.HasSuffix(f.name, "src") && strings.HasPrefix(f.name, "ip") || strings.HasSuffix(f.name, ".dst") ||
		strings.HasSuffix(f.name, ".sip4") || strings.HasSuffix(f.name, ".dip4") {
		return s, nil
	}
	switch s {
	case "True":
		return uint64(1), nil
	case "False":
		return uint64(0), nil
	}
	if f.text {
		return strings.ReplaceAll(s, ":", ""), nil
	}
	if f.bytes {
		return strconv.ParseUint(strings.ReplaceAll(s, ":", ""), 16, 64)
	}
	return strconv.ParseUint(s, 0, 64)
}

// fixtures returns every capture under testdata/pcap: the synthesized ones
// and the ones recorded on real rxe (recorded/), whoever adds them.
func fixtures(t testing.TB) []string {
	var files []string
	err := filepath.WalkDir(pcapDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".pcap" || ext == ".pcapng") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no captures in %s", pcapDir)
	}
	return files
}

// fixtureName names a fixture by its path under testdata/pcap.
func fixtureName(path string) string {
	rel, err := filepath.Rel(pcapDir, path)
	if err != nil {
		return filepath.Base(path)
	}
	return filepath.ToSlash(rel)
}

// TestAgreesWithTshark decodes every fixture and compares each packet's
// fields with tshark's infiniband dissector, the independent oracle.
func TestAgreesWithTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (Debian package tshark; testdata/deps.sh installs it)")
	}
	fields := append(append([]field{}, oracleFields...), icrcField)
	for _, file := range fixtures(t) {
		t.Run(fixtureName(file), func(t *testing.T) {
			args := []string{"-r", file, "-d", "udp.port==4791,infiniband", "-T", "fields", "-E", "occurrence=f", "-e", "frame.number"}
			for _, f := range fields {
				args = append(args, "-e", f.name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, tshark, args...)
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("tshark %s: %v: %s", file, err, stderr.String())
			}
			rows := map[int][]string{}
			for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
				cols := strings.Split(line, "\t")
				n, err := strconv.Atoi(cols[0])
				if err != nil || len(cols) != len(fields)+1 {
					t.Fatalf("tshark line %q: want %d columns", line, len(fields)+1)
				}
				rows[n] = cols[1:]
			}
			res, err := ScanFile(file, func(p *Packet) error {
				row, ok := rows[p.Number]
				if !ok {
					return fmt.Errorf("frame %d: tshark has no such frame", p.Number)
				}
				delete(rows, p.Number)
				for i, f := range fields {
					ours, have := f.ours(p)
					theirs := row[i]
					switch {
					case theirs == "" && !have:
					case theirs == "" && f.name == icrcField.name:
					case theirs == "" && p.Truncated && strings.HasPrefix(f.name, "infiniband.cm."):
						// tshark skips a MAD the snaplen cut; the decoder reads
						// what was kept (TestSnaplenKeepsHeaders checks it).
					case theirs == "":
						t.Errorf("frame %d: %s: tshark has none, decoder has %v (problem %s)", p.Number, f.name, ours, p.Problem)
					case !have:
						t.Errorf("frame %d: %s: tshark has %s, decoder none (problem %s)", p.Number, f.name, theirs, p.Problem)
					default:
						want, err := parseTshark(f, theirs)
						if err != nil {
							t.Errorf("frame %d: %s: tshark value %q: %v", p.Number, f.name, theirs, err)
						} else if want != ours {
							t.Errorf("frame %d: %s: tshark %v, decoder %v", p.Number, f.name, want, ours)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) > 0 {
				t.Errorf("tshark saw %d frames the decoder did not (of %d)", len(rows), res.Frames)
			}
		})
	}
}

// TestSnaplenKeepsHeaders decodes each capture and its copy cut at a small
// snaplen: every field the cut copy yields must equal the whole one's.
func TestSnaplenKeepsHeaders(t *testing.T) {
	pairs := map[string]string{
		"synth-rc-ud-cm.pcap":      "synth-rc-ud-cm-snaplen128.pcap",
		"synth-vlan-ipv6-tcp.pcap": "synth-vlan-ipv6-tcp-snaplen60.pcap",
	}
	for whole, cut := range pairs {
		t.Run(cut, func(t *testing.T) {
			var full []Packet
			if _, err := ScanFile(filepath.Join(pcapDir, whole), func(p *Packet) error {
				full = append(full, *p)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			truncated, headersCut := 0, 0
			_, err := ScanFile(filepath.Join(pcapDir, cut), func(p *Packet) error {
				w := &full[p.Number-1]
				if p.Truncated {
					truncated++
				}
				if p.Problem == ProblemTruncated {
					headersCut++
				}
				unsure := p.Problem == ProblemTruncated && !hasBTH(p) // cut before the BTH
				if !unsure && (p.Proto != w.Proto || p.PayloadLen != w.PayloadLen) || p.WireLen != w.WireLen {
					t.Errorf("frame %d: kind/wire/payload %v/%d/%d, whole %v/%d/%d", p.Number, p.Proto, p.WireLen, p.PayloadLen, w.Proto, w.WireLen, w.PayloadLen)
				}
				for _, f := range oracleFields {
					if f.name == "frame.cap_len" {
						continue
					}
					got, ok := f.ours(p)
					want, wok := f.ours(w)
					if ok && (!wok || got != want) {
						t.Errorf("frame %d: %s = %v, whole frame %v", p.Number, f.name, got, want)
					}
				}
				if p.CM.Attr != 0 && p.Problem == ProblemNone {
					// The snaplen may cut the private data and nothing else.
					got, want := p.CM, w.CM
					if !bytes.HasPrefix(want.Private(), got.Private()) {
						t.Errorf("frame %d: private data %x, whole frame %x", p.Number, got.Private(), want.Private())
					}
					got.PrivateData, got.PrivateLen, want.PrivateData, want.PrivateLen = [224]byte{}, 0, [224]byte{}, 0
					if got != want {
						t.Errorf("frame %d: CM %+v, whole frame %+v", p.Number, got, want)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if truncated == 0 || headersCut == 0 {
				t.Errorf("%d frames truncated, %d with headers cut: the fixture should have both", truncated, headersCut)
			}
		})
	}
}

// TestAgreesWithRecordedTshark compares the decoder with the tshark
// summary lines recorded beside the real capture, so the oracle still
// speaks where tshark is not installed: addresses, length, transport,
// operation and destination QP of every frame.
func TestAgreesWithRecordedTshark(t *testing.T) {
	rec, err := os.ReadFile(filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.tshark.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// "    1   0.000000    10.99.0.2 → 10.99.0.1    RRoCE 1098 RC RDMA Write First QP=0x00001a"
	line := regexp.MustCompile(`^\s*(\d+)\s+\S+\s+(\S+) → (\S+)\s+RRoCE (\d+) (RC|UC|RD|UD) (.+?) QP=(0x[0-9a-f]+)\s*$`)
	want := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(rec)), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("recorded line %q: not understood", l)
		}
		n, _ := strconv.Atoi(m[1])
		qp, _ := strconv.ParseUint(m[7], 0, 32)
		want[n] = fmt.Sprintf("%s>%s %s %s %s QP %d", m[2], m[3], m[4], m[5], strings.ToLower(m[6]), qp)
	}
	got := map[int]string{}
	if _, err := ScanFile(filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"), func(p *Packet) error {
		op := p.Op()
		got[p.Number] = fmt.Sprintf("%s>%s %d %s %s QP %d", p.Src, p.Dst, p.WireLen, op.Transport, strings.ToLower(op.Name), p.BTH.DestQP)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("decoder vs recorded tshark (-tshark +decoder):\n%s", d)
	}
}

// TestRecordedOpcodeCounts: the opcode counts the VM end-to-end test took
// (first byte after UDP 4791) beside each recorded capture equal the
// decoder's.
func TestRecordedOpcodeCounts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(pcapDir, "recorded", "*.opcodes.txt"))
	if len(files) == 0 {
		t.Skip("no recorded captures yet")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := map[uint8]int{}
			for _, l := range strings.Split(string(b), "\n") {
				var op, n int
				if _, err := fmt.Sscanf(l, "%d\t%d", &op, &n); err == nil && !strings.HasPrefix(l, "#") {
					want[uint8(op)] = n
				}
			}
			got := map[uint8]int{}
			pcap := strings.TrimSuffix(f, ".opcodes.txt") + ".pcap"
			if _, err := ScanFile(pcap, func(p *Packet) error {
				if p.HasBTH {
					got[p.BTH.Opcode]++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("opcode counts (-recorded +decoder):\n%s", d)
			}
		})
	}
}

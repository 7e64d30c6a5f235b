package roce

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// BenchmarkScan decodes and summarises the recorded ib_write_bw capture's
// frames, repeated to 100k frames, from memory (the reader, decoder and
// summary; no disk).
func BenchmarkScan(b *testing.B) {
	raw := frames(b, filepath.Join(pcapDir, "roce-ib_write_bw-10x4KiB.pcap"))
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	for i := 0; i < n; i++ {
		f := raw[i%len(raw)]
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f), Length: len(f)}, f); err != nil {
			b.Fatal(err)
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := NewSummary()
		if _, err := Scan(bytes.NewReader(data), func(p *Packet) error {
			s.Add(p)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		s.Finish()
		if s.Frames != n {
			b.Fatalf("%d frames", s.Frames)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

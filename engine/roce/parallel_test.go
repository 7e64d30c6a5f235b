package roce

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// packetLog is what a test keeps of each packet: the whole struct with
// its payload copied out of the reader's buffer.
type packetLog struct {
	P       Packet
	Payload []byte
}

func logScan(t testing.TB, data []byte, workers, stopAt int) ([]packetLog, ScanResult, error) {
	var out []packetLog
	errStop := errors.New("stop")
	fn := func(p *Packet) error {
		q := *p
		q.Payload = nil
		out = append(out, packetLog{q, append([]byte(nil), p.Payload...)})
		if stopAt > 0 && len(out) == stopAt {
			return errStop
		}
		return nil
	}
	var res ScanResult
	var err error
	if workers == 0 {
		res, err = Scan(bytes.NewReader(data), fn)
	} else {
		res, err = ScanParallel(bytes.NewReader(data), workers, fn)
	}
	return out, res, err
}

// TestScanParallelSameAsScan: every capture of the project's testdata,
// whole, cut short in the middle of a frame, and with fn stopping early,
// gives ScanParallel the same packets in the same order, the same result
// and the same error as Scan, with 1, 2 and 7 workers.
func TestScanParallelSameAsScan(t *testing.T) {
	var files []string
	for _, g := range []string{"../../testdata/pcap/*.pcap*", "../../testdata/pcap/recorded/*.pcap", "../../testdata/iwarp/*.pcap",
		"../../testdata/report/lossy/hosts/server/captures/*.pcap", "../../testdata/attrib/mixed/hosts/server/captures/*.pcap"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d captures found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			name   string
			data   []byte
			stopAt int
		}{{"whole", data, 0}, {"cut", data[:len(data)*2/3], 0}, {"stop", data, 1000}} {
			want, wres, werr := logScan(t, v.data, 0, v.stopAt)
			for _, w := range []int{1, 2, 7} {
				got, res, err := logScan(t, v.data, w, v.stopAt)
				if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
					t.Errorf("%s %s workers %d: error %v, Scan's %v", filepath.Base(f), v.name, w, err, werr)
				}
				if res != wres {
					t.Errorf("%s %s workers %d: %+v, Scan's %+v", filepath.Base(f), v.name, w, res, wres)
				}
				if len(got) != len(want) {
					t.Errorf("%s %s workers %d: %d packets, Scan %d", filepath.Base(f), v.name, w, len(got), len(want))
					continue
				}
				for i := range want {
					if !reflect.DeepEqual(want[i], got[i]) {
						t.Errorf("%s %s workers %d: packet %d differs:\nScan         %+v\nScanParallel %+v", filepath.Base(f), v.name, w, i, want[i], got[i])
						break
					}
				}
			}
		}
	}
}

// FuzzScanParallel: on any bytes ScanParallel returns what Scan returns.
func FuzzScanParallel(f *testing.F) {
	for _, g := range []string{"../../testdata/pcap/*.pcap*", "../../testdata/iwarp/*.pcap"} {
		m, _ := filepath.Glob(g)
		for _, file := range m {
			if b, err := os.ReadFile(file); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wres, werr := logScan(t, data, 0, 0)
		got, res, err := logScan(t, data, 2, 0)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || res != wres {
			t.Fatalf("ScanParallel %+v %v, Scan %+v %v", res, err, wres, werr)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("packets differ")
		}
	})
}

// TestScanParallelLargeFrames: batches end at batchBytes too, so 60 KB
// frames (jumbo GRO segments as tcpdump sees them) split into several
// batches, and the packets still equal Scan's.
func TestScanParallelLargeFrames(t *testing.T) {
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(1<<18, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	const n, size = 120, 60000
	for i := 0; i < n; i++ {
		f := make([]byte, size)
		copy(f[12:], []byte{0x08, 0x00, 0x45}) // IPv4, then garbage
		f[size-1] = byte(i)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: size, Length: size}, f); err != nil {
			t.Fatal(err)
		}
	}
	if n*size < 2*batchBytes {
		t.Fatal("the capture fills less than two batches by bytes")
	}
	want, wres, werr := logScan(t, buf.Bytes(), 0, 0)
	got, res, err := logScan(t, buf.Bytes(), 2, 0)
	if err != nil || werr != nil || res != wres || len(got) != n || !reflect.DeepEqual(want, got) {
		t.Fatalf("ScanParallel %d packets %+v %v; Scan %d %+v %v", len(got), res, err, len(want), wres, werr)
	}
}

package roce

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
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

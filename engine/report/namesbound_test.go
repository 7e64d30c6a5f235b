package report

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/attrib"
)

// TestCaptureNamesBounded: a received run directory whose thousands of
// workloads all fit every connection of its captures (each window starts
// inside every flow) cannot make the report hold connections × workloads
// names, nor mark thousands of windows on each capture's IO graph. Each
// connection's workload cell lists at most attrib.MaxMatchNames names and
// counts the rest; each IO graph marks at most maxMarks windows and says
// so. Before, a capture of 2,000 two-packet flows (150 KB) beside an
// events.jsonl of 2,000 workloads (420 KB) made `rlab report` take 22 s
// and write 50 MB (cubic in the two: 10,000 of each, an hour), and every
// capture drew every window.
func TestCaptureNamesBounded(t *testing.T) {
	const flows, workloads, captures = 300, 1500, 3
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 25, 23, 3, 2, 0, time.UTC)
	var ev strings.Builder
	fmt.Fprintf(&ev, `{"time":%q,"type":"run.start","message":"x"}`+"\n", t0.Add(-time.Second).Format(time.RFC3339Nano))
	for i := range workloads {
		st := t0
		if i > 0 {
			st = t0.Add(500*time.Millisecond + time.Duration(i+1)*time.Millisecond)
		}
		name := fmt.Sprintf("w%05d", i)
		fmt.Fprintf(&ev, `{"time":%q,"type":"step.start","step":"s","workload":%q}`+"\n", st.Format(time.RFC3339Nano), name)
		fmt.Fprintf(&ev, `{"time":%q,"type":"step.end","step":"s","workload":%q,"status":"ok"}`+"\n", t0.Add(20*time.Second).Format(time.RFC3339Nano), name)
	}
	must(t, os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(ev.String()), 0o600))
	res, err := json.Marshal(map[string]any{"schema": 2, "lab": "x", "id": "2026-11-25T230301Z", "status": "ok",
		"started": t0.Add(-time.Second), "finished": t0.Add(30 * time.Second), "workloads": []any{}, "samples": []any{}})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "results.json"), res, 0o600))
	caps := filepath.Join(dir, "hosts", "server", "captures")
	must(t, os.MkdirAll(caps, 0o700))
	pcap := roceFlowsPcap(flows, t0.Add(500*time.Millisecond), t0.Add(15*time.Second))
	for i := range captures {
		must(t, os.WriteFile(filepath.Join(caps, fmt.Sprintf("cap.c%d.pcap", i)), pcap, 0o600))
	}

	d, err := Build(dir, Options{NoGraphviz: true})
	must(t, err)
	if len(d.Captures) != captures {
		t.Fatalf("%d captures, want %d", len(d.Captures), captures)
	}
	for _, c := range d.Captures {
		if c.Error != "" {
			t.Fatalf("capture %s: %s", c.Name, c.Error)
		}
		if len(c.Connections.Rows) != flows {
			t.Fatalf("capture %s: %d connections, want %d", c.Name, len(c.Connections.Rows), flows)
		}
		want := fmt.Sprintf(" and %d more", workloads-attrib.MaxMatchNames)
		for _, r := range c.Connections.Rows {
			if cell := r[len(r)-1]; len(cell) > 200 || !strings.HasSuffix(cell, want) {
				t.Fatalf("capture %s: a connection's workload cell of %d bytes: %.80q…", c.Name, len(cell), cell)
			}
		}
		if c.IOGraph == nil || len(c.IOGraph.Marks) != maxMarks {
			t.Fatalf("capture %s: IO graph with %d marks, want %d", c.Name, len(c.IOGraph.Marks), maxMarks)
		}
		if !strings.Contains(strings.Join(c.Notes, "\n"), fmt.Sprintf("first %d workloads of %d", maxMarks, workloads)) {
			t.Errorf("capture %s: no note of the windows left unmarked: %q", c.Name, c.Notes)
		}
	}
}

// roceFlowsPcap is a pcap of n RoCEv2 flows (RDMA WRITE Only, each to its
// own QP from its own address), each one packet at a and one at b.
func roceFlowsPcap(n int, a, b time.Time) []byte {
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 65535)
	binary.LittleEndian.PutUint32(hdr[20:], 1) // Ethernet
	out := hdr
	for _, ts := range []time.Time{a, b} {
		for i := range n {
			payload := make([]byte, 12+16+4) // BTH, RETH, ICRC
			payload[0] = 0x0a                // RC RDMA WRITE Only
			payload[1] = 0x40
			binary.BigEndian.PutUint16(payload[2:], 0xffff)
			binary.BigEndian.PutUint32(payload[4:], uint32(0x11+i))
			udp := make([]byte, 8, 8+len(payload))
			binary.BigEndian.PutUint16(udp[0:], 49152)
			binary.BigEndian.PutUint16(udp[2:], 4791)
			binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
			udp = append(udp, payload...)
			ip := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 1, byte(i >> 8), byte(i), 10, 2, 0, 1}
			binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
			frame := append([]byte{2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 8, 0}, append(ip, udp...)...)
			rec := make([]byte, 16)
			binary.LittleEndian.PutUint32(rec[0:], uint32(ts.Unix()))
			binary.LittleEndian.PutUint32(rec[4:], uint32(ts.Nanosecond()/1000))
			binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
			binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
			out = append(append(out, rec...), frame...)
		}
	}
	return out
}

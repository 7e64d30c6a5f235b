package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/pcapgo"

	"github.com/rlab-dev/rlab/engine/results"
)

const pcapFixture = "../../testdata/pcap/roce-ib_write_bw-10x4KiB.pcap"

func runPcap(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"pcap"}, args...))
	err := root.Execute()
	return out.String(), err
}

func TestPcapCommand(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "io.svg")
	tests := []struct {
		name string
		args []string
		want []string // substrings of the output
		code int      // exit code carried by the error, 0 for none
	}{
		{"summary", []string{pcapFixture}, []string{"50 frames", "connection 10.99.0.2 -> 10.99.0.1 QP 0x00001a: 40 packets", "RC Acknowledge"}, 0},
		{"flow after file", []string{pcapFixture, "--flow", "3"}, []string{"first 3 RoCEv2 packets", "RDMA WRITE First PSN 11302718"}, 0},
		{"flow before file", []string{"--flow", "2", pcapFixture}, []string{"first 2 RoCEv2 packets"}, 0},
		{"flow default", []string{"--flow", pcapFixture}, []string{"first 20 RoCEv2 packets"}, 0},
		{"iograph", []string{pcapFixture, "--iograph", svg, "--interval", "1ms"}, []string{"50 frames"}, 0},
		{"missing file", []string{"/nonexistent.pcap"}, nil, exitFail},
		{"two files", []string{pcapFixture, pcapFixture}, nil, exitFail},
		{"bad interval", []string{pcapFixture, "--iograph", svg, "--interval", "0s"}, nil, exitFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runPcap(t, tc.args...)
			if tc.code != 0 {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != tc.code {
					t.Fatalf("error %v, want exit code %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("IO graph %s: %v, %d bytes", svg, err, len(b))
	}
}

func TestPcapJSON(t *testing.T) {
	out, err := runPcap(t, pcapFixture, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Frames      int `json:"frames"`
		Connections []struct {
			DestQP  int `json:"dest_qp"`
			Packets int `json:"packets"`
		} `json:"connections"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if s.Frames != 50 || len(s.Connections) != 2 || s.Connections[0].Packets != 40 || s.Connections[0].DestQP != 0x1a {
		t.Errorf("summary %+v", s)
	}
}

func TestPcapJSONWithFlow(t *testing.T) {
	out, err := runPcap(t, pcapFixture, "--json", "--flow", "3")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Frames int `json:"frames"`
		Ladder []struct {
			Frame   int    `json:"frame"`
			ToRight bool   `json:"to_right"`
			Label   string `json:"label"`
		} `json:"ladder"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json --flow output: %v\n%s", err, out)
	}
	if s.Frames != 50 || len(s.Ladder) != 3 || !s.Ladder[0].ToRight || s.Ladder[0].Label != "RDMA WRITE First PSN 11302718" {
		t.Errorf("summary %+v", s)
	}
}

// ringOf splits the capture src into n files base0 … base<n-1> as a
// wrapped tcpdump ring leaves them (the newest packets in base0).
func ringOf(t *testing.T, src, base string, n int) []string {
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
	var cis []gopacket.CaptureInfo
	var datas [][]byte
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		cis, datas = append(cis, ci), append(datas, append([]byte(nil), data...))
	}
	per := (len(cis) + n - 1) / n
	var files []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s%d", base, (i+1)%n)
		files = append(files, name)
		out, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := pcapgo.NewWriter(out)
		if err := w.WriteFileHeader(65535, r.LinkType()); err != nil {
			t.Fatal(err)
		}
		for k := min(i*per, len(cis)); k < min((i+1)*per, len(cis)); k++ {
			if err := w.WritePacket(cis[k], datas[k]); err != nil {
				t.Fatal(err)
			}
		}
		out.Close()
	}
	return files
}

// TestPcapSeveralFiles: pcap takes a ring's files (issue 13: it refused
// the 4 files one capture was split into), a capture folder, a run as rlab
// runs names it, and nothing (the newest run).
func TestPcapSeveralFiles(t *testing.T) {
	work := t.TempDir()
	capDir := filepath.Join(work, "runs", "quickstart", "2026-11-26T100000Z", "hosts", "server", "captures")
	if err := os.MkdirAll(capDir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(pcapFixture)
	ring := ringOf(t, abs, filepath.Join(capDir, "cap.roce.pcap"), 4)
	whole, _ := os.ReadFile(abs)
	os.WriteFile(filepath.Join(capDir, "cap.ctl.pcap"), whole, 0o644)
	r := &results.Run{Lab: "quickstart", ID: "2026-11-26T100000Z", Status: results.RunOK}
	if err := results.WriteRun(filepath.Dir(filepath.Dir(filepath.Dir(capDir))), r); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	tests := []struct {
		name string
		args []string
		want []string
		n    int // summaries printed ("frames" lines)
	}{
		{"ring files", ring, []string{"one capture in 4 files, read in time order", "50 frames"}, 1},
		{"ring files and a ladder", append([]string{"--flow", "3"}, ring...), []string{"first 3 RoCEv2 packets", "RDMA WRITE First PSN 11302718"}, 1},
		{"capture folder", []string{capDir}, []string{"one capture in 4 files", "cap.ctl.pcap"}, 2},
		{"run as rlab runs names it", []string{"quickstart/2026-11-26T100000Z"}, []string{"one capture in 4 files"}, 2},
		{"newest run", nil, []string{"one capture in 4 files"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runPcap(t, tc.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if got := strings.Count(out, " frames"); got != tc.n {
				t.Errorf("%d summaries, want %d:\n%s", got, tc.n, out)
			}
		})
	}
	out, err := runPcap(t, "--json", capDir)
	var docs []struct {
		Frames int      `json:"frames"`
		Files  []string `json:"files"`
	}
	if err != nil || json.Unmarshal([]byte(out), &docs) != nil || len(docs) != 2 || docs[1].Frames != 50 || len(docs[1].Files) != 4 ||
		filepath.Base(docs[1].Files[0]) != "cap.roce.pcap1" || filepath.Base(docs[1].Files[3]) != "cap.roce.pcap0" {
		t.Errorf("--json of a folder: %v %+v\n%s", err, docs, out)
	}
	if _, err := runPcap(t, "--iograph", filepath.Join(work, "io.svg"), capDir); err == nil || !strings.Contains(err.Error(), "one capture") {
		t.Errorf("--iograph of two captures: %v", err)
	}
}

// TestPcapRefusesFIFO: a FIFO named like a capture (given, in a folder, or
// in a received run directory) is refused at once with why, not read
// forever.
func TestPcapRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	caps := filepath.Join(dir, "hosts", "a", "captures")
	if err := os.MkdirAll(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(caps, "cap.a.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{fifo}, {caps}} {
		done := make(chan struct{})
		var out string
		var err error
		go func() { out, err = runPcap(t, args...); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a guard against the hang, not a timing assertion
			t.Fatalf("rlab pcap %s hangs on a FIFO", args[0])
		}
		if err == nil || !strings.Contains(err.Error()+out, "not a regular file (a FIFO)") {
			t.Errorf("rlab pcap %s: %v\n%s\nwant an error saying it is a FIFO", args[0], err, out)
		}
	}
}

// TestPcapIWARP: a soft-iWARP capture is no longer "TCP 14 packets": the
// MPA handshake, every RDMAP opcode per direction, the ladder of MPA
// frames and FPDUs, the IO graph's iWARP series and the JSON all say it.
func TestPcapIWARP(t *testing.T) {
	const fixture = "../../testdata/iwarp/iwarp-mpav2-crc.pcap"
	svg := filepath.Join(t.TempDir(), "io.svg")
	out, err := runPcap(t, "--flow", "4", fixture, "--iograph", svg, "--interval", "1ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"iWARP 1 connections (of 1 TCP connections)",
		"iWARP connection 10.99.0.3:40002 <-> 10.99.0.4:7174",
		"MPA Request: revision 2, markers off, CRC on, private data 4 bytes, enhanced (MPAv2), IRD 16 ORD 16",
		"CRC32c checked 5 (FPDUs captured whole), bad 0",
		"RDMA Read Request  1      1",
		"Terminate: layer DDP, error type 2, error code 0x05",
		"first 4 iWARP MPA frames and FPDUs between 10.99.0.3:40002 and 10.99.0.4:7174",
		"|-- Send [last] ---",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "no RoCEv2 packets") {
		t.Errorf("an iWARP capture drew the empty RoCEv2 ladder:\n%s", out)
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte(`data-series="iWARP"`)) {
		t.Errorf("IO graph %s has no iWARP series: %v", svg, err)
	}
	js, err := runPcap(t, "--json", fixture)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		IWARP struct {
			Connections []struct {
				Directions []struct {
					FPDUs int `json:"fpdus"`
				} `json:"directions"`
				CRC bool `json:"crc"`
			} `json:"connections"`
		} `json:"iwarp"`
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	if c := s.IWARP.Connections; len(c) != 1 || !c[0].CRC || c[0].Directions[0].FPDUs != 5 || c[0].Directions[1].FPDUs != 4 {
		t.Errorf("iwarp JSON %+v", s.IWARP)
	}
}

// TestPcapPublicIWARP: the public SoftUiWARP-vs-siw rping capture
// (testdata/iwarp/public/README.md), 15 TCP frames to tshark's eye, reads
// as its MPA handshake, four Sends and an RDMA Read Request.
func TestPcapPublicIWARP(t *testing.T) {
	out, err := runPcap(t, "../../testdata/iwarp/public/softuiwarp-rping.pcap")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"TCP 15 packets",
		"iWARP connection 10.10.1.1:42742 <-> 10.10.1.2:9999",
		"MPA Request: revision 1, markers off, CRC off, private data 0 bytes",
		"MPA Reply: revision 1, markers off, CRC off, private data 0 bytes",
		"MPA frames 1, FPDUs 4 (160 bytes, payload 64 bytes)",
		"Send  3      4    160       64",
		"RDMA Read Request  1      1     52        0",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestPcapSplitOnOneCore checks rlab pcap takes the split scan on one
// core as on two, and that on either it prints what the sequential reader
// prints (the text, the JSON, the IO graph).
func TestPcapSplitOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		if got := splitWorkers(); got != procs {
			t.Errorf("GOMAXPROCS=%d: %d split workers, want %d", procs, got, procs)
		}
	}
	svg := filepath.Join(t.TempDir(), "io.svg")
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		for _, f := range []string{pcapFixture, "../../testdata/iwarp/iwarp-mpav2-crc.pcap", "../../testdata/pcap/synth-vlan-ipv6-tcp.pcap"} {
			var outs [2]string
			var graphs [2][]byte
			for i, seq := range []bool{true, false} {
				pcapSequential = seq
				out, err := runPcap(t, f, "--json", "--iograph", svg, "--interval", "1ms")
				if err != nil {
					t.Fatal(err)
				}
				text, err := runPcap(t, f)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = out + text
				if graphs[i], err = os.ReadFile(svg); err != nil {
					t.Fatal(err)
				}
			}
			pcapSequential = false
			if outs[0] != outs[1] || !bytes.Equal(graphs[0], graphs[1]) {
				t.Errorf("%s, GOMAXPROCS=%d: the split scan prints other than the sequential reader:\n%s\n---\n%s", f, procs, outs[0], outs[1])
			}
		}
	}
}

// TestPcapJSONFailedCapture: with several captures, -json writes each
// one's document as it is made; a later capture that cannot be read left
// the array cut where the buffer had last been written (8,192 bytes of
// three documents: no JSON). The array now ends with the failed capture's
// files and error and is closed; the error is on stderr and the exit code
// is not 0.
func TestPcapJSONFailedCapture(t *testing.T) {
	dir := t.TempDir()
	whole, err := os.ReadFile(pcapFixture)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprintf("good%d.pcap", i))
		if err := os.WriteFile(f, whole, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
	}
	bad := filepath.Join(dir, "bad.pcap")
	if err := os.WriteFile(bad, []byte("not a capture, not a capture, not a capture"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, newRootCmd(), append([]string{"pcap", "--json"}, append(args, bad)...)...)
	if code == exitOK || !strings.Contains(errOut, "bad.pcap") {
		t.Errorf("exit %d, stderr %q: want a failure naming bad.pcap", code, errOut)
	}
	var docs []struct {
		Frames int      `json:"frames"`
		Files  []string `json:"files"`
		Error  string   `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatalf("stdout is not one JSON document: %v (%d bytes, ending %q)", err, len(out), out[max(0, len(out)-80):])
	}
	if len(docs) != 4 || docs[0].Frames != 50 || docs[3].Error == "" || len(docs[3].Files) != 1 || docs[3].Files[0] != bad {
		t.Errorf("documents %+v: want the 3 captures and the failed one's files and error", docs)
	}
}

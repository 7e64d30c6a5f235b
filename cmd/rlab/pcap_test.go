package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

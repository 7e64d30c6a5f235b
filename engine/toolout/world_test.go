package toolout

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/engine/toolout/tooltest"
)

// expectation is the sidecar NAME.expect of a fixture taken from the world
// (testdata/toolout/world): where the output came from, and the figures a
// person reads off it, as printed and in the unit printed.
type expectation struct {
	Source    string   `json:"source"`
	Retrieved string   `json:"retrieved"`
	Command   string   `json:"command"`
	Note      string   `json:"note"`
	Samples   int      `json:"samples"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Info      struct {
		Device        string `json:"device"`
		MTU           int    `json:"mtu"`
		GIDIndex      *int   `json:"gid_index"`
		LinkType      string `json:"link_type"`
		QPs           int    `json:"qps"`
		Connection    string `json:"connection"`
		Bidirectional bool   `json:"bidirectional"`
		BWUnit        string `json:"bw_unit"`
		LocalGID      string `json:"local_gid"`
		RemoteGID     string `json:"remote_gid"`
	} `json:"info"`
	Figures []struct {
		Metric  string  `json:"metric"`
		Size    int64   `json:"size"`
		Printed float64 `json:"printed"`
		Unit    string  `json:"unit"`
	} `json:"figures"`
}

// inVocabulary converts a figure as the tool printed it into the unit of
// the metric vocabulary: perftest's MB/sec and MiB/sec are 2^20 bytes per
// second, recorded in Gb/s; every other unit printed is the vocabulary's.
func inVocabulary(t *testing.T, v float64, unit string) float64 {
	switch unit {
	case "MB/sec", "MiB/sec":
		return v * 1048576 * 8 / 1e9
	case "Gb/sec", "Mpps", "usec", "Mbit/sec", "usec/iter", "count":
		return v
	}
	t.Fatalf("figure unit %q: say how it converts", unit)
	return 0
}

// TestWorld parses every output collected from public sources and checks the
// numbers a person reads off it, which its sidecar states; a fixture without
// a sidecar saying where it came from fails.
func TestWorld(t *testing.T) {
	dir := filepath.Join(fixtures, "world")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".expect") {
			if _, err := os.Stat(filepath.Join(dir, strings.TrimSuffix(name, ".expect"))); err != nil {
				t.Errorf("%s: no fixture beside it", name)
			}
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name+".expect"))
			if err != nil {
				t.Fatalf("every collected output needs NAME.expect saying where it came from: %v", err)
			}
			var x expectation
			if err := json.Unmarshal(b, &x); err != nil {
				t.Fatalf("%s.expect: %v", name, err)
			}
			if x.Source == "" || x.Command == "" || x.Retrieved == "" {
				t.Fatalf("%s.expect lacks source, command or retrieved", name)
			}
			in, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			tool, opts := fixtureCase(t, filepath.Join("world", name))
			ss, info, err := Parse(tool, in, opts)
			warnings := strings.Join(info.Warnings, "\n")
			for _, w := range x.Warnings {
				if !strings.Contains(warnings, w) {
					t.Errorf("warnings %q lack %q", info.Warnings, w)
				}
			}
			if x.Error != "" {
				if err == nil || !strings.Contains(err.Error(), x.Error) {
					t.Fatalf("error %v, want one saying %q", err, x.Error)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tooltest.CheckSamples(t, ss)
			if len(ss) != x.Samples {
				t.Errorf("%d samples, want %d", len(ss), x.Samples)
			}
			for _, f := range x.Figures {
				want := inVocabulary(t, f.Printed, f.Unit)
				got, ok := value(ss, f.Metric, f.Size)
				if !ok {
					t.Errorf("no %s sample at size %d", f.Metric, f.Size)
					continue
				}
				if math.Abs(got-want) > 1e-9*math.Max(1, want) {
					t.Errorf("%s at size %d = %v, want %v (%v %s as printed)", f.Metric, f.Size, got, want, f.Printed, f.Unit)
				}
			}
			xi := x.Info
			for _, c := range []struct {
				what      string
				got, want any
				set       bool
			}{
				{"device", info.Device, xi.Device, xi.Device != ""},
				{"MTU", info.MTU, xi.MTU, xi.MTU != 0},
				{"link type", info.LinkType, xi.LinkType, xi.LinkType != ""},
				{"QPs", info.QPs, xi.QPs, xi.QPs != 0},
				{"connection", info.Connection, xi.Connection, xi.Connection != ""},
				{"bidirectional", info.Bidirectional, xi.Bidirectional, true},
				{"BW unit", info.BWUnit, xi.BWUnit, xi.BWUnit != ""},
				{"local GID", info.LocalGID, xi.LocalGID, xi.LocalGID != ""},
				{"remote GID", info.RemoteGID, xi.RemoteGID, xi.RemoteGID != ""},
			} {
				if c.set && c.got != c.want {
					t.Errorf("%s %v, want %v", c.what, c.got, c.want)
				}
			}
			if xi.GIDIndex != nil && (info.GIDIndex == nil || *info.GIDIndex != *xi.GIDIndex) {
				t.Errorf("GID index %v, want %d", info.GIDIndex, *xi.GIDIndex)
			}
			for _, s := range ss {
				if got := s.Meta.Extra["bidirectional"] != ""; got != xi.Bidirectional {
					t.Errorf("sample %s/%d: bidirectional mark %v, want %v", s.Metric, s.Meta.Size, got, xi.Bidirectional)
				}
			}
		})
	}
	if n < 20 {
		t.Errorf("%d outputs collected from the world, want at least 20", n)
	}
}

// TestPerftestFormats covers table shapes no collected output shows yet,
// written from perftest's own format strings (src/perftest_parameters.h,
// src/write_bw.c at linux-rdma/perftest 00b55b6).
func TestPerftestFormats(t *testing.T) {
	const dashes = "---------------------------------------------------------------------------------------\n"
	t.Run("MiB/sec since perftest 24.07", func(t *testing.T) {
		// RESULT_FMT after commit 1d202bb "Display proper unit for MiB/sec results"
		in := " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n" +
			" 65536      1000             11000.50            10950.25\t\t     0.175204\n"
		ss, info, err := Parse("ib_write_bw", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := value(ss, "bw_avg", 65536); math.Abs(v-10950.25*mibToGbit) > 1e-9 {
			t.Errorf("bw_avg %v, want %v", v, 10950.25*mibToGbit)
		}
		if info.BWUnit != "MiB/sec" || len(info.Warnings) != 0 {
			t.Errorf("unit %q, warnings %q", info.BWUnit, info.Warnings)
		}
	})
	t.Run("-b --report-both", func(t *testing.T) {
		// write_bw.c: the summed table, then "Local results:" and
		// "Remote results:" each with its own header and row
		in := "                    RDMA_Write Bidirectional BW Test\n" + dashes +
			" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			" 65536      5000             180.10             179.90\t\t     0.343132\n" + dashes +
			dashes + "\n Local results: \n" + dashes +
			" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			" 65536      5000             90.20              90.00\t\t     0.171661\n" + dashes +
			"\n Remote results: \n" + dashes +
			" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			" 65536      5000             89.90              89.90\t\t     0.171471\n"
		ss, info, err := Parse("ib_write_bw", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 3 {
			t.Fatalf("%d samples, want the summed row's 3: %+v", len(ss), ss)
		}
		if v, _ := value(ss, "bw_avg", 65536); v != 179.90 {
			t.Errorf("bw_avg %v, want the sum 179.90", v)
		}
		want := []DirectionResult{{"local", 65536, 90.00, 0.171661}, {"remote", 65536, 89.90, 0.171471}}
		if d := cmp.Diff(want, info.PerDirection); d != "" || !info.Bidirectional {
			t.Errorf("bidirectional %v, per direction (-want +got):\n%s", info.Bidirectional, d)
		}
		if len(info.Warnings) != 0 {
			t.Errorf("warnings %q", info.Warnings)
		}
	})
	t.Run("-b in --out_json", func(t *testing.T) {
		// write_test_info_to_file names the test; REPORT_FMT_JSON the figures
		in := "{\n\"test_info\": {\n\"test\": \"Send_Bidirectional_BW_Test\"\n},\n\"results\": {\n\"MsgSize\": 65536,\n\"n_iterations\": 1000,\n\"BW_peak\": 190.10,\n\"BW_average\": 189.90,\n\"MsgRate\": 0.362206\n}\n}\n"
		ss, info, err := Parse("ib_send_bw", []byte(in), Options{JSON: true, ReportGbits: true})
		if err != nil {
			t.Fatal(err)
		}
		if !info.Bidirectional || len(ss) != 3 || ss[0].Meta.Extra["bidirectional"] == "" {
			t.Errorf("bidirectional %v, samples %+v", info.Bidirectional, ss)
		}
	})
	t.Run("--run_infinitely rows per interval", func(t *testing.T) {
		// print_bw_infinite_mode prints a row every -D seconds under one header
		in := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			" 65536      190000           0.00               99.61\t\t     0.190000\n" +
			" 65536      191000           0.00               100.13\t\t     0.191000\n"
		ss, _, err := Parse("ib_write_bw", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range ss {
			got = append(got, fmt.Sprintf("%s=%v@%d", s.Metric, s.Value, s.Meta.Interval))
		}
		want := []string{"bw_avg=99.61@1", "msg_rate=0.19@1", "bw_avg=100.13@2", "msg_rate=0.191@2"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	t.Run("-H histogram lines are read, not warned", func(t *testing.T) {
		// print_report_lat: "#, usec" then "%d, %g" per iteration, then the
		// table header again and the row
		hdr := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
		in := hdr + "#, usec\n1, 2.31\n2, 2.35\n3, 1.2e+01\n" + dashes + hdr +
			" 2       3          2.31           12.00        2.35     \t       5.55     \t4.56\t\t12.00 \t\t12.00\n"
		ss, info, err := Parse("ib_write_lat", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 7 || info.HistogramLines != 3 || len(info.Warnings) != 0 {
			t.Errorf("%d samples, %d histogram lines, warnings %q; want 7, 3, none", len(ss), info.HistogramLines, info.Warnings)
		}
	})
	t.Run("a line not read is a warning", func(t *testing.T) {
		in := "                    RDMA_Write BW Test\n Mtu             : 4096[B]\n something new in the header\n" + dashes +
			" a line perftest 26 may print\n" +
			" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   Goodput[Gb/sec]\n" +
			" 65536      1000           10.0               9.0                  0.017166        8.5\n" +
			" 65536 garbled\n"
		ss, info, err := Parse("ib_write_bw", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 3 {
			t.Errorf("%d samples, want 3", len(ss))
		}
		w := strings.Join(info.Warnings, "\n")
		for _, s := range []string{"something new in the header", "a line perftest 26 may print", `column "Goodput" not read`, "65536 garbled"} {
			if !strings.Contains(w, s) {
				t.Errorf("warnings %q lack %q", info.Warnings, s)
			}
		}
	})
	t.Run("a negative figure drops that value, not the table", func(t *testing.T) {
		// perftest issue #82: 5.60 printed negative BW average and t_avg
		// after a counter overflowed on a long run. Composed: a sweep
		// in RESULT_FMT whose 1 MiB row went negative.
		in := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			" 4096       1000             9.80               9.75\t\t     0.297546\n" +
			" 65536      1000             19.60              19.55\t\t     0.037289\n" +
			" 1048576    1000             20.01              -19.42\t\t     -0.002315\n"
		ss, info, err := Parse("ib_write_bw", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		tooltest.CheckSamples(t, ss)
		var got []string
		for _, s := range ss {
			got = append(got, fmt.Sprintf("%s@%d", s.Metric, s.Meta.Size))
		}
		want := []string{"bw_peak@4096", "bw_avg@4096", "msg_rate@4096", "bw_peak@65536", "bw_avg@65536", "msg_rate@65536", "bw_peak@1048576"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("samples (-want +got):\n%s", d)
		}
		w := strings.Join(info.Warnings, "\n")
		for _, s := range []string{"BW average is negative (-19.42)", "no bw_avg sample at 1048576 bytes", "MsgRate is negative (-0.002315)"} {
			if !strings.Contains(w, s) {
				t.Errorf("warnings %q lack %q", info.Warnings, s)
			}
		}
	})
	t.Run("pingpong line not read is a warning", func(t *testing.T) {
		in := "  local address:  LID 0x0000, QPN 0x000011, PSN 0x998c61, GID ::ffff:10.11.11.251\n" +
			"Max receive completion clock cycles = 1234\n" +
			"8192000 bytes in 0.19 seconds = 352.81 Mbit/sec\n1000 iters in 0.19 seconds = 185.75 usec/iter\n"
		_, info, err := Parse("ibv_rc_pingpong", []byte(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"Max receive completion clock cycles = 1234"}, info.Warnings); d != "" {
			t.Errorf("warnings (-want +got):\n%s", d)
		}
	})
}

// TestPerftestNaNColumn: ib_write_lat on a loaded TCG guest (rlab's own VM
// test, 2026-11-26, engine/vm nightly lab) printed t_stdev as "-nan"; the
// row's other values are kept and the missing one is said.
func TestPerftestNaNColumn(t *testing.T) {
	in := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n" +
		" 64 5000 145.66 111681.87 194.24 559.48 -nan 5767.58 56990.51\n"
	ss, info, err := Parse("ib_write_lat", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range ss {
		got[s.Metric] = s.Value
	}
	if _, ok := got["lat_stdev"]; ok || got["lat_typical"] != 194.24 || got["lat_p999"] != 56990.51 || len(ss) != 6 {
		t.Errorf("samples %v: want 6 without lat_stdev", got)
	}
	if w := strings.Join(info.Warnings, "\n"); !strings.Contains(w, `"t_stdev" is "-nan"`) {
		t.Errorf("warnings %q do not say the -nan column", info.Warnings)
	}
}

package toolout

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			checkSamples(t, ss)
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

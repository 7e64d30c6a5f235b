package lab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The units are netem's and tc's own, as tc-netem(8) and tc(8) ("RATES",
// "TIMES") write them.
func TestParsePercent(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{"1%", 1, ""}, {"0.1%", 0.1, ""}, {"0%", 0, ""}, {"100%", 100, ""}, {"5.5%", 5.5, ""},
		{"101%", 0, "over 100%"}, {"-1%", 0, "negative"}, {"1", 0, `no unit; write "1%"`},
		{"%", 0, "not a percentage"}, {"abc%", 0, "not a percentage"}, {"NaN%", 0, "not a percentage"},
		{"Inf%", 0, "not a percentage"}, {"0x10%", 0, "not a percentage"}, {"", 0, "not a percentage"},
	}
	for _, tt := range tests {
		got, err := ParsePercent(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParsePercent(%q) = %v, %v; want error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseNetemTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"2ms", 2 * time.Millisecond, ""}, {"500us", 500 * time.Microsecond, ""}, {"1.5ms", 1500 * time.Microsecond, ""},
		{"1s", time.Second, ""}, {"10msec", 10 * time.Millisecond, ""}, {"3usecs", 3 * time.Microsecond, ""}, {"0ms", 0, ""},
		{"-2ms", 0, "negative"}, {"2", 0, `no unit; write e.g. "2ms"`}, {"2min", 0, "not a time netem knows"},
		{"2h", 0, "not a time netem knows"}, {"61s", 0, "over 1m0s"}, {"0.1us", 0, "resolution"}, {"ms", 0, "not a time"},
		{"1e3ms", 0, "not a time"},
	}
	for _, tt := range tests {
		got, err := ParseNetemTime(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseNetemTime(%q) = %v, %v; want error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseNetemTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64 // bytes per second
		wantErr string
	}{
		{"100Mbit", 12_500_000, ""}, {"1Gbit", 125_000_000, ""}, {"1gbit", 125_000_000, ""}, {"8bit", 1, ""},
		{"10mbps", 10_000_000, ""}, {"1kibit", 128, ""}, {"1.5Mbit", 187_500, ""}, {"2mibps", 2 << 20, ""},
		{"100", 0, `no unit; write e.g. "100Mbit"`}, {"100Mbitz", 0, "not a rate tc knows"}, {"0Mbit", 0, "above zero"},
		{"-1Mbit", 0, "above zero"}, {"1bit", 0, "below one byte"}, {"1e20tbit", 0, "not a rate"}, {"99999999tbps", 0, "too large"},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRate(%q) = %v, %v; want error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzNetemUnits: the three parsers never panic, and what they accept is in
// range (0..100 %, 0..MaxNetemDelay in whole microseconds, a positive rate).
func FuzzNetemUnits(f *testing.F) {
	for _, s := range []string{"1%", "0.1%", "2ms", "500us", "1.5msec", "100Mbit", "1Gbit", "10kbps", "-1%", "1e9%", "", "%", "0x1p-2ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// What is accepted is in range, and the plan's text of it (Netem.String)
		// reads back as the same value.
		if v, err := ParsePercent(s); err == nil {
			txt := strconv.FormatFloat(v, 'f', -1, 64) + "%"
			if back, err := ParsePercent(txt); !(v >= 0 && v <= 100) || err != nil || back != v {
				t.Fatalf("ParsePercent(%q) = %v; its text %q reads %v, %v", s, v, txt, back, err)
			}
		}
		if d, err := ParseNetemTime(s); err == nil {
			if back, err := ParseNetemTime(netemTime(d)); d < 0 || d > MaxNetemDelay || d%time.Microsecond != 0 || err != nil || back != d {
				t.Fatalf("ParseNetemTime(%q) = %v; its text %q reads %v, %v", s, d, netemTime(d), back, err)
			}
		}
		if r, err := ParseRate(s); err == nil {
			if back, err := ParseRate(rateText(r)); r == 0 || r > 1e15 || err != nil || back != r {
				t.Fatalf("ParseRate(%q) = %v; its text %q reads %v, %v", s, r, rateText(r), back, err)
			}
		}
	})
}

// TestImpairDecode: the valid corpus's impair lab decodes to these
// impairments (netem's values, scope, text as the plan shows it).
func TestImpairDecode(t *testing.T) {
	l, diags := Load([]string{filepath.Join(corpus, "valid", "impair.hcl")}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	type row struct {
		Name, Host, Netdev, Text string
		Netem                    Netem
		During                   []string
	}
	var got []row
	for _, im := range l.Impairs {
		r := row{Name: im.Name, Host: im.Host.Name, Netdev: im.Netdev, Text: im.Netem.String(), Netem: im.Netem}
		for _, w := range im.During {
			r.During = append(r.During, w.Name)
		}
		got = append(got, r)
	}
	want := []row{
		// A 0 % point is per packet as the lossy ones are (loss is set).
		{Name: `loss["0"]`, Host: "client", Netdev: "eth1", Text: "loss 0%", Netem: Netem{PerPacket: true}, During: []string{`bw["0"]`}},
		{Name: `loss["1"]`, Host: "client", Netdev: "eth1", Text: "loss 1%", Netem: Netem{Loss: 1, PerPacket: true}, During: []string{`bw["1"]`}},
		{Name: `loss["5"]`, Host: "client", Netdev: "eth1", Text: "loss 5%", Netem: Netem{Loss: 5, PerPacket: true}, During: []string{`bw["5"]`}},
		{Name: "wan", Host: "server", Netdev: "eth1", Text: "delay 2ms 500us loss 0.1% duplicate 1% reorder 25% corrupt 0.01% rate 100Mbit",
			Netem: Netem{Delay: 2 * time.Millisecond, Jitter: 500 * time.Microsecond, Loss: 0.1, Duplicate: 1, Reorder: 25, Corrupt: 0.01, RateBytes: 12_500_000, PerPacket: true}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("impairments (-want +got):\n%s", d)
	}
	if ims := l.ImpairsOf(l.WorkloadByName(`bw["1"]`)); len(ims) != 2 || ims[0].Name != `loss["1"]` || ims[1].Name != "wan" {
		t.Errorf("ImpairsOf(bw[1]) = %v, want loss[1] and the whole-run wan", ims)
	}
}

// TestNetemPerPacket: an impairment is per packet when the lab sets loss,
// duplicate, reorder or corrupt, even to 0 % (a sweep's 0 % point sends
// as its lossy points do); delay, jitter and rate alone are not.
func TestNetemPerPacket(t *testing.T) {
	for _, tt := range []struct {
		attrs string
		want  bool
	}{
		{`loss = "0%"`, true},
		{`loss = "1%"`, true},
		{`duplicate = "0%"`, true},
		{"delay = \"10ms\"\n  reorder = \"0%\"", true},
		{`corrupt = "0.1%"`, true},
		{`delay = "10ms"`, false},
		{"delay = \"10ms\"\n  jitter = \"1ms\"", false},
		{`rate = "100Mbit"`, false},
	} {
		src := `lab "x" {}
host "h" {
  address = "192.0.2.1"
}
impair "i" {
  host   = host.h
  netdev = "eth1"
  ` + tt.attrs + `
}
`
		dir := t.TempDir()
		f := filepath.Join(dir, "x.hcl")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		l, diags := Load([]string{f}, LoadOptions{})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", tt.attrs, diags.Error())
		}
		if got := l.Impairs[0].Netem.PerPacket; got != tt.want {
			t.Errorf("%s: PerPacket %v, want %v", tt.attrs, got, tt.want)
		}
	}
}

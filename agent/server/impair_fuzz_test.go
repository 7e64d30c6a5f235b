package server

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestNetemText: the kernel's netem parameters as the run records them, in
// tc's words (probabilities are fractions of 2^32-1, tc-netem(8)).
func TestNetemText(t *testing.T) {
	for _, tt := range []struct {
		n    netlink.Netem
		want string
	}{
		{netlink.Netem{}, "loss 0%"},
		{netlink.Netem{Loss: 42949673, Latency: 2000, Jitter: 500}, "loss 1% latency 2000 ticks jitter 500 ticks"},
		{netlink.Netem{Loss: math.MaxUint32, Duplicate: 1, ReorderProb: 429496730, CorruptProb: 4294967}, "loss 100% duplicate 2.328e-08% reorder 10% corrupt 0.1%"},
		{netlink.Netem{Rate64: 12500000}, "loss 0% rate 100000000bit"},
		// A rate the kernel holds in 64 bits of bytes per second is more
		// than 64 bits of bits: it was printed wrapped around.
		{netlink.Netem{Rate64: 1 << 62}, "loss 0% rate 36893488147419103232bit"},
	} {
		if got := netemText(&tt.n); got != tt.want {
			t.Errorf("netemText(%+v) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// FuzzNetemText: whatever the kernel reads back, the text names each
// parameter it has once, loss always, with the kernel's number: ticks and
// bits exactly, probabilities to tc's four digits and within 0..100 %.
func FuzzNetemText(f *testing.F) {
	f.Add(uint32(42949673), uint32(2000), uint32(500), uint32(0), uint32(0), uint32(0), uint64(12500000))
	f.Add(uint32(math.MaxUint32), uint32(0), uint32(0), uint32(1), uint32(2), uint32(3), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, loss, latency, jitter, dup, reorder, corrupt uint32, rate uint64) {
		n := &netlink.Netem{Loss: loss, Latency: latency, Jitter: jitter, Duplicate: dup, ReorderProb: reorder, CorruptProb: corrupt, Rate64: rate}
		text := netemText(n)
		w := strings.Fields(text)
		got := map[string]string{}
		for i := 0; i < len(w); i += 2 {
			if i+1 >= len(w) {
				t.Fatalf("%q: %q has no value", text, w[i])
			}
			if _, dup := got[w[i]]; dup {
				t.Fatalf("%q: %s twice", text, w[i])
			}
			got[w[i]] = w[i+1]
			if w[i] == "latency" || w[i] == "jitter" {
				if i+2 >= len(w) || w[i+2] != "ticks" {
					t.Fatalf("%q: %s without ticks", text, w[i])
				}
				i++
			}
		}
		pct := func(name string, u uint32, always bool) {
			s, ok := got[name]
			if !ok {
				if u > 0 || always {
					t.Fatalf("%q: no %s for %d", text, name, u)
				}
				return
			}
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
			want := float64(u) * 100 / math.MaxUint32
			if err != nil || !strings.HasSuffix(s, "%") || v < 0 || v > 100 || math.Abs(v-want) > want*1e-3 {
				t.Fatalf("%q: %s %q, want %v%%", text, name, s, want)
			}
		}
		pct("loss", loss, true)
		pct("duplicate", dup, false)
		pct("reorder", reorder, false)
		pct("corrupt", corrupt, false)
		for name, want := range map[string]uint32{"latency": latency, "jitter": jitter} {
			if s, ok := got[name]; ok != (want > 0) || ok && s != strconv.FormatUint(uint64(want), 10) {
				t.Fatalf("%q: %s %q, want %d", text, name, s, want)
			}
		}
		wantRate := new(big.Int).Lsh(new(big.Int).SetUint64(rate), 3).String() + "bit"
		if s, ok := got["rate"]; ok != (rate > 0) || ok && s != wantRate {
			t.Fatalf("%q: rate %q, want %s", text, s, wantRate)
		}
	})
}

// TestConfigValue: an option's value in a kernel config, as written there;
// "n" when no line sets it.
func TestConfigValue(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"CONFIG_NET_SCH_HTB=y\n# CONFIG_NET_SCH_NETEM is not set\n", "n"},
		{"CONFIG_NET_SCH_NETEM=m\n", "m"},
		{"CONFIG_NET_SCH_NETEM=y\r\n", "y"},
		{"CONFIG_NET_SCH_NETEM_X=y\nCONFIG_NET_SCH_NETEM=\"m\"", "m"},
		// A line longer than bufio.Scanner's 64 KiB made the rest "not set".
		{"CONFIG_CMDLINE=\"" + strings.Repeat("x", 70000) + "\"\nCONFIG_NET_SCH_NETEM=m\n", "m"},
	} {
		if got := configValue([]byte(tt.in), "CONFIG_NET_SCH_NETEM"); got != tt.want {
			t.Errorf("configValue(%.60q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzConfigValue: whatever a host's kernel config holds, an option set on
// a line appended to it is read as set there unless an earlier line set it,
// and the value is one line's.
func FuzzConfigValue(f *testing.F) {
	f.Add([]byte("CONFIG_NET_SCH_HTB=y\n# CONFIG_NET_SCH_NETEM is not set\n"))
	f.Add([]byte("CONFIG_NET_SCH_NETEM=\"m\"\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := configValue(b, "CONFIG_NET_SCH_NETEM")
		if strings.ContainsAny(v, "\n") {
			t.Fatalf("%q: value %q", b, v)
		}
		if !strings.Contains(string(b), "CONFIG_NET_SCH_NETEM=") {
			if v != "n" {
				t.Fatalf("%q: not set in the file, read %q", b, v)
			}
			if got := configValue(append(slices.Clip(b), "\nCONFIG_NET_SCH_NETEM=m\n"...), "CONFIG_NET_SCH_NETEM"); got != "m" {
				t.Fatalf("%q: an appended CONFIG_NET_SCH_NETEM=m read %q", b, got)
			}
		}
	})
}

package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// FuzzLoad feeds arbitrary bytes to the loader (parse, evaluate, validate)
// and to fmt: nothing may panic or hang, every error must come back as a
// diagnostic with a summary, and a lab returned without errors must be
// consistent (every reference resolved).
func FuzzLoad(f *testing.F) {
	for _, g := range []string{"../../labs/*.hcl", corpus + "/valid/*.hcl", corpus + "/errors/*.hcl", corpus + "/folder/*.hcl"} {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	dir, _ := filepath.Abs("../../labs")
	f.Fuzz(func(t *testing.T, src []byte) {
		l, diags := LoadSource("fuzz.hcl", src, dir, LoadOptions{})
		// The same file gets the same diagnostics, in the same order, every
		// time (the loader ranges over maps of attributes and blocks).
		if _, again := LoadSource("fuzz.hcl", src, dir, LoadOptions{}); diagLines(diags) != diagLines(again) {
			t.Fatalf("two loads differ:\n%s\n---\n%s", diagLines(diags), diagLines(again))
		}
		for _, d := range diags {
			if d.Summary == "" {
				t.Fatalf("diagnostic without summary: %+v", d)
			}
		}
		if l != nil && !diags.HasErrors() {
			checkModel(t, l)
		}
		Format("fuzz.hcl", src)
	})
}

func checkModel(t *testing.T, l *Lab) {
	t.Helper()
	slugs := map[string]bool{}
	for _, h := range l.Hosts {
		if h.Slug == "" || slugs[h.Slug] {
			t.Fatalf("host %q has an empty or repeated slug %q", h.Name, h.Slug)
		}
		slugs[h.Slug] = true
		if h.VM == nil && h.Address == "" {
			t.Fatalf("host %q has no address and no vm", h.Name)
		}
	}
	for _, r := range l.Devices {
		if r.Host == nil || (r.Netdev == "") != r.Found() || r.Device == "" || r.Port < 1 {
			t.Fatalf("rxe %q incomplete: %+v", r.Name, r)
		}
	}
	for _, w := range l.Workloads {
		for _, h := range w.Hosts() {
			if h == nil {
				t.Fatalf("workload %q has a side without host", w.Name)
			}
		}
		if w.Tool == "exec" && len(w.Command) == 0 {
			t.Fatalf("exec workload %q without command", w.Name)
		}
	}
	for _, c := range l.Captures {
		if c.Host == nil {
			t.Fatalf("capture %q without host", c.Name)
		}
	}
	for _, im := range l.Impairs {
		n := im.Netem
		if im.Host == nil || !validNetdev(im.Netdev) || n.Loss < 0 || n.Loss > 100 || n.Delay < 0 || (n.Jitter > 0 && n.Delay == 0) || (n.Reorder > 0 && n.Delay == 0) {
			t.Fatalf("impair %q is not what the loader checks: host %v netdev %q netem %+v", im.Name, im.Host, im.Netdev, n)
		}
	}
}

// FuzzUnits: sizes and durations parse strictly and never panic; a size
// that parses is not negative, and its bare number form parses to the same.
func FuzzUnits(f *testing.F) {
	for _, s := range []string{"4096", "64KiB", "1GiB", "10MB", "1.5GiB", "64kib", "-1", "30s", "1h30m", "30", "9223372036854775807", "8589934592GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil {
			if n < 0 {
				t.Fatalf("ParseSize(%q) = %d", s, n)
			}
			if m, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || m != n {
				t.Fatalf("ParseSize(%q) = %d, but its number form gives %d, %v", s, n, m, err)
			}
		}
		if d, err := ParseDuration(s); err == nil && d.String() == "" {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
	})
}

// diagLines is every diagnostic with its range, in order.
func diagLines(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%d %s: %s: %s\n", d.Severity, d.Subject, d.Summary, d.Detail)
	}
	return b.String()
}

// TestUnsupportedArgumentsInFileOrder: a block's unknown arguments are
// reported in file order, the same on every load (hclsyntax reports them
// from a map; found by FuzzLoad, its input kept as a seed).
func TestUnsupportedArgumentsInFileOrder(t *testing.T) {
	src := []byte("lab \"x\" {}\nhost \"a\" { address = \"192.0.2.1\" }\nrxe \"r\" {\n  host = host.a\n  netdev = \"eth1\"\n  alpha = 1\n  bravo = 2\n  charlie = 3\n  delta = 4\n  echo = 5\n}\n")
	for range 20 {
		_, diags := LoadSource("order.hcl", src, ".", LoadOptions{})
		var lines []int
		for _, d := range diags {
			if d.Summary == "Unsupported argument" {
				lines = append(lines, d.Subject.Start.Line)
			}
		}
		if !slices.Equal(lines, []int{6, 7, 8, 9, 10}) {
			t.Fatalf("unsupported arguments on lines %v, want 6..10 in order:\n%s", lines, diagLines(diags))
		}
	}
}

// TestUnknownFunctionSuggestion: a call to an unknown function is told the
// closest function, the same on every load (hclsyntax told the first within
// two edits in map order: "pow" once, "log" the next time, for "to").
func TestUnknownFunctionSuggestion(t *testing.T) {
	for _, tt := range []struct{ call, want string }{
		{`uper("x")`, `There is no function named "uper". Did you mean "upper"?`},
		{`to(1)`, `There is no function named "to".`},
	} {
		src := []byte("lab \"x\" { description = " + tt.call + " }\nhost \"a\" { address = \"192.0.2.1\" }\n")
		for range 20 {
			_, diags := LoadSource("f.hcl", src, ".", LoadOptions{})
			var got []string
			for _, d := range diags {
				if d.Summary == "Call to unknown function" {
					got = append(got, d.Detail)
				}
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Fatalf("%s: %q, want %q", tt.call, got, tt.want)
			}
		}
	}
}

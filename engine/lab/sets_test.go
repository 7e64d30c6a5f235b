package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSetsBounded: cty files a set's elements by a checksum of their text
// (a number's first 10 digits) and compares each new element with every
// one filed under the same key, two numbers in tens of microseconds: a set
// of 1,000 numbers differing past their 10th digit held rlab validate 37 s
// (2,000: past two minutes), however it was made. Each shape below is
// refused within seconds, naming the set.
func TestSetsBounded(t *testing.T) {
	const alike = "flatten([for a in range(10) : [for b in range(100) : 1 + (a * 100 + b) / 1e12]])"
	for _, c := range []struct {
		name, lab string
		varFile   string
	}{
		{name: "toset", lab: "locals {\n  s = toset(" + alike + ")\n}\n"},
		{name: "setunion of a list", lab: "locals {\n  s = setunion(" + alike + ", [1])\n}\n"},
		{name: "distinct", lab: "locals {\n  s = distinct(" + alike + ")\n}\n"},
		{name: "conditional unifies with a set", lab: "locals {\n  s = true ? " + alike + " : toset([1])\n}\n"},
		{name: "setproduct", lab: "locals {\n  s = setproduct([1.00000000001, 1.00000000002], [1, 2])\n}\n"},
		{name: "set variable from a var-file", lab: "variable \"v\" {\n  type = set(number)\n  default = []\n}\n",
			varFile: "{\"v\": [" + strings.TrimSuffix(strings.Repeat("1.000000000001,1.000000000002,1.000000000003,1.000000000004,1.000000000005,", 200), ",") + "]}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "lab.hcl")
			must(t, os.WriteFile(p, []byte("host \"a\" {\n  address = \"192.0.2.1\"\n}\n"+c.lab), 0o644))
			var opts LoadOptions
			if c.varFile != "" {
				vf := filepath.Join(dir, "v.json")
				must(t, os.WriteFile(vf, []byte(c.varFile), 0o644))
				opts.VarFiles = []string{vf}
			}
			start := time.Now()
			_, diags := Load([]string{p}, opts)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s, want under 5s", took.Round(time.Millisecond))
			}
			if !strings.Contains(diagLines(diags), SetLimitSummary) {
				t.Errorf("not refused as %q:\n%s", SetLimitSummary, diagLines(diags))
			}
		})
	}
}

// TestSetsOrdinary: sets and distinct() of what a lab holds pass, with
// the elements stdlib would keep; distinct() of 2,000 different fractions
// (2 million comparisons in stdlib's, past a minute) is quick.
func TestSetsOrdinary(t *testing.T) {
	lab := `host "a" {
  address = "192.0.2.1"
}
locals {
  fr = flatten([for a in range(20) : [for b in range(100) : a * 100 + b + 0.5]])
}
lab "s" {
  description = "${length(distinct(local.fr))} ${join(",", distinct(["b", "a", "b", "c", "a"]))} ${length(toset([1, 1.0, 2, "2", 10737418240, 10737418241]))} ${length(setunion(["x"], ["x", "y"]))} ${length(distinct([1.5, 1.50, 3e-20, 3e-20]))}"
}
`
	dir := t.TempDir()
	p := filepath.Join(dir, "lab.hcl")
	must(t, os.WriteFile(p, []byte(lab), 0o644))
	start := time.Now()
	l, diags := Load([]string{p}, LoadOptions{})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s, want under 5s", took.Round(time.Millisecond))
	}
	if diags.HasErrors() {
		t.Fatalf("errors:\n%s", diagLines(diags))
	}
	if want := "2000 b,a,c 4 2 2"; l.Description != want {
		t.Errorf("description %q, want %q", l.Description, want)
	}
}

// TestSharedValuesBounded: a list or object of references shares its
// elements, so 30 locals each twice the one before are 2^30 values in a
// 1 KB lab; a conditional over the last unified their types for hours
// (1.9 GB in the first minute). Building them is charged now, refused
// within seconds at the local that passes the budget.
func TestSharedValuesBounded(t *testing.T) {
	for _, c := range []struct{ name, double, use string }{
		{name: "list, conditional", double: "[local.a%d, local.a%d]", use: "true ? local.a30 : local.a30"},
		{name: "object, conditional", double: "{ x = local.a%d, y = local.a%d }", use: "true ? local.a30 : local.a30"},
		{name: "list, setunion", double: "[local.a%d, local.a%d]", use: "setunion(local.a30, [])"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("host \"a\" {\n  address = \"192.0.2.1\"\n}\nlocals {\n  a0 = [1]\n")
			for i := 1; i <= 30; i++ {
				fmt.Fprintf(&b, "  a%d = "+c.double+"\n", i, i-1, i-1)
			}
			b.WriteString("  c = " + c.use + "\n}\n")
			p := filepath.Join(t.TempDir(), "lab.hcl")
			must(t, os.WriteFile(p, []byte(b.String()), 0o644))
			start := time.Now()
			_, diags := Load([]string{p}, LoadOptions{})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s, want under 5s", took.Round(time.Millisecond))
			}
			if !strings.Contains(diagLines(diags), EvalLimitSummary) {
				t.Errorf("not refused as %q:\n%s", EvalLimitSummary, diagLines(diags))
			}
		})
	}
}

// TestDuringBounded: a capture of 10,000 instances, each during a workload
// of 5,000 instances (a 700-byte lab), held rlab validate 300 s and 1 GB
// (every capture kept and walked all 5,000). The pairs are bounded
// (MaxDuringPairs), refused at the capture that passes the bound.
func TestDuringBounded(t *testing.T) {
	lab := `lab "g" {
  description = "g"
}
host "h" {
  count   = 10000
  address = cidrhost("10.0.0.0/8", count.index + 1)
}
rxe "r" {
  count  = 10000
  host   = host.h[count.index]
  netdev = "eth1"
}
workload "w" {
  count      = 5000
  tool       = "ib_write_bw"
  server     = rxe.r[count.index * 2]
  client     = rxe.r[count.index * 2 + 1]
  sizes      = ["64KiB"]
  iterations = 1000
}
capture "c" {
  count  = 10000
  host   = host.h[count.index]
  netdev = "eth1"
  during = [workload.w]
}
`
	p := filepath.Join(t.TempDir(), "lab.hcl")
	must(t, os.WriteFile(p, []byte(lab), 0o644))
	start := time.Now()
	_, diags := Load([]string{p}, LoadOptions{})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s, want under 20s", took.Round(time.Millisecond))
	}
	if got := strings.Count(diagLines(diags), "Too many during workloads"); got != 1 {
		t.Errorf("%d errors naming the during bound, want 1:\n%.2000s", got, diagLines(diags))
	}
}

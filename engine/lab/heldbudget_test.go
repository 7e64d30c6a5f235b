package lab

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// TestHeldValuesCharged: what a block instance holds is charged per
// instance, references included (SECURITY 148). command = local.cmd, a
// 1 MiB list made once, in 100 workloads loaded before (100 MiB of
// "asked for" text in report.html, 10 GB for 10,000 instances, written
// after the evaluation guard); now the lab is refused at the value of
// command, and a lab that loads holds at most MaxEvalBytes of argv in all
// its workloads, which bounds everything written out per workload.
func TestHeldValuesCharged(t *testing.T) {
	for _, tc := range []struct {
		n       int
		refused bool
	}{{40, false}, {100, true}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			src := fmt.Sprintf(`lab "held" {}
locals {
  cmd = ["echo", format("%%01048576d", 0)]
}
host "h" {
  address = "192.0.2.1"
}
workload "w" {
  for_each = toset([for i in range(%d) : tostring(i)])
  tool     = "exec"
  host     = host.h
  command  = local.cmd
}
`, tc.n)
			l, diags := LoadSource("held.hcl", []byte(src), t.TempDir(), LoadOptions{})
			if tc.refused {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), EvalLimitSummary) || !strings.Contains(diags.Error(), "the value of command") {
					t.Fatalf("diagnostics %v: want %q at the value of command", diags, EvalLimitSummary)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var held int64
			for _, w := range l.Workloads {
				for _, a := range append(w.Command, w.Args...) {
					held += int64(len(a)) + 1
				}
			}
			if len(l.Workloads) != tc.n || held > MaxEvalBytes {
				t.Errorf("%d workloads holding %d bytes of argv: want %d within %d", len(l.Workloads), held, tc.n, MaxEvalBytes)
			}
		})
	}
}

// TestExpectEvalTimeBounded: a run's end evaluates expect conditions after
// the command's evaluation guard, on what the load left of the budget, and
// a step of it may read a whole string: this condition loops strlen() over
// a 1 MiB local 90,000 times (about 0.06 s each: nearly two hours; it does
// not run at load, where result.repeat is unknown). With LimitEvalTime it
// stops at the next metered step past the limit and says so; a later
// condition is not decided either (and does not wait).
func TestExpectEvalTimeBounded(t *testing.T) {
	src := `lab "slow" {}
locals {
  big = format("%01048576d", 0)
}
host "h" {
  address = "192.0.2.1"
}
workload "w" {
  tool    = "exec"
  host    = host.h
  command = ["true"]
  expect {
    condition = length(flatten([for i in range(result.repeat * 300) : [for j in range(300) : strlen(local.big)]])) > 0
  }
  expect {
    condition = result.repeat >= 1
  }
}
`
	l, diags := LoadSource("slow.hcl", []byte(src), t.TempDir(), LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	l.LimitEvalTime(time.Second)
	result := map[string]cty.Value{"repeat": cty.NumberIntVal(1), "exit_code": cty.NumberIntVal(0)}
	done := make(chan hcl2Result, 1)
	go func() {
		held, d := l.Workloads[0].Expects[0].Eval(result)
		done <- hcl2Result{held, d.Error()}
	}()
	var got hcl2Result
	select {
	case got = <-done:
	case <-time.After(time.Minute): // the limit is 1 s; without it, hours
		t.Fatal("the condition was still being evaluated after a minute")
	}
	if got.held || !strings.Contains(got.diags, "for its expect conditions ran out") {
		t.Errorf("held %v, diagnostics %q: want not held, the time limit named", got.held, got.diags)
	}
	if held, d := l.Workloads[0].Expects[1].Eval(result); held || !d.HasErrors() {
		t.Errorf("the later comparison: held %v, %v; want not decided", held, d)
	}
}

type hcl2Result struct {
	held  bool
	diags string
}

// TestConditionTextCharged: the source text of an expect condition is
// written out for each instance (results.json, report.html), so it is
// charged per instance like a held value (SECURITY 163): a 1 MiB comment
// inside the condition in 100 workloads is refused at the condition's
// text (10,000 such instances loaded from a 1 MiB lab before: 10 GB of
// text); 40 load, their conditions' text within MaxEvalBytes.
func TestConditionTextCharged(t *testing.T) {
	for _, tc := range []struct {
		n       int
		refused bool
	}{{40, false}, {100, true}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			src := fmt.Sprintf(`lab "cond" {}
host "h" {
  address = "192.0.2.1"
}
workload "w" {
  for_each = toset([for i in range(%d) : tostring(i)])
  tool     = "exec"
  host     = host.h
  command  = ["true"]
  expect {
    condition = (result.exit_code == 0 /* %s */)
  }
}
`, tc.n, strings.Repeat("x", 1<<20))
			l, diags := LoadSource("cond.hcl", []byte(src), t.TempDir(), LoadOptions{})
			if tc.refused {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), EvalLimitSummary) || !strings.Contains(diags.Error(), "the text of condition") {
					t.Fatalf("diagnostics %v: want %q at the text of condition", diags, EvalLimitSummary)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var text int64
			for _, w := range l.Workloads {
				for _, e := range w.Expects {
					r := e.Condition.Range()
					text += int64(r.End.Byte - r.Start.Byte)
				}
			}
			if len(l.Workloads) != tc.n || text > MaxEvalBytes {
				t.Errorf("%d workloads with %d bytes of condition text: want %d within %d", len(l.Workloads), text, tc.n, MaxEvalBytes)
			}
		})
	}
}

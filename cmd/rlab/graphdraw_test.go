package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/graph"
	"github.com/rlab-dev/rlab/engine/lab"
)

// A small lab whose graph Graphviz takes minutes to lay out (SECURITY
// 108): 1,000 hosts, 10,000 workloads between them, 600 bytes. Its load
// is bounded (the evaluation guard); dot's layout, after it, is bounded by
// drawSVG, which then draws the simple layout.
const denseLab = `lab "dense" {}
locals {
  n = [for i in range(1000) : tostring(i)]
  pairs = { for i in flatten([for a in range(10) : [for b in range(1000) : a*1000+b]]) : tostring(i) => [tostring(i % 1000), tostring((i * 7919 + 13) % 1000)] }
}
host "h" {
  for_each = toset(local.n)
  address  = "10.0.${floor(tonumber(each.key)/250)}.${tonumber(each.key)%250+1}"
}
rxe "r" {
  for_each = toset(local.n)
  host     = host.h[each.key]
  netdev   = "eth0"
}
workload "w" {
  for_each = local.pairs
  tool   = "ib_write_bw"
  server = rxe.r[each.value[0]]
  client = rxe.r[each.value[1]]
}
`

func TestGraphDrawBounded(t *testing.T) {
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("graphviz dot not installed")
	}
	p := filepath.Join(t.TempDir(), "dense.hcl")
	if err := os.WriteFile(p, []byte(denseLab), 0o644); err != nil {
		t.Fatal(err)
	}
	g, diags, err := graph.Load(p, lab.LoadOptions{})
	if err != nil {
		t.Fatalf("load: %v %v", err, diags)
	}
	if len(g.Hosts) != 1000 || len(g.Workloads) != 10000 {
		t.Fatalf("graph of %d hosts, %d workloads", len(g.Hosts), len(g.Workloads))
	}
	for _, limit := range []time.Duration{time.Nanosecond, 2 * time.Second} {
		var out, note bytes.Buffer
		start := time.Now()
		if err := drawSVG(context.Background(), &out, &note, g, limit); err != nil {
			t.Fatalf("limit %s: %v", limit, err)
		}
		// dot is killed at the limit (and waited for at most its WaitDelay).
		if took := time.Since(start); took > limit+15*time.Second {
			t.Errorf("limit %s: drawing took %s", limit, took)
		}
		if !strings.Contains(note.String(), "took longer than") {
			t.Errorf("limit %s: note %q does not say dot was stopped", limit, note.String())
		}
		if !strings.HasPrefix(strings.TrimSpace(out.String()), "<svg") && !strings.HasPrefix(strings.TrimSpace(out.String()), "<?xml") {
			t.Errorf("limit %s: not an SVG: %.80q", limit, out.String())
		}
	}
}

package run

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
)

// TestNetnsImpairPreflight: this machine's kernel has no sch_netem (its
// config says "is not set"), so a lab impairing a netns host's link stops
// at preflight (exit 2) with a problem naming the host and what is missing,
// before anything is applied or run.
func TestNetnsImpairPreflight(t *testing.T) {
	_, hosts := netnsBed(t, 2)
	l := loadLab(t, `lab "netns-impair" {}
`+hosts+`
workload "bulk" {
  tool   = "tcp"
  server = host.h0
  client = host.h1
  bytes  = "1MiB"
}
impair "lossy" {
  host   = host.h0
  netdev = "eth0"
  loss   = "1%"
}
`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitInfra {
		t.Fatalf("code %d, want %d: %v", res.Code, ExitInfra, res.Err)
	}
	msg := fmt.Sprint(res.Err)
	for _, want := range []string{`host "h0"`, "has no netem qdisc (sch_netem), which impair \"lossy\" needs", "CONFIG_NET_SCH_NETEM"} {
		if !strings.Contains(msg, want) {
			t.Errorf("run error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, `host "h1"`) {
		t.Errorf("h1 has no impairment, yet a problem names it:\n%s", msg)
	}
	for _, e := range readState(t, res.Dir).Effects {
		if e.Type == "impair" {
			t.Errorf("an impairment was journaled after a failed preflight: %+v", e)
		}
	}
	for _, o := range res.Outcomes {
		if o.Status != "skipped" {
			t.Errorf("workload %s %s, want skipped", o.Workload, o.Status)
		}
	}
}

package run

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
)

// TestNetnsTCPDuration: a tcp workload with `duration` sends for that long
// over real sockets between two netns hosts, not a fixed number of bytes
// (it sent 64 MiB in 0.03 s and ignored the duration before). The band is
// generous: at least the asked time, far less than the timeout. With no rxe
// on the server host the client dials its SSH address, and the results say so.
func TestNetnsTCPDuration(t *testing.T) {
	_, hosts := netnsBed(t, 2)
	const asked = 2 * time.Second
	l := loadLab(t, `lab "netns" {}
`+hosts+`
workload "timed" {
  tool     = "tcp"
  server   = host.h0
  client   = host.h1
  duration = "`+asked.String()+`"
  repeat   = 2
}
`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: sshConnector(t), Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	runs := map[int]bool{}
	for _, s := range r.Samples {
		if s.Meta.Workload != "timed" {
			continue
		}
		switch s.Metric {
		case "duration":
			runs[s.Meta.Repeat] = true
			if d := time.Duration(s.Value * float64(time.Second)); d < asked*9/10 || d > asked+60*time.Second {
				t.Errorf("repeat %d took %s, want about %s", s.Meta.Repeat, d, asked)
			}
		case "tcp_bw":
			if n := s.Meta.Bytes; n <= 256<<10 {
				t.Errorf("repeat %d sent %d bytes, want more than one 256 KiB buffer", s.Meta.Repeat, n)
			}
			if got := s.Meta.ServerBytes; got != s.Meta.Bytes {
				t.Errorf("repeat %d: server got %d bytes, client sent %d", s.Meta.Repeat, got, s.Meta.Bytes)
			}
			if s.Meta.Size != 0 {
				t.Errorf("repeat %d: size %d, want 0 (a timed run has no size to group by)", s.Meta.Repeat, s.Meta.Size)
			}
			if s.Value <= 0 {
				t.Errorf("repeat %d: tcp_bw %v", s.Meta.Repeat, s.Value)
			}
			// The netns hosts have one address and no rxe: the client dials
			// the SSH address, and the results say why (lab.ServerDial).
			if addr, from := s.Meta.Extra["server_addr"], s.Meta.Extra["server_addr_from"]; addr != l.HostByName("h0").Address || from != "SSH address: no rxe on host h0" {
				t.Errorf("repeat %d dialed %q (%s), want h0's SSH address %s, saying there is no rxe", s.Meta.Repeat, addr, from, l.HostByName("h0").Address)
			}
		}
	}
	if len(runs) != 2 {
		t.Errorf("duration samples for repeats %v, want 2", runs)
	}
}

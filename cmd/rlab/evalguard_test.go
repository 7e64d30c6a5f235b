package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heldNow is what the guard reads: Go memory held from the OS.
func heldNow() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}

// TestEvalGuard: the guard stops an evaluation that holds more memory or
// takes longer than its bounds, says which bound and for which lab, and
// stays silent for one that ends within them; stop restores the heap's
// soft limit and may be called twice.
func TestEvalGuard(t *testing.T) {
	const chunk = 1 << 20
	for _, c := range []struct {
		name  string
		lim   guardLimits
		work  func(fired <-chan struct{}) // returns when the guard fires or gives up
		fires string                      // "" = must not fire
	}{
		{
			name: "memory",
			lim:  guardLimits{memory: heldNow() + 64<<20, time: time.Hour},
			work: func(fired <-chan struct{}) {
				var keep [][]byte
				for i := 0; i < 1024; i++ { // 1 GiB at most
					select {
					case <-fired:
						return
					default:
					}
					keep = append(keep, make([]byte, chunk))
					for j := 0; j < chunk; j += 4096 {
						keep[i][j] = 1
					}
					time.Sleep(time.Millisecond)
				}
			},
			fires: "of memory (the bound is",
		},
		{
			name:  "time",
			lim:   guardLimits{memory: 1 << 40, time: 100 * time.Millisecond},
			work:  func(fired <-chan struct{}) { <-fired },
			fires: "took longer than 100ms",
		},
		{
			name: "within both",
			lim:  guardLimits{memory: 1 << 40, time: time.Hour},
			work: func(<-chan struct{}) { time.Sleep(100 * time.Millisecond) },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			fired := make(chan struct{})
			var msg string
			lim := c.lim
			lim.over = func(m string) { msg = m; close(fired) }
			before := debug.SetMemoryLimit(-1)
			lim.soft = 1 << 40
			g := startGuard("labs/x.hcl", lim)
			if got := debug.SetMemoryLimit(-1); got != 1<<40 && os.Getenv("GOMEMLIMIT") == "" {
				t.Errorf("soft limit while guarded %d, want %d", got, int64(1<<40))
			}
			if c.fires != "" {
				done := make(chan struct{})
				go func() { c.work(fired); close(done) }()
				select {
				case <-done:
				case <-time.After(2 * time.Minute):
					t.Fatal("the guard never fired")
				}
			} else {
				c.work(fired)
			}
			g.stop()
			g.stop()
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Errorf("soft limit after stop %d, want %d as before", got, before)
			}
			if c.fires == "" {
				select {
				case <-fired:
					t.Fatalf("fired within its bounds: %s", msg)
				default:
				}
				return
			}
			for _, want := range []string{c.fires, `evaluating lab "labs/x.hcl"`, "rlab stopped there, with nothing connected to or run", "rlab validate again"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

// TestEvalGuardLeavesRealLabsAlone: a lab at the trial bound (100,000
// trials: engine/lab's MaxTrials) validates and plans through the binary
// with the guard on; the guard bounds costly labs, not large legal ones.
func TestEvalGuardLeavesRealLabsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlab")
	}
	bin := filepath.Join(t.TempDir(), "rlab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sizes := make([]string, 100)
	for i := range sizes {
		sizes[i] = strconv.Itoa(i + 1)
	}
	lab := `lab "t" {}
host "s" {
  address = "192.0.2.1"
}
host "c" {
  address = "192.0.2.2"
}
rxe "s" {
  host   = host.s
  netdev = "eth1"
}
rxe "c" {
  host   = host.c
  netdev = "eth1"
}
workload "w" {
  tool   = "ib_write_bw"
  server = rxe.s
  client = rxe.c
  repeat = 1000
  sizes  = [` + strings.Join(sizes, ", ") + `]
}
`
	p := filepath.Join(t.TempDir(), "bound.hcl")
	if err := os.WriteFile(p, []byte(lab), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", p}, {"plan", p}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "rlab stopped there") {
			t.Errorf("rlab %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

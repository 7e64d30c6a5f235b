package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/steps"
)

// readWorkloads reads results.json's workloads: how each ended, with its
// start and end times.
func readWorkloads(t *testing.T, dir string) map[string]*results.Workload {
	t.Helper()
	out := map[string]*results.Workload{}
	r := readRun(t, dir)
	for i, w := range r.Workloads {
		out[w.Name] = &r.Workloads[i]
	}
	return out
}

// TestGroupRunsTogether: the workloads of a group start at the same time
// although they share host a (an incast of b and c into a, and an exec on a
// beside them), and the workload after the group on a waits for all of
// them. The wave barrier holds each workload's first process until all of
// its wave have reached it: a run that started them one after another never
// passes it.
func TestGroupRunsTogether(t *testing.T) {
	l := loadLab(t, `
lab "incast" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
host "c" { address = "127.0.0.1" }
workload "into_a_from_b" {
  tool       = "fake_ping"
  server     = host.a
  client     = host.b
  sizes      = [64]
  iterations = 10
}
workload "into_a_from_c" {
  tool       = "fake_ping"
  server     = host.a
  client     = host.c
  sizes      = [64]
  iterations = 10
}
workload "on_a" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
workload "after" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
group "incast" {
  workloads = [workload.into_a_from_b, workload.into_a_from_c, workload.on_a]
}
`)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Waves) != 2 || len(p.Waves[0].Workloads) != 3 || p.Waves[1].Workloads[0] != "after" {
		t.Fatalf("plan waves %+v: want the group in wave 1 and after in wave 2", p.Waves)
	}
	bar := &waveBarrier{wave: map[string]int{}, size: map[int]int{}, arrived: map[int][]string{}, open: map[int]chan struct{}{}}
	for _, w := range p.Waves {
		for _, name := range w.Workloads {
			bar.wave[l.WorkloadByName(name).Slug] = w.Wave
			bar.size[w.Wave]++
		}
		bar.open[w.Wave] = make(chan struct{})
	}
	bed := newPipeBed(t)
	connect := ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
		h, err := bed.Connect(ctx, tg, runID)
		if err != nil {
			return nil, err
		}
		return &barrierHost{Host: h, bar: bar}, nil
	})
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: connect, Parse: toolout.ParseOutput, NoReport: true, Out: filepath.Join(t.TempDir(), "run")})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	bar.mu.Lock()
	if got := bar.arrived[1]; len(got) != 3 {
		t.Errorf("group incast: %v reached the barrier together, want 3 workloads", got)
	}
	bar.mu.Unlock()
	// Each kept its own samples.
	r := readRun(t, res.Dir)
	per := map[string]int{}
	for _, s := range r.Samples {
		per[s.Meta.Workload]++
	}
	for _, w := range []string{"into_a_from_b", "into_a_from_c"} {
		if per[w] == 0 {
			t.Errorf("no samples of %s: %v", w, per)
		}
	}
	// results.json says which ran in the group (summary.md's alone vs
	// together reads it).
	want := map[string]string{"into_a_from_b": "incast", "into_a_from_c": "incast", "on_a": "incast", "after": ""}
	for _, w := range r.Workloads {
		if w.Group != want[w.Name] {
			t.Errorf("results.json: workload %s in group %q, want %q", w.Name, w.Group, want[w.Name])
		}
	}
}

// TestGroupOneFails: one workload of a group fails at once and another
// times out; the one still running beside them on the same host is not
// stopped with them and keeps its output, and the workload after the group
// still runs, once the whole group is done.
func TestGroupOneFails(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
workload "bad" {
  tool    = "exec"
  host    = host.a
  command = ["sh", "-c", "exit 3"]
}
workload "hangs" {
  tool    = "exec"
  host    = host.a
  command = ["sleep", "60"]
  timeout = "1s"
}
workload "slow_ok" {
  tool    = "exec"
  host    = host.a
  command = ["sh", "-c", "sleep 2; echo slow done"]
}
workload "after" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "after"]
}
group "g" {
  workloads = [workload.bad, workload.hangs, workload.slow_ok]
}
`, Options{})
	if res.Code != ExitFailed {
		t.Fatalf("code %d, want 1 (a workload failed): %v", res.Code, res.Err)
	}
	out := readWorkloads(t, res.Dir)
	for name, want := range map[string]string{"slow_ok": steps.StatusOK, "bad": steps.StatusFailed, "hangs": steps.StatusTimedOut, "after": steps.StatusOK} {
		if o := out[name]; o == nil || o.Status != want {
			t.Errorf("%s: %+v, want status %s", name, o, want)
		}
	}
	// Listed last, slow_ok would start after hangs ended if the group ran
	// one after another: the two overlap.
	if o, h := out["slow_ok"], out["hangs"]; o != nil && h != nil && !(o.Started.Before(h.Finished) && h.Started.Before(o.Finished)) {
		t.Errorf("slow_ok ran %s–%s, hangs %s–%s: the group did not run together", o.Started, o.Finished, h.Started, h.Finished)
	}
	if o := out["after"]; o != nil && out["slow_ok"] != nil && o.Started.Before(out["slow_ok"].Finished) {
		t.Errorf("after started at %s, before the group's slow_ok ended at %s", o.Started, out["slow_ok"].Finished)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "wl.slow_ok.exec.r0.stdout"))
	if err != nil || string(b) != "slow done\n" {
		t.Errorf("slow_ok's output %q, %v: stopped with its failing group mate?", b, err)
	}
}

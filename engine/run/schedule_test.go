package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/toolout"
)

// orderLab has workloads that share hosts (file order), disjoint ones (one
// wave), a two-host workload joining them and a made-up two-sided kind.
const orderLab = `
lab "order" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
host "c" { address = "127.0.0.1" }
workload "a1" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
}
workload "b1" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
workload "c1" {
  tool    = "exec"
  host    = host.c
  command = ["true"]
}
workload "ab" {
  tool       = "fake_ping"
  server     = host.a
  client     = host.b
  sizes      = [64]
  iterations = 10
}
workload "c2" {
  tool    = "exec"
  host    = host.c
  command = ["true"]
}
workload "bulk" {
  tool   = "tcp"
  server = host.c
  client = host.a
  bytes  = "1MiB"
}
workload "b2" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
`

// orderCaptures adds a whole-run capture and one scoped to two workloads.
const orderCaptures = `
capture "all" {
  host   = host.a
  netdev = "lo"
  filter = "tcp"
}
capture "scoped" {
  host   = host.c
  netdev = "lo"
  filter = "tcp"
  during = [workload.bulk, workload.c2]
}
`

// TestRunFollowsThePlan runs a lab on in-process agents and checks, from
// events.jsonl and plan.json alone, that the run executed the plan: every
// step of the plan was run, and none started before every step it depends
// on had ended (steps one event runs together, a workload's server and
// client, excepted).
func TestRunFollowsThePlan(t *testing.T) {
	src := orderLab
	if _, err := exec.LookPath("tcpdump"); err == nil && os.Geteuid() == 0 {
		src += orderCaptures
	} else {
		t.Log("no captures: they need tcpdump and root")
	}
	res, _ := runLab(t, src, Options{Parse: toolout.ParseOutput})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	var p struct {
		Steps []struct {
			ID        string   `json:"id"`
			DependsOn []string `json:"depends_on"`
		} `json:"steps"`
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	first, last := map[string]int{}, map[string]int{}
	for i, ev := range readEvents(t, res.Dir) {
		for _, id := range ev.IDs {
			if _, ok := first[id]; !ok {
				first[id] = i
			}
			last[id] = i
		}
	}
	if len(p.Steps) < 20 {
		t.Fatalf("plan.json has %d steps", len(p.Steps))
	}
	for _, s := range p.Steps {
		if _, ok := first[s.ID]; !ok {
			t.Errorf("plan step %s: no event ran it", s.ID)
			continue
		}
		for _, d := range s.DependsOn {
			if first[d] == first[s.ID] {
				continue // run by one event (a workload's two sides)
			}
			if last[d] >= first[s.ID] {
				t.Errorf("plan step %s started (event %d) before %s, which it depends on, ended (event %d)", s.ID, first[s.ID], d, last[d])
			}
		}
	}
}

// TestWaveRunsTogether: the workloads the plan puts in one wave run at the
// same time on their disjoint hosts. A barrier in front of the agents holds
// every workload's first process until all of its wave have reached it, so a
// run that started them one after another would never pass it (it gives up
// after a minute and fails the workload, naming the missing ones).
func TestWaveRunsTogether(t *testing.T) {
	l := loadLab(t, orderLab)
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	bar := &waveBarrier{wave: map[string]int{}, size: map[int]int{}, arrived: map[int][]string{}, open: map[int]chan struct{}{}}
	for _, w := range p.Waves {
		hosts := map[string]string{}
		for _, name := range w.Workloads {
			wl := l.WorkloadByName(name)
			if wl == nil {
				t.Fatalf("plan wave %d: no workload %q", w.Wave, name)
			}
			if wl.Tool == "tcp" {
				continue // the agent's own TCP bulk starts no process
			}
			for _, h := range wl.Hosts() {
				if o, ok := hosts[h.Name]; ok {
					t.Errorf("plan wave %d: %s and %s share host %s", w.Wave, o, name, h.Name)
				}
				hosts[h.Name] = name
			}
			bar.wave[wl.Slug] = w.Wave
			bar.size[w.Wave]++
		}
		bar.open[w.Wave] = make(chan struct{})
	}
	if bar.size[1] != 3 || bar.size[2] != 2 {
		t.Fatalf("plan waves %+v: want a1, b1, c1 in wave 1 and ab, c2 in wave 2", p.Waves)
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
	defer bar.mu.Unlock()
	for w, n := range bar.size {
		if len(bar.arrived[w]) != n {
			t.Errorf("wave %d: %v reached the barrier, want %d workloads", w, bar.arrived[w], n)
		}
	}
}

// waveBarrier holds each workload's first process start until every
// workload of its plan wave has reached it.
type waveBarrier struct {
	mu      sync.Mutex
	wave    map[string]int // workload slug -> wave
	size    map[int]int    // wave -> workloads held
	arrived map[int][]string
	open    map[int]chan struct{}
}

func (b *waveBarrier) arrive(ctx context.Context, handle string) error {
	parts := strings.SplitN(handle, ".", 3) // wl.<slug>.<side...>
	if len(parts) < 3 || parts[0] != "wl" {
		return nil
	}
	slug := parts[1]
	b.mu.Lock()
	w, ok := b.wave[slug]
	if !ok || slices.Contains(b.arrived[w], slug) {
		b.mu.Unlock()
		return nil // not held, or its first process passed already
	}
	b.arrived[w] = append(b.arrived[w], slug)
	if len(b.arrived[w]) == b.size[w] {
		close(b.open[w])
	}
	open := b.open[w]
	b.mu.Unlock()
	// The guard only keeps a wrong run from hanging the test: the assertion
	// is which workloads arrived, not when.
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-guard.C:
		b.mu.Lock()
		defer b.mu.Unlock()
		return fmt.Errorf("workload %s: wave %d never ran together: only %v of %d workloads started", slug, w, b.arrived[w], b.size[w])
	}
}

// barrierHost is an agent whose process starts pass the wave barrier.
type barrierHost struct {
	Host
	bar *waveBarrier
}

func (h *barrierHost) Send(ctx context.Context, req *rpc.Request) error {
	if p, _, ok := rpc.Match(req, rpc.ProcStart); ok {
		if err := h.bar.arrive(ctx, p.Handle); err != nil {
			return err
		}
	}
	return h.Host.Send(ctx, req)
}

// BenchmarkScheduleClass200 is what following the plan costs a run of a
// class of 200 students (400 hosts, 400 rxe, 400 workloads, 200 scoped
// captures): plan it, wire the workloads and captures to its DAG, and look
// up the plan steps every event of the run names.
func BenchmarkScheduleClass200(b *testing.B) {
	src := `
lab "class" {}
locals {
  students = toset([for i in range(200) : format("s%03d", i)])
}
host "server" {
  for_each = local.students
  address  = "127.0.0.1"
}
host "client" {
  for_each = local.students
  address  = "127.0.0.1"
}
rxe "server" {
  for_each = local.students
  host     = host.server[each.key]
  netdev   = "eth1"
}
rxe "client" {
  for_each = local.students
  host     = host.client[each.key]
  netdev   = "eth1"
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = ["true"]
}
workload "bulk" {
  for_each = local.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
  bytes    = "1MiB"
}
capture "c" {
  for_each = local.students
  host     = host.client[each.key]
  netdev   = "eth1"
  during   = [workload.bulk[each.key]]
}
`
	l := loadLab(b, src)
	// "plan" is the selection and the plan; "schedule" adds the run's steps,
	// the wiring and the events' lookups.
	b.Run("plan", func(b *testing.B) {
		for range b.N {
			if _, err := plan.New(l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("schedule", func(b *testing.B) {
		for range b.N {
			r := &runner{lab: l}
			if err := r.schedule(); err != nil {
				b.Fatal(err)
			}
			n := len(r.plan.IDs("", "", plan.Preflight)) + len(r.plan.IDs("", "", plan.Teardown))
			for _, h := range r.hosts {
				n += len(r.plan.IDs(h.Name, "", plan.Connect, plan.ShipAgent)) + len(r.plan.IDs(h.Name, "", plan.Fetch))
			}
			for _, x := range r.rxes {
				n += len(r.plan.IDs(x.Host, x.Name, plan.CreateDevice))
			}
			if n != 400*5+400 {
				b.Fatalf("%d step ids, want %d", n, 400*5+400)
			}
		}
	})
}

// TestRunWalksThePlan: the run waits where the plan's walk says, not where
// it would read edges itself. Two workloads on hosts of their own run
// together (one wave); handed a plan whose walk makes the second wait for
// the first, the run starts it only once the first has ended.
func TestRunWalksThePlan(t *testing.T) {
	l := loadLab(t, twoHosts+`
workload "first" {
  tool    = "exec"
  host    = host.a
  command = ["sleep", "0.5"]
}
workload "second" {
  tool    = "exec"
  host    = host.b
  command = ["true"]
}
`)
	for _, tt := range []struct {
		name  string
		after bool // the plan makes second wait for first
	}{{"as planned", false}, {"second after first", true}} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan.NewWith(l, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Workloads) != 2 || len(p.Workloads[1].After) != 0 {
				t.Fatalf("the plan's workloads: %+v", p.Workloads)
			}
			if tt.after {
				p.Workloads[1].After = []*lab.Workload{p.Workloads[0].Workload}
			}
			res := Run(context.Background(), l, Options{Connector: newPipeBed(t), Plan: p, Out: filepath.Join(t.TempDir(), "run"), NoReport: true})
			if res.Code != ExitOK {
				t.Fatalf("code %d: %v", res.Code, res.Err)
			}
			firstEnd, secondStart := -1, -1
			for i, e := range readEvents(t, res.Dir) {
				switch {
				case e.Type == "step.end" && e.Workload == "first":
					firstEnd = i
				case e.Type == "step.start" && e.Workload == "second" && secondStart < 0:
					secondStart = i
				}
			}
			if firstEnd < 0 || secondStart < 0 {
				t.Fatalf("events: first ended at %d, second started at %d", firstEnd, secondStart)
			}
			if after := secondStart > firstEnd; after != tt.after {
				t.Errorf("second started at event %d, first ended at %d: want second after first %v", secondStart, firstEnd, tt.after)
			}
		})
	}
}

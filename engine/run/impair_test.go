package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// fakeNetem answers the agent's impair.* calls in place of a host kernel
// with netem, which this machine's kernel lacks (the VM test,
// TestE2EExampleLabs/lossy, applies real netem): it keeps one root qdisc per
// host and netdev and a log of the calls, and checks at each apply that the
// run's journal already holds the effect (journaled before it happens).
type fakeNetem struct {
	mu     sync.Mutex
	dir    string            // the run dir whose state.json is checked
	root   map[string]string // host/netdev -> "netem loss 1%" or ""
	log    []string
	failOn map[string]error // "apply ID" or "remove" -> the error to answer
	params map[string]proto.ImpairParams
	// applied, when set, is called after each apply (outside the lock).
	applied func()
	// gsoOwn is the netdev's own gso_max_segs each apply answers with.
	gsoOwn uint32
	t      testing.TB
}

func newFakeNetem(t testing.TB, dir string) *fakeNetem {
	return &fakeNetem{t: t, dir: dir, root: map[string]string{}, failOn: map[string]error{}, params: map[string]proto.ImpairParams{}}
}

func (f *fakeNetem) call(host string, req *rpc.Request) (bool, error) {
	if p, res, ok := rpc.Match(req, rpc.ImpairApply); ok {
		if f.applied != nil {
			defer f.applied()
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.log = append(f.log, fmt.Sprintf("%s apply %s %s loss=%g", host, p.ID, p.Netdev, p.Loss))
		f.params[p.ID] = p
		if f.dir != "" && !f.journaled(host, p.ID) {
			f.t.Errorf("impair.apply %s on %s before the journal held it", p.ID, host)
		}
		if err := f.failOn["apply "+p.ID]; err != nil {
			return true, err
		}
		f.root[host+"/"+p.Netdev] = fmt.Sprintf("netem loss %g%%", p.Loss)
		*res = proto.ImpairResult{Netdev: p.Netdev, Qdisc: "netem", Handle: "524c:", Netem: fmt.Sprintf("loss %g%%", p.Loss), GSOOwn: f.gsoOwn}
		return true, nil
	}
	if p, res, ok := rpc.Match(req, rpc.ImpairRemove); ok {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.log = append(f.log, fmt.Sprintf("%s remove %s", host, p.Netdev))
		if err := f.failOn["remove"]; err != nil {
			return true, err
		}
		removed := f.root[host+"/"+p.Netdev] != ""
		f.root[host+"/"+p.Netdev] = ""
		*res = proto.ImpairResult{Netdev: p.Netdev, Qdisc: "noqueue", Handle: "0:", Removed: removed}
		return true, nil
	}
	return false, nil
}

func (f *fakeNetem) journaled(host, id string) bool {
	b, err := os.ReadFile(filepath.Join(f.dir, runstate.File))
	if err != nil {
		return false
	}
	var st runstate.State
	if json.Unmarshal(b, &st) != nil {
		return false
	}
	return slices.ContainsFunc(st.Effects, func(e steps.Effect) bool {
		return e.Host == host && e.Type == "impair" && e.ID == id && !e.Undone
	})
}

func (f *fakeNetem) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

const lossSweep = twoHosts + `
workload "bulk" {
  for_each = toset(["0", "5"])
  tool     = "tcp"
  server   = host.a
  client   = host.b
  bytes    = "1MiB"
}
impair "loss" {
  for_each = toset(["0", "5"])
  host     = host.a
  netdev   = "lo"
  loss     = "${each.key}%"
  during   = [workload.bulk[each.key]]
}
`

func runImpaired(t *testing.T, src string, netem func(dir string) *fakeNetem) (*Result, *fakeNetem) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	bed := newPipeBed(t)
	bed.netem = netem(out)
	res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: bed, Out: out, NoReport: true})
	return res, bed.netem
}

// TestImpairSweep: each point of a sweep is applied just before its
// workload and removed right after, journaled before it is applied, its
// samples say which impairment was in force, and nothing is left.
func TestImpairSweep(t *testing.T) {
	res, fn := runImpaired(t, lossSweep, func(dir string) *fakeNetem { return newFakeNetem(t, dir) })
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	want := []string{`a apply loss["0"] lo loss=0`, "a remove lo", `a apply loss["5"] lo loss=5`, "a remove lo"}
	if d := cmp.Diff(want, fn.calls()); d != "" {
		t.Errorf("impair calls (-want +got):\n%s", d)
	}
	r := readRun(t, res.Dir)
	byWorkload := map[string]string{}
	for _, s := range r.Samples {
		if s.Metric == "tcp_bw" {
			loss := "none"
			if s.Meta.ImpairLoss != nil {
				loss = strconv.FormatFloat(*s.Meta.ImpairLoss, 'f', -1, 64)
			}
			byWorkload[s.Meta.Workload] = loss + " | " + s.Meta.Extra["impair"]
		}
	}
	wantTags := map[string]string{`bulk["0"]`: `0 | loss["0"]: loss 0% on lo of a`, `bulk["5"]`: `5 | loss["5"]: loss 5% on lo of a`}
	if d := cmp.Diff(wantTags, byWorkload); d != "" {
		t.Errorf("samples' impairment (-want +got):\n%s", d)
	}
	var imp []steps.Effect
	for _, e := range readState(t, res.Dir).Effects {
		if e.Type == "impair" {
			imp = append(imp, e)
		}
	}
	if len(imp) != 2 {
		t.Fatalf("journal impair effects = %+v, want 2", imp)
	}
	for _, e := range imp {
		if !e.Undone || e.Netdev != "lo" || !strings.HasPrefix(e.Detail, "applied netem 524c: loss ") || !strings.Contains(e.Detail, "; removed, root qdisc now noqueue") {
			t.Errorf("effect %+v: want undone on lo with the root qdisc read back", e)
		}
	}
}

// TestImpairRefusedSkips: an impairment the agent refuses (a root qdisc it
// did not set) is an infrastructure error, and its workload is skipped,
// not run unimpaired; the other point runs.
func TestImpairRefusedSkips(t *testing.T) {
	res, _ := runImpaired(t, lossSweep, func(dir string) *fakeNetem {
		f := newFakeNetem(t, dir)
		f.failOn[`apply loss["5"]`] = &proto.Error{Code: proto.CodeQdiscBusy, Message: "netdev lo already has a root qdisc htb 1: that rlab did not set"}
		return f
	})
	if res.Code != ExitInfra {
		t.Fatalf("code %d, want %d (infra): %v", res.Code, ExitInfra, res.Err)
	}
	var status []string
	for _, o := range res.Outcomes {
		status = append(status, o.Workload+" "+o.Status)
		if o.Status == steps.StatusSkipped && !strings.Contains(o.Error, "impairment is not in force") {
			t.Errorf("skip reason %q does not say the impairment failed", o.Error)
		}
	}
	if d := cmp.Diff([]string{`bulk["0"] ok`, `bulk["5"] skipped`}, status); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if !strings.Contains(fmt.Sprint(res.Err), "htb 1:") {
		t.Errorf("run error %v does not carry the agent's refusal", res.Err)
	}
}

// TestImpairWholeRun: a whole-run impairment is applied after the
// captures, before every workload on its host, and removed at teardown.
func TestImpairWholeRun(t *testing.T) {
	src := twoHosts + `
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
impair "wan" {
  host   = host.b
  netdev = "lo"
  delay  = "2ms"
  loss   = "1%"
}
`
	res, fn := runImpaired(t, src, func(dir string) *fakeNetem { return newFakeNetem(t, dir) })
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	if d := cmp.Diff([]string{`b apply wan lo loss=1`, "b remove lo"}, fn.calls()); d != "" {
		t.Errorf("impair calls (-want +got):\n%s", d)
	}
	var order []string
	for _, e := range readEvents(t, res.Dir) {
		if e.Type == "step.start" && (strings.HasPrefix(e.Step, "impair ") || e.Workload != "") {
			order = append(order, e.Step)
		}
	}
	if len(order) < 2 || !strings.HasPrefix(order[0], "impair wan: netem delay 2ms loss 1% on lo of host b") {
		t.Errorf("step starts %q: want the impairment before the workload", order)
	}
	// In force during bulk (a workload on its host, the plan says): its
	// samples carry it.
	if len(res.Outcomes) != 1 || len(res.Outcomes[0].Samples) == 0 {
		t.Fatalf("outcomes %+v: want bulk's samples", res.Outcomes)
	}
	for _, s := range res.Outcomes[0].Samples {
		if got := s.Meta.Extra[results.ImpairExtra]; !strings.HasPrefix(got, "wan: ") || s.Meta.ImpairLoss == nil || *s.Meta.ImpairLoss != 1 {
			t.Errorf("sample %s: impair %q, loss %v: want wan's, 1", s.Metric, got, s.Meta.ImpairLoss)
		}
	}
}

// TestDownRemovesImpair: an impairment the run's journal holds as not
// undone (its controller was SIGKILLed) is removed by `rlab down` from
// state.json alone, and marked undone; one whose netem is gone already (the
// run's agent removed it when its controller died) is marked undone and
// listed as already gone.
func TestDownRemovesImpair(t *testing.T) {
	dir := t.TempDir()
	st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(),
		Hosts: []runstate.Host{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true}},
		Effects: []steps.Effect{
			{Host: "a", Type: "impair", ID: `loss["1"]`, Netdev: "eth1", Pending: true, Detail: "netem loss 1%"},
			{Host: "a", Type: "impair", ID: "gone", Netdev: "eth2", Detail: "netem loss 5%"},
		},
	}
	if _, err := runstate.Create(dir, st); err != nil {
		t.Fatal(err)
	}
	bed := newPipeBed(t)
	bed.netem = newFakeNetem(t, "")
	bed.netem.root["a/eth1"] = "netem loss 1%"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Down(ctx, dir, DownOptions{Connector: bed})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	if d := cmp.Diff([]string{`a: impair loss["1"]`, "a: impair gone (already gone)"}, res.Undone); d != "" {
		t.Errorf("down undid (-want +got):\n%s", d)
	}
	if got := bed.netem.root["a/eth1"]; got != "" {
		t.Errorf("after down, a/eth1 root = %q, want rlab's netem removed", got)
	}
	for _, e := range readState(t, dir).Effects {
		if !e.Undone {
			t.Errorf("effect after down: %+v, want undone", e)
		}
	}
}

// TestImpairJournalsGSOOwn: the run journals, with each impairment, the
// netdev's own gso_max_segs as its agent answered it (found before it set
// 1), so `rlab down` after a killed agent gives that back and not the
// kernel's default (engine/down TestDownGivesBackJournaledGSO); a later
// note of the same impairment (its removal) keeps it.
func TestImpairJournalsGSOOwn(t *testing.T) {
	var mid []steps.Effect // the journal as the second point is applied
	res, netem := runImpaired(t, lossSweep, func(dir string) *fakeNetem {
		f := newFakeNetem(t, dir)
		f.gsoOwn = 7
		f.applied = func() {
			if len(f.calls()) == 3 { // apply 0, remove, apply 5
				mid = readState(t, dir).Effects
			}
		}
		return f
	})
	if res.Err != nil {
		t.Fatalf("run: %v (calls %q)", res.Err, netem.calls())
	}
	got := map[string]uint32{}
	for _, e := range mid {
		if e.Type == "impair" {
			got[e.ID] = e.GSOOwn
		}
	}
	if got[`loss["0"]`] != 7 {
		t.Errorf("journaled gso_own by impairment while the sweep ran: %v; want 7 for each applied", got)
	}
	for _, e := range readState(t, res.Dir).Effects {
		if e.Type == "impair" && e.GSOOwn != 7 {
			t.Errorf("effect after the run: %+v, want gso_own 7 kept", e)
		}
	}
}

// TestImpairParams: every netem attribute reaches the agent in its units
// (microseconds, percent, bytes per second); the agent's mapping to netlink
// is agent/server.TestNetemAttrs.
func TestImpairParams(t *testing.T) {
	src := twoHosts + `
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
impair "wan" {
  host      = host.b
  netdev    = "lo"
  delay     = "2ms"
  jitter    = "500us"
  loss      = "0.1%"
  duplicate = "1%"
  reorder   = "25%"
  corrupt   = "0.01%"
  rate      = "100Mbit"
}
`
	res, fn := runImpaired(t, src, func(dir string) *fakeNetem { return newFakeNetem(t, dir) })
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	want := proto.ImpairParams{ID: "wan", Netdev: "lo", DelayUs: 2000, JitterUs: 500, Loss: 0.1, Duplicate: 1, Reorder: 25, Corrupt: 0.01, RateBytes: 12_500_000, PerPacket: true}
	if d := cmp.Diff(want, fn.params["wan"]); d != "" {
		t.Errorf("impair.apply params (-want +got):\n%s", d)
	}
}

// TestImpairCount: count on an impair block makes one impairment per index,
// each scoped as its instance says.
func TestImpairCount(t *testing.T) {
	src := twoHosts + `
workload "bulk" {
  count  = 2
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "1MiB"
}
impair "delay" {
  count  = 2
  host   = host.b
  netdev = "lo"
  delay  = "${count.index + 1}ms"
  during = [workload.bulk[count.index]]
}
`
	res, fn := runImpaired(t, src, func(dir string) *fakeNetem { return newFakeNetem(t, dir) })
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	if d := cmp.Diff([]string{"b apply delay[0] lo loss=0", "b remove lo", "b apply delay[1] lo loss=0", "b remove lo"}, fn.calls()); d != "" {
		t.Errorf("impair calls (-want +got):\n%s", d)
	}
	if fn.params["delay[0]"].DelayUs != 1000 || fn.params["delay[1]"].DelayUs != 2000 {
		t.Errorf("delays %d, %d us; want 1000, 2000", fn.params["delay[0]"].DelayUs, fn.params["delay[1]"].DelayUs)
	}
}

// TestImpairInterrupted: Ctrl-C while an impaired workload runs still
// removes the impairment (teardown), and the journal says so.
func TestImpairInterrupted(t *testing.T) {
	src := twoHosts + `
workload "long" {
  tool    = "exec"
  host    = host.b
  command = ["sleep", "30"]
}
impair "slow" {
  host   = host.b
  netdev = "lo"
  delay  = "10ms"
  during = [workload.long]
}
`
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bed := newPipeBed(t)
	bed.netem = newFakeNetem(t, out)
	bed.netem.applied = func() { time.AfterFunc(500*time.Millisecond, cancel) }
	res := runPlanned(ctx, t, loadLab(t, src), plan.Options{}, Options{Connector: bed, Out: out, NoReport: true})
	if res.Code != ExitInterrupted {
		t.Fatalf("code %d, want %d (interrupted): %v", res.Code, ExitInterrupted, res.Err)
	}
	if d := cmp.Diff([]string{"b apply slow lo loss=0", "b remove lo"}, bed.netem.calls()); d != "" {
		t.Errorf("impair calls (-want +got):\n%s", d)
	}
	for _, e := range readState(t, res.Dir).Effects {
		if e.Type == "impair" && (!e.Undone || !strings.Contains(e.Detail, "removed")) {
			t.Errorf("effect after Ctrl-C: %+v, want removed", e)
		}
	}
}

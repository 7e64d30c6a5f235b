package run

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/results/schematest"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

const twoHosts = `
lab "t" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
`

// runLab runs a lab on in-process agents; report.html is drawn only when
// asked (graphviz makes it slow).
func runLab(t *testing.T, src string, opts Options, report ...bool) (*Result, *pipeBed) {
	return runLabWith(t, src, plan.Options{}, opts, report...)
}

// runLabWith is runLab of the lab's plan with po (--only, --provision).
func runLabWith(t *testing.T, src string, po plan.Options, opts Options, report ...bool) (*Result, *pipeBed) {
	t.Helper()
	bed := newPipeBed(t)
	opts.Connector = bed
	opts.NoReport = len(report) == 0 || !report[0]
	if opts.Out == "" {
		opts.Out = filepath.Join(t.TempDir(), "run")
	}
	res := runPlanned(context.Background(), t, loadLab(t, src), po, opts)
	return res, bed
}

// planned is l's plan with po, as rlab run makes it before it runs.
func planned(t testing.TB, l *lab.Lab, po plan.Options) *plan.Plan {
	t.Helper()
	p, err := plan.NewWith(l, po)
	if err != nil {
		t.Fatalf("plan lab %q: %v", l.Name, err)
	}
	return p
}

// runPlanned plans l with po, as rlab run does, and runs that plan: the
// run executes the plan it is given and plans nothing itself. Call it from
// the test's goroutine (a plan that fails ends the test).
func runPlanned(ctx context.Context, t testing.TB, l *lab.Lab, po plan.Options, opts Options) *Result {
	t.Helper()
	opts.Plan = planned(t, l, po)
	return Run(ctx, l, opts)
}

func readRun(t *testing.T, dir string) *results.Run {
	t.Helper()
	// Every results.json a test run writes validates against the schema
	// the repository publishes (docs/results.schema.json).
	if b, err := os.ReadFile(filepath.Join(dir, results.ResultsFile)); err == nil {
		schematest.Validate(t, filepath.Join(dir, results.ResultsFile), b)
	}
	r, err := results.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunExecAndTCP(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
workload "hello" {
  tool    = "exec"
  host    = host.a
  command = ["echo", "hello from a"]
}
workload "bulk" {
  tool   = "tcp"
  server = host.a
  client = host.b
  bytes  = "8MiB"
  repeat = 2
}
`, Options{}, true)
	if res.Code != ExitOK {
		t.Fatalf("code %d, err %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	if r.Status != results.RunOK || len(r.Workloads) != 2 {
		t.Fatalf("results: status %q, %d workloads", r.Status, len(r.Workloads))
	}
	var tcp []results.Sample
	for _, s := range r.Samples {
		if s.Metric == "tcp_bw" {
			tcp = append(tcp, s)
		}
	}
	if len(tcp) != 2 || tcp[0].Value <= 0 || tcp[0].Unit != "Gb/s" || tcp[1].Meta.Repeat != 1 || tcp[0].Meta.Size != 8<<20 {
		t.Errorf("tcp samples = %+v, want 2 repeats of 8 MiB with Gb/s > 0", tcp)
	}
	// The sender's connections' retransmissions (TCP_INFO), one counter
	// sample over both repeats, on the client: read (0 over lo), never absent.
	var retrans []results.Sample
	for _, s := range r.Samples {
		if s.Metric == "tcpi_total_retrans" {
			retrans = append(retrans, s)
		}
	}
	if len(retrans) != 1 || !results.IsCounter(retrans[0]) || retrans[0].Meta.Extra[results.CounterExtra] != results.TCPInfoSource ||
		len(retrans[0].Meta.Hosts) != 1 || retrans[0].Meta.Hosts[0] != "b" || retrans[0].Meta.Workload != "bulk" {
		t.Errorf("tcpi_total_retrans samples = %+v, want one counter sample of bulk on host b", retrans)
	}
	// The exec output was pulled into the host's logs.
	out, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "wl.hello.exec.r0.stdout"))
	if err != nil || string(out) != "hello from a\n" {
		t.Errorf("exec stdout = %q, %v", out, err)
	}
	// results.json lists the raw outputs the fetch pulled, per workload.
	if want := []string{"hosts/a/logs/wl.hello.exec.r0.stdout", "hosts/a/logs/wl.hello.exec.r0.stderr"}; !slices.Equal(r.Workloads[0].Logs, want) {
		t.Errorf("hello's logs in results.json = %v, want %v", r.Workloads[0].Logs, want)
	}
	for _, f := range []string{"lab/lab.hcl", "plan.json", "events.jsonl", "state.json", "results.json", "summary.md", "junit.xml", "report.html", "manifest.json", "hosts/a/facts.json", "hosts/b/facts.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("run dir: %v", err)
		}
	}
	var ju struct {
		XMLName xml.Name
	}
	b, _ := os.ReadFile(filepath.Join(res.Dir, "junit.xml"))
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Errorf("junit.xml: %v", err)
	}
	// The manifest covers every file with its sha256.
	var man []ManifestEntry
	b, _ = os.ReadFile(filepath.Join(res.Dir, ManifestFile))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, m := range man {
		paths[m.Path] = true
		if len(m.SHA256) != 64 {
			t.Errorf("manifest %s: sha256 %q", m.Path, m.SHA256)
		}
	}
	for _, p := range []string{"results.json", "state.json", "hosts/a/logs/wl.hello.exec.r0.stdout", "lab/lab.hcl"} {
		if !paths[p] {
			t.Errorf("manifest lacks %s", p)
		}
	}
	evs := readEvents(t, res.Dir)
	if len(evs) < 4 || evs[0].Type != "run.start" || evs[len(evs)-1].Type != "run.end" || evs[len(evs)-1].Status != "ok" {
		t.Errorf("events.jsonl: %d events, first %+v, last %+v", len(evs), evs[0], evs[len(evs)-1])
	}
	st := readState(t, res.Dir)
	if st.TornDown == nil || st.Finished == nil || len(st.Hosts) != 2 || !st.Hosts[0].Connected || st.Hosts[0].WorkDir == "" {
		t.Errorf("state = %+v", st)
	}
	for _, e := range st.Effects {
		if !e.Undone {
			t.Errorf("effect left undone after the run: %+v", e)
		}
	}
}

func readState(t *testing.T, dir string) runstate.State {
	t.Helper()
	j, err := runstate.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return j.Snapshot()
}

func readEvents(t testing.TB, dir string) []Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events.jsonl line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		code     int
		status   map[string]string
		errMatch string
		expect   []string // workload, condition, message
	}{
		{
			name: "command fails",
			src: `workload "bad" {
  tool = "exec"
  host = host.a
  command = ["sh", "-c", "echo oops >&2; exit 3"]
}`,
			code: ExitFailed, status: map[string]string{"bad": "failed"}, errMatch: `exit 3: oops`,
		},
		{
			name: "expect fails",
			src: `workload "slow" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`,
			expect: []string{"slow", "result.exit_code != 0", "should have failed"},
			code:   ExitFailed, status: map[string]string{"slow": "ok"}, errMatch: "should have failed",
		},
		{
			name: "expect holds",
			src: `workload "fine" {
  tool = "exec"
  host = host.b
  command = ["true"]
}`,
			expect: []string{"fine", "result.exit_code == 0 && result.duration_s < 600 && result.repeat == 1", ""},
			code:   ExitOK, status: map[string]string{"fine": "ok"},
		},
		{
			name: "timeout kills a hung workload",
			src: `workload "hang" {
  tool = "exec"
  host = host.a
  command = ["sleep", "60"]
  timeout = "1s"
}
workload "after" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`,
			code: ExitFailed, status: map[string]string{"hang": "timed_out", "after": "ok"}, errMatch: "timed out",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := loadLab(t, twoHosts+tt.src)
			if tt.expect != nil {
				addExpect(t, l, tt.expect[0], tt.expect[1], tt.expect[2])
			}
			res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: newPipeBed(t), Out: filepath.Join(t.TempDir(), "run"), NoReport: true})
			if res.Code != tt.code {
				t.Fatalf("code = %d, want %d (err %v)", res.Code, tt.code, res.Err)
			}
			if tt.errMatch != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tt.errMatch)) {
				t.Errorf("err = %v, want it to mention %q", res.Err, tt.errMatch)
			}
			if tt.status["hang"] == "timed_out" {
				// The kernel log of the hung workload's host is kept.
				if b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "a", "logs", "dmesg.hang.txt")); err != nil || len(b) == 0 {
					t.Errorf("dmesg tail of the hung workload: %q, %v", b, err)
				}
			}
			r := readRun(t, res.Dir)
			for _, w := range r.Workloads {
				if want := tt.status[w.Name]; want != "" && w.Status != want {
					t.Errorf("workload %s status %q, want %q (%s)", w.Name, w.Status, want, w.Error)
				}
			}
		})
	}
}

// TestRunDAG checks workloads sharing a host run one after another in file
// order while workloads on disjoint hosts overlap.
func TestRunDAG(t *testing.T) {
	src := `
lab "dag" {}
host "a" { address = "127.0.0.1" }
host "b" { address = "127.0.0.1" }
host "c" { address = "127.0.0.1" }
host "d" { address = "127.0.0.1" }
workload "a1" {
  tool = "exec"
  host = host.a
  command = ["sleep", "0.5"]
}
workload "b1" {
  tool = "exec"
  host = host.b
  command = ["sleep", "0.5"]
}
workload "a2" {
  tool = "exec"
  host = host.a
  command = ["true"]
}
workload "ab" {
  tool = "tcp"
  server = host.a
  client = host.b
  bytes = "1MiB"
}
workload "cd" {
  tool = "tcp"
  server = host.c
  client = host.d
  bytes = "1MiB"
}
`
	res, _ := runLab(t, src, Options{})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	start, end := map[string]time.Time{}, map[string]time.Time{}
	for _, o := range res.Outcomes {
		start[o.Workload], end[o.Workload] = o.Start, o.End
	}
	before := func(x, y string) {
		t.Helper()
		if end[x].After(start[y]) {
			t.Errorf("%s ended %v after %s started %v: they share a host and must run in file order", x, end[x], y, start[y])
		}
	}
	before("a1", "a2")
	before("a2", "ab")
	before("b1", "ab")
	// Disjoint workloads overlap: b1 started before a1 ended, cd before a1 ended.
	for _, w := range []string{"b1", "cd"} {
		if !start[w].Before(end["a1"]) {
			t.Errorf("%s started %v, after a1 ended %v: disjoint workloads must run at once", w, start[w], end["a1"])
		}
	}
	// plan.json is engine/plan's plan: the same order as waves.
	var p struct {
		Waves []struct {
			Wave      int
			Workloads []string
		}
	}
	b, _ := os.ReadFile(filepath.Join(res.Dir, "plan.json"))
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	wave := map[string]int{}
	for _, w := range p.Waves {
		for _, n := range w.Workloads {
			wave[n] = w.Wave
		}
	}
	want := map[string]int{"a1": 1, "b1": 1, "cd": 1, "a2": 2, "ab": 3}
	if !maps.Equal(wave, want) {
		t.Errorf("plan.json waves = %v, want %v", wave, want)
	}
}

func TestRunOnlyAndParallel(t *testing.T) {
	src := twoHosts + `
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
}
workload "y" {
  tool = "exec"
  host = host.b
  command = ["true"]
}
`
	res, bed := runLabWith(t, src, plan.Options{Only: []string{"y"}}, Options{Parallel: 1})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	if len(res.Outcomes) != 1 || res.Outcomes[0].Workload != "y" {
		t.Errorf("outcomes = %+v, want only y", res.Outcomes)
	}
	if bed.host("a") != nil {
		t.Error("--only y connected host a, which y does not use")
	}
	// --only is the plan's: a value that selects nothing is refused
	// before any run (rlab run exits 1 with it).
	_, err := plan.NewWith(loadLab(t, src), plan.Options{Only: []string{"z"}})
	if err == nil || !strings.Contains(err.Error(), `--only "z": lab "t" has no workload`) || !strings.Contains(err.Error(), "x, y") {
		t.Errorf("--only z: err %v", err)
	}
}

func TestRunUnreachableHost(t *testing.T) {
	bed := newPipeBed(t)
	bed.fail["b"] = os.ErrDeadlineExceeded
	l := loadLab(t, twoHosts+`
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
}
workload "y" {
  tool = "exec"
  host = host.b
  command = ["true"]
}`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "r")})
	if res.Code != ExitInfra || !strings.Contains(res.Err.Error(), `connect to host "b"`) {
		t.Fatalf("code %d err %v, want 2 naming host b", res.Code, res.Err)
	}
	// Host a was connected and is torn down: its agent ended.
	select {
	case <-bed.host("a").a.Done():
	case <-time.After(10 * time.Second):
		t.Error("agent of host a still serving after the run")
	}
	r := readRun(t, res.Dir)
	if r.Status != results.RunError {
		t.Errorf("results status %q", r.Status)
	}
	// Host a's workload still ran; b's was skipped, naming why.
	st := map[string]string{}
	for _, w := range r.Workloads {
		st[w.Name] = w.Status + ": " + w.Error
	}
	if !strings.HasPrefix(st["x"], "ok") || !strings.HasPrefix(st["y"], "skipped") || !strings.Contains(st["y"], `host "b"`) {
		t.Errorf("workloads = %v, want x ok and y skipped naming host b", st)
	}
}

func TestRunPreflightFails(t *testing.T) {
	bed := newPipeBed(t)
	l := loadLab(t, twoHosts+`
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`)
	res := runPlanned(context.Background(), t, l, plan.Options{}, Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "r"),
		Preflight: func(*lab.Lab, map[string]*proto.Facts) []preflight.Problem {
			return []preflight.Problem{{Host: "a", Code: preflight.CodeNoRXE, What: "kernel has no rdma_rxe module", Fix: "install linux-modules-extra"}}
		}})
	if res.Code != ExitInfra || !strings.Contains(res.Err.Error(), "rdma_rxe") {
		t.Fatalf("code %d err %v", res.Code, res.Err)
	}
	if res.Outcomes[0].Status != steps.StatusSkipped {
		t.Errorf("workload status %q, want skipped", res.Outcomes[0].Status)
	}
}

func TestRunInterrupted(t *testing.T) {
	bed := newPipeBed(t)
	l := loadLab(t, twoHosts+`
workload "long" {
  tool = "exec"
  host = host.a
  command = ["sleep", "60"]
}
workload "next" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`)
	ctx, cancel := context.WithCancel(context.Background())
	opts := Options{Connector: bed, NoReport: true, Out: filepath.Join(t.TempDir(), "r"), OnEvent: func(e Event) {
		if e.Type == "step.start" && e.Workload == "long" {
			go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		}
	}}
	res := runPlanned(ctx, t, l, plan.Options{}, opts)
	if res.Code != ExitInterrupted {
		t.Fatalf("code %d err %v", res.Code, res.Err)
	}
	st := readState(t, res.Dir)
	for _, e := range st.Effects {
		if !e.Undone {
			t.Errorf("left running after interrupt: %+v", e)
		}
	}
	if res.Outcomes[1].Status != steps.StatusSkipped {
		t.Errorf("next: %q, want skipped", res.Outcomes[1].Status)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "results.json")); err != nil {
		t.Error(err)
	}
}

func TestRunDirNeverOverwritten(t *testing.T) {
	bed := newPipeBed(t)
	src := twoHosts + `
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`
	root := t.TempDir()
	fixed := func() time.Time { return time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC) }
	var dirs []string
	for range 2 {
		res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: bed, RunsDir: root, Now: fixed, NoReport: true})
		if res.Code != 0 {
			t.Fatal(res.Err)
		}
		dirs = append(dirs, res.Dir)
	}
	want := []string{filepath.Join(root, "t", "20261125T220000Z"), filepath.Join(root, "t", "20261125T220000Z-2")}
	if !slices.Equal(dirs, want) {
		t.Errorf("run dirs = %v, want %v", dirs, want)
	}
	// An explicit --out that holds a run is refused, not reused.
	res := runPlanned(context.Background(), t, loadLab(t, src), plan.Options{}, Options{Connector: bed, Out: dirs[0], NoReport: true})
	if res.Code != ExitFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "not empty") {
		t.Errorf("--out onto a run: code %d, err %v", res.Code, res.Err)
	}
}

// addExpect adds an expect block to a loaded workload (the condition is
// parsed as the lab loader would).
func addExpect(t *testing.T, l *lab.Lab, workload, cond, msg string) {
	t.Helper()
	w := l.WorkloadByName(workload)
	expr, diags := hclsyntax.ParseExpression([]byte(cond), "test.hcl", hcl.InitialPos)
	if w == nil || diags.HasErrors() {
		t.Fatalf("add expect to %s: %v", workload, diags)
	}
	w.Expects = append(w.Expects, &lab.Expect{Condition: expr, Message: msg})
}

// TestRunRedactsSensitive checks a sensitive variable's value never reaches
// the run's own records (the tool's raw output is the user's).
func TestRunRedactsSensitive(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	res, _ := runLab(t, `
lab "t" {}
variable "token" {
  type      = string
  default   = "`+secret+`"
  sensitive = true
}
host "a" { address = "127.0.0.1" }
workload "use" {
  tool    = "exec"
  host    = host.a
  command = ["sh", "-c", "exit 4", var.token]
}
`, Options{})
	if res.Code != ExitFailed {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	for _, f := range []string{EventsFile, runstate.File, "results.json", "summary.md", "junit.xml", "plan.json"} {
		b, err := os.ReadFile(filepath.Join(res.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the sensitive value", f)
		}
	}
}

// TestRunNoRXE: on a kernel without rdma_rxe (this machine) preflight stops
// the run with a clear message per host, nothing runs, and the exit is 2.
// (Without preflight the rxe step fails the same way, from the agent.)
func TestRunNoRXE(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
rxe "s" {
  host   = host.a
  netdev = "lo"
}
rxe "c" {
  host   = host.b
  netdev = "lo"
}
workload "bw" {
  tool   = "ib_write_bw"
  server = rxe.s
  client = rxe.c
}
`, Options{})
	if res.Code != ExitInfra {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	for _, want := range []string{"preflight", `host "a": kernel`, "has no rdma_rxe module", `host "b": kernel`} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("err = %v, want %q", res.Err, want)
		}
	}
	if res.Outcomes[0].Status != steps.StatusSkipped {
		t.Errorf("workload %q, want skipped", res.Outcomes[0].Status)
	}
}

// TestTeardownContext: the teardown outlives the first Ctrl-C but is
// bounded by TeardownTimeout, and a second Ctrl-C (Hard) ends it at once.
func TestTeardownContext(t *testing.T) {
	t.Run("bounded after a cancel", func(t *testing.T) {
		r := &runner{opts: Options{TeardownTimeout: 50 * time.Millisecond}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tctx, stop := r.teardownContext(ctx)
		defer stop()
		if tctx.Err() != nil {
			t.Fatal("teardown context cancelled with the run")
		}
		select {
		case <-tctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("teardown not bounded by TeardownTimeout")
		}
	})
	t.Run("second Ctrl-C", func(t *testing.T) {
		hard := make(chan struct{})
		r := &runner{opts: Options{TeardownTimeout: time.Hour, Hard: hard}}
		ctx, cancel := context.WithCancel(context.Background())
		tctx, stop := r.teardownContext(ctx)
		defer stop()
		cancel() // first Ctrl-C during the teardown itself
		if tctx.Err() != nil {
			t.Fatal("the first Ctrl-C ended the teardown")
		}
		close(hard)
		select {
		case <-tctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the second Ctrl-C did not end the teardown")
		}
	})
}

// TestRunFetchSmallAndBig: small files come through the agent protocol,
// bigger ones through the host's Pull (SFTP over SSH); both arrive whole.
func TestRunFetchSmallAndBig(t *testing.T) {
	res, _ := runLab(t, twoHosts+`
workload "big" {
  tool = "exec"
  host = host.a
  command = ["head", "-c", "600000", "/dev/urandom"]
}
workload "small" {
  tool = "exec"
  host = host.b
  command = ["echo", "small"]
}`, Options{})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	st, err := os.Stat(filepath.Join(res.Dir, "hosts", "a", "logs", "wl.big.exec.r0.stdout"))
	if err != nil || st.Size() != 600000 {
		t.Errorf("big file: %v, %v", st, err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "hosts", "b", "logs", "wl.small.exec.r0.stdout"))
	if err != nil || string(b) != "small\n" {
		t.Errorf("small file: %q, %v", b, err)
	}
	parts, _ := filepath.Glob(filepath.Join(res.Dir, "hosts", "*", "*", "*.part"))
	if len(parts) > 0 {
		t.Errorf(".part files left: %v", parts)
	}
}

// TestRunNeedsAPlan: a run executes the plan it is given and makes none:
// without one, or with the plan of another lab, it refuses (exit 1, an
// error naming what is missing) before it connects or writes anything.
func TestRunNeedsAPlan(t *testing.T) {
	other := planned(t, loadLab(t, `lab "other" {}
host "a" { address = "127.0.0.1" }
workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`), plan.Options{})
	tests := []struct {
		name string
		plan *plan.Plan
		want string
	}{
		{"none", nil, `run lab "t": no plan to execute`},
		{"another lab's", other, `run lab "t": the plan given is of lab "other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bed := newPipeBed(t)
			out := filepath.Join(t.TempDir(), "run")
			res := Run(context.Background(), loadLab(t, twoHosts+`workload "x" {
  tool = "exec"
  host = host.a
  command = ["true"]
}`), Options{Connector: bed, Plan: tt.plan, Out: out, NoReport: true})
			if res.Code != ExitFailed || res.Err == nil || !strings.Contains(res.Err.Error(), tt.want) {
				t.Errorf("code %d, err %v; want %d and %q", res.Code, res.Err, ExitFailed, tt.want)
			}
			if got := connected(bed); len(got) > 0 {
				t.Errorf("connected %v without a plan of its own", got)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run directory %s: %v, want none made", out, err)
			}
		})
	}
}

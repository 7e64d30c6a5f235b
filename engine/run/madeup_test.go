package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/toolout"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// A made-up tool family, known to this test build only through the one
// value a family registers (kinds.Register(fakeKind{}), in TestMain): its
// descriptor entry, its step and its parser. Nothing else in rlab is told
// about it.
const (
	madeFlavor kinds.Flavor = "fake_ping"
	madeTool   string       = "fake_ping"
)

// fakeKind is the made-up family: the one value a family registers (here
// from TestMain, tools_test.go), carrying its descriptor entries, its step
// and its parser.
type fakeKind struct{}

// Desc is 1. the descriptor entries (and the metric): fake_ping, and the
// provisioning test's fake_ping_pkg (provision_test.go).
// Options: the made-up tool takes the shared options its descriptor's
// flags name (sizes, iterations), decoded by engine/lab.
func (fakeKind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }

func (fakeKind) Desc() kinds.Desc {
	return kinds.Desc{Name: "fake",
		Metrics: []kinds.Metric{{Name: "fake_rtt", Unit: "usec", Doc: "made-up round trip"}},
		Tools: []kinds.Tool{
			{Name: madeTool, Flavor: madeFlavor,
				TransportWhy: "fake_ping has no transports", Sizes: true, MaxSize: 4096, Iterations: true,
				Metrics: []string{"fake_rtt"}, Chart: "fake"},
			{Name: provTool, Flavor: madeFlavor,
				TransportWhy: "fake_ping has no transports", Sizes: true, MaxSize: 4096, Iterations: true,
				Metrics: []string{"fake_rtt"}, Chart: "fake",
				Program: &kinds.Program{Name: "rping", Packages: kinds.Packages{Debian: "rdmacm-utils", RHEL: "librdmacm-utils", SUSE: "librdmacm-utils"}}},
		}}
}

// NewOp is 2. the step.
func (fakeKind) NewOp(w *steps.Workload) (steps.Op, error) { return &fakePing{w: w}, nil }

// Parse is 3. the parser: "rtt SIZE USEC" lines.
func (fakeKind) Parse(out []byte, _ toolout.Options) ([]toolout.Row, toolout.Info, error) {
	var rows []toolout.Row
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var size int64
		var rtt float64
		if _, err := fmt.Sscanf(line, "rtt %d %g", &size, &rtt); err != nil {
			return nil, toolout.Info{}, fmt.Errorf("line %q: %w", line, err)
		}
		rows = append(rows, toolout.Row{Size: size, Values: []toolout.Value{{Metric: "fake_rtt", Value: rtt}}})
	}
	return rows, toolout.Info{Source: "text"}, nil
}

// fakePing runs echo on the client host for each size and parses its output.
type fakePing struct {
	w   *steps.Workload
	out steps.Outcome
}

func (s *fakePing) Describe() string {
	return fmt.Sprintf("%s %s: %s <- %s", s.w.Tool, s.w.Name, s.w.ServerHost, s.w.ClientHost)
}
func (s *fakePing) Outcome() *steps.Outcome                        { return &s.out }
func (s *fakePing) Undo(ctx context.Context, env *steps.Env) error { return nil }

func (s *fakePing) Apply(ctx context.Context, env *steps.Env) error {
	w := s.w
	s.out = steps.Outcome{Workload: w.Name, Tool: w.Tool, Status: steps.StatusOK, Start: time.Now()}
	defer func() { s.out.End = time.Now() }()
	h, err := env.Host(w.ClientHost)
	if err != nil {
		return err
	}
	for _, size := range w.Sizes {
		hd := fmt.Sprintf("wl.%s.s%d", w.Slug, size)
		argv := []string{"echo", "rtt " + strconv.FormatInt(size, 10) + " 12.5"}
		if _, err := rpc.Invoke(ctx, h, rpc.ProcStart, proto.ProcStartParams{Handle: hd, Argv: argv}); err != nil {
			return err
		}
		r, err := rpc.Invoke(ctx, h, rpc.ProcWait, proto.ProcWaitParams{Handle: hd})
		if err != nil {
			return err
		}
		ss, _, err := env.Parse(w.Tool, []byte(r.Stdout), nil, false)
		if err != nil {
			return err
		}
		for i := range ss {
			ss[i].Meta.Workload = w.Name
		}
		s.out.Samples = append(s.out.Samples, ss...)
		s.out.Runs = append(s.out.Runs, steps.RunRecord{Size: size, Client: &steps.ProcRef{Host: w.ClientHost, Handle: hd, Argv: argv}})
	}
	return nil
}

const fakeLab = twoHosts + `
workload "fp" {
  tool       = "fake_ping"
  server     = host.a
  client     = host.b
  sizes      = [64, 512]
  iterations = 10
  expect {
    condition = result.fake_rtt < 100
    message   = "made-up round trip too slow"
  }
}
`

// TestMadeUpToolEndToEnd: a tool described only by a descriptor entry, a
// step kind and a parser (above) is checked by validate with the
// descriptor's rules, planned, run on in-process agents, parsed, and its
// expect evaluated.
func TestMadeUpToolEndToEnd(t *testing.T) {
	// validate: the descriptor's rules apply (qps is not an option; sizes
	// are capped by MaxSize), and all of them are reported at once.
	bad := strings.Replace(fakeLab, "sizes      = [64, 512]", "sizes      = [64, 8192]\n  qps        = 2", 1)
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := lab.Load([]string{p}, lab.LoadOptions{})
	var sums []string
	for _, d := range diags {
		sums = append(sums, d.Summary)
	}
	for _, want := range []string{"Argument not valid for fake_ping", "Invalid size for fake_ping"} {
		if !strings.Contains(strings.Join(sums, "\n"), want) {
			t.Errorf("validate of a bad fake_ping lab: diagnostics %q lack %q", sums, want)
		}
	}

	l := loadLab(t, fakeLab)
	// plan
	pl, err := plan.New(l)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var kinds []string
	for _, st := range pl.Steps {
		if st.Workload != nil && st.Workload.Tool == madeTool {
			kinds = append(kinds, string(st.Action))
		}
	}
	if strings.Join(kinds, ",") != "workload-server,workload-client" {
		t.Errorf("plan steps of fake_ping: %v, want a server and a client step", kinds)
	}

	// run
	res, _ := runLab(t, fakeLab, Options{Parse: toolout.ParseOutput})
	if res.Code != ExitOK {
		t.Fatalf("run: code %d, err %v", res.Code, res.Err)
	}
	r := readRun(t, res.Dir)
	var got []string
	for _, s := range r.Samples {
		if s.Metric == "fake_rtt" {
			got = append(got, fmt.Sprintf("%d:%g %s", s.Meta.Size, s.Value, s.Unit))
		}
	}
	if strings.Join(got, ",") != "64:12.5 usec,512:12.5 usec" {
		t.Errorf("fake_rtt samples = %v", got)
	}
	if len(r.Workloads) != 1 || r.Workloads[0].Status != steps.StatusOK {
		t.Fatalf("workloads = %+v", r.Workloads)
	}
	w := r.Workloads[0]
	held := 0
	for _, e := range w.Expects {
		if e.Held {
			held++
		}
	}
	if len(w.Expects) == 0 || held != len(w.Expects) {
		t.Errorf("expects = %+v, want result.fake_rtt < 100 held", w.Expects)
	}
	if m, ok := results.MetricByName("fake_rtt"); !ok || m.Unit != "usec" {
		t.Errorf("fake_rtt in the vocabulary: %+v %v", m, ok)
	}
}

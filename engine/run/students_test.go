package run

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/rlab-dev/rlab/engine/results"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// classLab is three students, each with a server and a client reached
// through one bastion; student cho's exec fails. Every host is this
// machine (in-process agents).
const classLab = `
lab "class" {}
locals {
  students = toset(["ana", "bob", "cho"])
}
host "bastion" { address = "127.0.0.1" }
host "server" {
  for_each = local.students
  address  = "127.0.0.1"
  jump     = host.bastion
}
host "client" {
  for_each = local.students
  address  = "127.0.0.1"
  jump     = host.bastion
}
workload "hello" {
  for_each = local.students
  tool     = "exec"
  host     = host.server[each.key]
  command  = each.key == "cho" ? ["sh", "-c", "echo no route to client >&2; exit 3"] : ["echo", "hi ${each.key}"]
}
workload "bulk" {
  for_each = local.students
  tool     = "tcp"
  server   = host.server[each.key]
  client   = host.client[each.key]
  bytes    = "1MiB"
  expect {
    condition = result.tcp_gbps > 0
    message   = "no TCP throughput"
  }
}
`

func connected(b *pipeBed) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for n := range b.all {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestClassRunStudents(t *testing.T) {
	res, bed := runLab(t, classLab, Options{})
	if res.Code != ExitFailed {
		t.Fatalf("code %d, want %d (err %v)", res.Code, ExitFailed, res.Err)
	}
	// The bastion is only dialled through: no agent there.
	if got, want := connected(bed), []string{`client["ana"]`, `client["bob"]`, `client["cho"]`, `server["ana"]`, `server["bob"]`, `server["cho"]`}; !slices.Equal(got, want) {
		t.Errorf("connected %v, want %v", got, want)
	}
	type row struct{ Key, Status, Reason, Folder string }
	var got []row
	for _, s := range res.Students {
		got = append(got, row{s.Key, s.Status, s.Reason, s.Folder})
	}
	want := []row{
		{"ana", "ready", "", "students/ana"},
		{"bob", "ready", "", "students/bob"},
		{"cho", "failed", `workload "hello[\"cho\"]" (exec): exec command on host "server[\"cho\"]": sh -c echo no route to client >&2; exit 3: exit 3: no route to client`, "students/cho"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("students (-want +got):\n%s", diff)
	}
	if r := res.Students[2].Reason; !strings.Contains(r, "exit 3") || !strings.Contains(r, "no route to client") {
		t.Errorf("cho's reason %q does not say what failed", r)
	}
	if s := res.Students[0]; s.OK != 2 || s.Failed != 0 || !slices.Equal(s.Hosts, []string{"bastion", `server["ana"]`, `client["ana"]`}) {
		t.Errorf("ana = %+v, want 2 ok and hosts bastion, server, client", s)
	}

	// students.json, the summary section and results.json agree.
	var file []results.Student
	b, err := os.ReadFile(filepath.Join(res.Dir, results.StudentsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Students, file); diff != "" {
		t.Errorf("students.json differs from the result (-want +got):\n%s", diff)
	}
	sum, _ := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	for _, w := range []string{"## Students", "2 of 3 ready", "| ana |", "| cho | bastion, server\\[\"cho\"\\], client\\[\"cho\"\\] | 1 ok, 1 failed | **failed: workload"} {
		if !strings.Contains(string(sum), w) {
			t.Errorf("summary.md lacks %q:\n%s", w, sum)
		}
	}
	if r := readRun(t, res.Dir); len(r.Students) != 3 {
		t.Errorf("results.json has %d students", len(r.Students))
	}

	// Each student's folder holds their hosts' files, their results and a
	// summary, and nothing of the others.
	files := map[string]bool{}
	root := filepath.Join(res.Dir, StudentsDir)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	for _, f := range []string{
		"ana/results.json", "ana/summary.md", "ana/hosts/server.ana/facts.json", "ana/hosts/client.ana/facts.json",
		"ana/hosts/server.ana/logs/wl.hello.ana.exec.r0.stdout",
		"cho/hosts/server.cho/logs/wl.hello.cho.exec.r0.stderr",
	} {
		if !files[f] {
			t.Errorf("students/%s missing", f)
		}
	}
	for f := range files {
		k, _, _ := strings.Cut(f, "/")
		for _, other := range []string{"ana", "bob", "cho"} {
			if other != k && strings.Contains(f, "."+other+"/") {
				t.Errorf("students/%s holds a file of student %s", f, other)
			}
		}
		if strings.Contains(f, "bastion") {
			t.Errorf("students/%s: the bastion has no agent, so no files", f)
		}
	}
	out, _ := os.ReadFile(filepath.Join(root, "ana/hosts/server.ana/logs/wl.hello.ana.exec.r0.stdout"))
	if string(out) != "hi ana\n" {
		t.Errorf("ana's exec output %q", out)
	}
	mine := readRun(t, filepath.Join(root, "cho"))
	if len(mine.Workloads) != 2 || mine.Status != results.RunFailed || len(mine.Students) != 1 || mine.Students[0].Key != "cho" {
		t.Errorf("students/cho/results.json: %d workloads, status %q, students %+v", len(mine.Workloads), mine.Status, mine.Students)
	}
	for _, s := range mine.Samples {
		if !strings.HasSuffix(s.Meta.Workload, `["cho"]`) {
			t.Errorf("students/cho/results.json has a sample of %s", s.Meta.Workload)
		}
	}
	if len(mine.Platforms) == 0 {
		t.Error("students/cho/results.json has no platforms")
	}
	for h := range mine.Platforms {
		if !slices.Contains(mine.Students[0].Hosts, h) {
			t.Errorf("students/cho/results.json has the platform of %s, not one of cho's hosts %v", h, mine.Students[0].Hosts)
		}
	}
	// The manifest lists the folders' files with their hashes.
	var man []ManifestEntry
	b, _ = os.ReadFile(filepath.Join(res.Dir, ManifestFile))
	json.Unmarshal(b, &man)
	listed := map[string]string{}
	for _, m := range man {
		listed[m.Path] = m.SHA256
	}
	if listed["students/ana/hosts/server.ana/facts.json"] == "" || listed["students/ana/hosts/server.ana/facts.json"] != listed["hosts/server.ana/facts.json"] {
		t.Errorf("manifest: students/ana facts.json %q, hosts/ facts.json %q", listed["students/ana/hosts/server.ana/facts.json"], listed["hosts/server.ana/facts.json"])
	}
	if listed["students.json"] == "" || listed["students/cho/results.json"] == "" {
		t.Errorf("manifest lacks students.json or students/cho/results.json")
	}
}

func TestStudentsTableGolden(t *testing.T) {
	res, _ := runLab(t, classLab, Options{})
	for i := range res.Students {
		// Timing-free: the reason of cho carries no timing, but tcp numbers
		// do not appear in the table either.
		res.Students[i].Reason = firstLineOf(res.Students[i].Reason)
	}
	var b strings.Builder
	if err := results.WriteStudentsTable(&b, res.Students, true, false); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "students-table.golden.txt", b.String())
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}

func TestOnlySelectsStudentHosts(t *testing.T) {
	tests := []struct {
		name      string
		only      []string
		connected []string
		workloads []string
		students  []string
	}{
		{name: "student key", only: []string{"bob"}, connected: []string{`client["bob"]`, `server["bob"]`},
			workloads: []string{`hello["bob"]`, `bulk["bob"]`}, students: []string{"bob"}},
		{name: "two keys", only: []string{"ana", "cho"}, connected: []string{`client["ana"]`, `client["cho"]`, `server["ana"]`, `server["cho"]`},
			workloads: []string{`hello["ana"]`, `hello["cho"]`, `bulk["ana"]`, `bulk["cho"]`}, students: []string{"ana", "cho"}},
		{name: "workload name", only: []string{"hello"}, connected: []string{`server["ana"]`, `server["bob"]`, `server["cho"]`},
			workloads: []string{`hello["ana"]`, `hello["bob"]`, `hello["cho"]`}, students: []string{"ana", "bob", "cho"}},
		{name: "instance address", only: []string{`bulk["ana"]`}, connected: []string{`client["ana"]`, `server["ana"]`},
			workloads: []string{`bulk["ana"]`}, students: []string{"ana"}},
		{name: "instance slug", only: []string{"bulk.cho"}, connected: []string{`client["cho"]`, `server["cho"]`},
			workloads: []string{`bulk["cho"]`}, students: []string{"cho"}},
		{name: "forced key", only: []string{"key:ana"}, connected: []string{`client["ana"]`, `server["ana"]`},
			workloads: []string{`hello["ana"]`, `bulk["ana"]`}, students: []string{"ana"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, bed := runLabWith(t, classLab, plan.Options{Only: tt.only}, Options{})
			if got := connected(bed); !slices.Equal(got, tt.connected) {
				t.Errorf("connected %v, want %v", got, tt.connected)
			}
			var wls, sts []string
			for _, o := range res.Outcomes {
				wls = append(wls, o.Workload)
			}
			for _, s := range res.Students {
				sts = append(sts, s.Key)
			}
			if !slices.Equal(wls, tt.workloads) || !slices.Equal(sts, tt.students) {
				t.Errorf("ran %v for students %v, want %v for %v", wls, sts, tt.workloads, tt.students)
			}
			// Only the selected students get a folder.
			ents, _ := os.ReadDir(filepath.Join(res.Dir, StudentsDir))
			if len(ents) != len(tt.students) {
				t.Errorf("%d student folders, want %d", len(ents), len(tt.students))
			}
		})
	}
}

func TestOnlyErrors(t *testing.T) {
	l := loadLab(t, classLab+`
workload "ana" {
  tool    = "exec"
  host    = host.bastion
  command = ["true"]
}
`)
	tests := []struct {
		only []string
		err  string
	}{
		{[]string{"ana"}, `--only "ana" is ambiguous in lab "class": it is both a workload name and a student (for_each) key; write workload:ana for the workload or key:ana for the student`},
		{[]string{"anna"}, `--only "anna": lab "class" has no workload, instance or student key of that name; did you mean "ana"? (workloads: ana, bulk, hello; student keys: ana, bob, cho)`},
		{[]string{"hello", "bulk[\"dan\"]"}, `--only "bulk[\"dan\"]": lab "class" has no workload, instance or student key of that name (workloads: ana, bulk, hello; student keys: ana, bob, cho)`},
		{[]string{"helo"}, `--only "helo": lab "class" has no workload, instance or student key of that name; did you mean "hello"? (workloads: ana, bulk, hello; student keys: ana, bob, cho)`},
		{[]string{"key:hello"}, `--only "key:hello": lab "class" has no workload, instance or student key of that name (workloads: ana, bulk, hello; student keys: ana, bob, cho)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.only, ","), func(t *testing.T) {
			// --only is the plan's: rlab run prints this and exits 1
			// before any run.
			_, err := plan.NewWith(l, plan.Options{Only: tt.only})
			var se *plan.SelectionError
			if !errors.As(err, &se) || err.Error() != tt.err {
				t.Errorf("err:\n%v\nwant a selection error:\n%s", err, tt.err)
			}
		})
	}
	// Both readings can be forced.
	for _, tt := range []struct {
		only string
		n    int
	}{{"workload:ana", 1}, {"key:ana", 2}} {
		p, err := plan.NewWith(l, plan.Options{Only: []string{tt.only}})
		if err != nil || len(p.Selected.Workloads) != tt.n {
			t.Errorf("--only %s: %v, want %d workloads", tt.only, err, tt.n)
		}
	}
}

// fakeKernel stands in for the kernels' rdma_rxe (this machine has none):
// rxe devices live on across runs, as on a student's VM after `rlab run
// --keep`. Everything else is the real in-process agent.
type fakeKernel struct {
	mu      sync.Mutex
	devs    map[string]string // host/device -> netdev
	created []string
	deleted []string
}

type rxeHost struct {
	Host
	k *fakeKernel
}

func (h *rxeHost) Send(ctx context.Context, req *rpc.Request) error {
	k := h.k
	if p, res, ok := rpc.Match(req, rpc.DeviceEnsure); ok {
		id := h.Name() + "/" + p.Name
		k.mu.Lock()
		defer k.mu.Unlock()
		info := proto.DeviceInfo{Name: p.Name, Netdev: p.Netdev, Port: 1, GIDIndex: 1, IPv4: "127.0.0.1", ActiveMTU: 1024}
		switch nd, ok := k.devs[id]; {
		case ok && nd != p.Netdev:
			return &proto.Error{Code: proto.CodeExists, Message: "an RDMA device named " + p.Name + " exists on another netdev"}
		case !ok:
			k.devs[id] = p.Netdev
			k.created = append(k.created, id)
			info.Created = true
		}
		*res = info
		return nil
	}
	if p, _, ok := rpc.Match(req, rpc.DeviceDelete); ok {
		id := h.Name() + "/" + p.Name
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.devs, id)
		k.deleted = append(k.deleted, id)
		return nil
	}
	return h.Host.Send(ctx, req)
}

const classRXE = classLab + `
rxe "server" {
  for_each = local.students
  host     = host.server[each.key]
  netdev   = "lo"
}
`

func rxeConnector(bed *pipeBed, k *fakeKernel) Connector {
	return ConnectFunc(func(ctx context.Context, tg Target, runID string) (Host, error) {
		h, err := bed.Connect(ctx, tg, runID)
		if err != nil {
			return nil, err
		}
		return &rxeHost{Host: h, k: k}, nil
	})
}

func noPreflight(*lab.Lab, map[string]*proto.Facts) []preflight.Problem { return nil }

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		only     []string
		fail     string // host whose connect fails
		code     int
		statuses map[string]string
		ran      []string
	}{
		{name: "one student fails", code: ExitFailed, statuses: map[string]string{"ana": "ready", "bob": "ready", "cho": "failed"},
			// hello has no expect, bulk has: only bulk runs.
			ran: []string{`bulk["ana"]`, `bulk["bob"]`, `bulk["cho"]`}},
		{name: "selected students pass", only: []string{"ana", "bob"}, code: ExitOK, statuses: map[string]string{"ana": "ready", "bob": "ready"},
			ran: []string{`bulk["ana"]`, `bulk["bob"]`}},
		{name: "unreachable", only: []string{"bob"}, fail: `client["bob"]`, code: ExitInfra, statuses: map[string]string{"bob": "failed"},
			ran: []string{`bulk["bob"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// cho's throughput is planted below what the expect wants by a
			// second expect only cho has.
			l := loadLab(t, strings.Replace(classLab, `message   = "no TCP throughput"`, `message   = "no TCP throughput"
  }
  expect {
    condition = each.key != "cho" || result.tcp_gbps > 1e9
    message   = "cho's pair is too slow"`, 1))
			bed := newPipeBed(t)
			if tt.fail != "" {
				bed.fail[tt.fail] = errors.New("dial tcp 192.0.2.1:22: connect: no route to host")
			}
			runs := t.TempDir()
			res := runPlanned(context.Background(), t, l, plan.Options{Only: tt.only, Check: true, NoProvision: true}, Options{Connector: bed, RunsDir: runs, NoReport: true, Preflight: noPreflight})
			if res.Code != tt.code {
				t.Fatalf("code %d, want %d (err %v)", res.Code, tt.code, res.Err)
			}
			if rel, _ := filepath.Rel(runs, res.Dir); !strings.HasPrefix(rel, "class/check-") {
				t.Errorf("check run dir %s, want under class/check-<ts>", rel)
			}
			if r := readRun(t, res.Dir); !r.Check {
				t.Error("results.json of a check does not say it is one")
			}
			if sum, _ := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile)); !strings.HasPrefix(string(sum), "# rlab check: class: ") {
				t.Errorf("summary.md of a check: %.40q", sum)
			}
			got := map[string]string{}
			for _, s := range res.Students {
				got[s.Key] = s.Status
			}
			if diff := cmp.Diff(tt.statuses, got); diff != "" {
				t.Errorf("students (-want +got):\n%s", diff)
			}
			var ran []string
			for _, o := range res.Outcomes {
				ran = append(ran, o.Workload)
			}
			if !slices.Equal(ran, tt.ran) {
				t.Errorf("ran %v, want %v", ran, tt.ran)
			}
			for _, s := range res.Students {
				if s.Key == "cho" {
					if len(s.FailedExpects) != 1 {
						t.Fatalf("cho's failed expects %+v", s.FailedExpects)
					}
					e := s.FailedExpects[0]
					text := e.ExpectText()
					for _, w := range []string{`workload "bulk[\"cho\"]": wanted each.key != "cho" || result.tcp_gbps > 1e9 at 1 MiB: got tcp_gbps = `, "(cho's pair is too slow)"} {
						if !strings.Contains(text, w) {
							t.Errorf("cho's failing expect %q lacks %q", text, w)
						}
					}
				}
				if tt.fail != "" && !strings.Contains(s.Reason, "no route to host") {
					t.Errorf("bob's reason %q does not say the host is unreachable", s.Reason)
				}
			}
			if tt.fail != "" && (len(res.Unreachable) != 1 || !strings.Contains(res.Unreachable[0], `client[\"bob\"]`)) {
				t.Errorf("unreachable = %q", res.Unreachable)
			}
		})
	}
}

// TestValidateReusesRXE: a check after `rlab run --keep` uses the rxe
// devices the run left, creates only the missing one and removes only that.
func TestValidateReusesRXE(t *testing.T) {
	k := &fakeKernel{devs: map[string]string{}}
	l := loadLab(t, classRXE)
	bed := newPipeBed(t)
	res := runPlanned(context.Background(), t, l, plan.Options{Only: []string{"ana", "bob"}}, Options{Connector: rxeConnector(bed, k), Out: filepath.Join(t.TempDir(), "run"), Keep: true, NoReport: true, Preflight: noPreflight})
	if res.Code != ExitOK {
		t.Fatalf("run --keep: code %d: %v", res.Code, res.Err)
	}
	kept := []string{`server["ana"]/rxe_lo`, `server["bob"]/rxe_lo`}
	if got := slices.Sorted(func(yield func(string) bool) {
		for d := range k.devs {
			if !yield(d) {
				return
			}
		}
	}); !slices.Equal(got, kept) || len(k.deleted) != 0 {
		t.Fatalf("after run --keep: devices %v, deleted %v; want %v kept", got, k.deleted, kept)
	}
	k.created = nil
	res = runPlanned(context.Background(), t, loadLab(t, classRXE), plan.Options{Only: []string{"ana", "cho"}, Check: true, NoProvision: true}, Options{Connector: rxeConnector(newPipeBed(t), k), RunsDir: t.TempDir(), NoReport: true, Preflight: noPreflight})
	if res.Code != ExitFailed { // cho's exec fails, but hello has no expect; bulk does and holds
		if res.Code != ExitOK {
			t.Fatalf("check: code %d: %v", res.Code, res.Err)
		}
	}
	if want := []string{`server["cho"]/rxe_lo`}; !slices.Equal(k.created, want) || !slices.Equal(k.deleted, want) {
		t.Errorf("check created %v and deleted %v, want only %v (ana's kept device reused)", k.created, k.deleted, want)
	}
	if _, ok := k.devs[`server["ana"]/rxe_lo`]; !ok {
		t.Error("the check removed ana's kept device")
	}
	st := readState(t, res.Dir)
	for _, e := range st.Effects {
		if e.Type == "rxe" && e.Host == `server["ana"]` && e.Created {
			t.Errorf("state.json says the check created ana's device: %+v", e)
		}
	}

	// A device of that name on another netdev fails that student only.
	k.devs[`server["bob"]/rxe_lo`] = "eth9"
	res = runPlanned(context.Background(), t, loadLab(t, classRXE), plan.Options{Only: []string{"ana", "bob"}, Check: true, NoProvision: true}, Options{Connector: rxeConnector(newPipeBed(t), k), RunsDir: t.TempDir(), NoReport: true, Preflight: noPreflight})
	if res.Code != ExitFailed {
		t.Fatalf("check with a clashing device: code %d, want 1: %v", res.Code, res.Err)
	}
	got := map[string]string{}
	for _, s := range res.Students {
		got[s.Key] = s.StatusText()
	}
	if got["ana"] != "ready" || !strings.Contains(got["bob"], `failed: create rxe "rxe_lo" on lo of host "server[\"bob\"]"`) {
		t.Errorf("students %q: want ana ready and bob failed naming the rxe step and host", got)
	}
}

// TestClassIsolation: in a class run, a student whose host fails preflight
// or whose rxe device cannot be made is failed with that reason (exit 2),
// and the other students run. A problem that names no host of the run
// (none, or one --only left out) stops the whole run: nobody's to fail.
func TestClassIsolation(t *testing.T) {
	tests := []struct {
		name      string
		preflight []preflight.Problem
		clash     bool // bob's device name is taken on another netdev
		reason    string
		whole     bool // the run stops with the preflight's problems
	}{
		{name: "preflight of a host outside the run", preflight: []preflight.Problem{{Host: `server["cho"]`, Code: preflight.CodeMissingTool, What: "perftest not installed"}},
			whole: true, reason: `preflight found 1 problem(s):`},
		{name: "preflight of no host", preflight: []preflight.Problem{{Code: preflight.CodeMissingTool, What: "no RDMA device"}},
			whole: true, reason: `preflight found 1 problem(s):`},
		{name: "preflight", preflight: []preflight.Problem{{Host: `server["bob"]`, Code: preflight.CodeMissingTool, What: "perftest not installed", Fix: "apt install perftest"}},
			reason: `preflight of host "server[\"bob\"]" found 1 problem(s): host "server[\"bob\"]": perftest not installed`},
		{name: "rxe", clash: true, reason: `create rxe "rxe_lo" on lo of host "server[\"bob\"]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &fakeKernel{devs: map[string]string{}}
			if tt.clash {
				k.devs[`server["bob"]/rxe_lo`] = "eth9"
			}
			res := runPlanned(context.Background(), t, loadLab(t, classRXE), plan.Options{Only: []string{"ana", "bob"}}, Options{
				Connector: rxeConnector(newPipeBed(t), k), Out: filepath.Join(t.TempDir(), "run"), NoReport: true,
				Preflight: func(*lab.Lab, map[string]*proto.Facts) []preflight.Problem { return tt.preflight },
			})
			if res.Code != ExitInfra {
				t.Fatalf("code %d, want %d: %v", res.Code, ExitInfra, res.Err)
			}
			if tt.whole {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tt.reason) {
					t.Errorf("run error %v, want the preflight's problems (%s)", res.Err, tt.reason)
				}
				return
			}
			got := map[string]results.Student{}
			for _, s := range res.Students {
				got[s.Key] = s
			}
			if got["ana"].Status != results.StudentReady || got["ana"].OK != 2 {
				t.Errorf("ana = %+v, want ready with 2 ok", got["ana"])
			}
			if b := got["bob"]; b.Status != results.StudentFailed || b.Failed != 2 || !strings.Contains(b.Reason, tt.reason) {
				t.Errorf("bob = %+v, want failed (2 workloads) because %s", b, tt.reason)
			}
			for _, o := range res.Outcomes {
				if strings.Contains(o.Workload, "bob") && (o.Status != "skipped" || !strings.Contains(o.Error, `host "server[\"bob\"]" not prepared`)) {
					t.Errorf("%s: %s %s, want skipped as its host was not prepared", o.Workload, o.Status, o.Error)
				}
			}
		})
	}
}

// FuzzOnly feeds --only any values: it never panics, an accepted value
// selects something, and the students the plan makes keep their folders
// apart (a slug of a key alone: engine/plan FuzzStudentSlug).
func FuzzOnly(f *testing.F) {
	l := loadLab(f, classLab)
	for _, s := range []string{"ana", `bulk["bob"]`, "bulk.cho", "hello", "key:ana", "workload:hello", "anna", "", `x["`, "[", "]", `a[""]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := plan.NewWith(l, plan.Options{Only: []string{v}})
		if err == nil && len(p.Selected.Workloads)+len(p.Selected.Devices)+len(p.Selected.Captures) == 0 {
			t.Errorf("--only %q accepted but selects nothing", v)
		}
		plan.InstanceKey(v)
		if err == nil {
			seen := map[string]bool{}
			for _, s := range p.Students {
				if seen[s.Slug] || !filepath.IsLocal(s.Slug) || strings.ContainsAny(s.Slug, `/\`) {
					t.Errorf("--only %q: student %q has folder %q", v, s.Key, s.Slug)
				}
				seen[s.Slug] = true
			}
		}
	})
}

func TestInstanceKey(t *testing.T) {
	tests := []struct {
		name, block, key string
		keyed            bool
	}{
		{`write_bw["ana"]`, "write_bw", "ana", true},
		{`h["a\"]b"]`, "h", `a"]b`, true},
		{`h[""]`, "h", "", true},
		{"h[0]", "h", "", false},
		{"bastion", "bastion", "", false},
		{`x["`, `x["`, "", false},
		{"[]", "", "", false},
	}
	for _, tt := range tests {
		b, k, keyed := plan.InstanceKey(tt.name)
		if b != tt.block || k != tt.key || keyed != tt.keyed {
			t.Errorf("InstanceKey(%q) = %q, %q, %v; want %q, %q, %v", tt.name, b, k, keyed, tt.block, tt.key, tt.keyed)
		}
	}
	// A count lab is not a class lab.
	res, _ := runLabWith(t, twoHosts+`
workload "w" {
  count   = 2
  tool    = "exec"
  host    = host.a
  command = ["true"]
}`, plan.Options{Only: []string{"w"}}, Options{})
	if res.Code != ExitOK || res.Students != nil || len(res.Outcomes) != 2 {
		t.Errorf("count lab: code %d, students %+v, %d outcomes", res.Code, res.Students, len(res.Outcomes))
	}
}

// sharedHostLab: every student has a desk of their own and says hello on
// the one lab_server they share.
const sharedHostLab = `
lab "shared" {}
host "lab_server" { address = "127.0.0.1" }
host "desk" {
  for_each = toset(["ana", "bob"])
  address  = "127.0.0.1"
}
workload "hello" {
  for_each = toset(["ana", "bob"])
  tool     = "exec"
  host     = host.lab_server
  command  = ["echo", each.key]
}
workload "desk" {
  for_each = toset(["ana", "bob"])
  tool     = "exec"
  host     = host.desk[each.key]
  command  = ["true"]
}
`

// TestSharedHostFiles: of a host every student uses, a student's folder
// holds its facts and that student's own logs, not the others'.
func TestSharedHostFiles(t *testing.T) {
	res, bed := runLabWith(t, sharedHostLab, plan.Options{Only: []string{"bob"}}, Options{})
	if res.Code != ExitOK || len(res.Students) != 1 || res.Students[0].Hosts[0] != "lab_server" || len(res.Students[0].Workloads) != 2 {
		t.Fatalf("code %d, students %+v: %v", res.Code, res.Students, res.Err)
	}
	if got := connected(bed); !slices.Equal(got, []string{`desk["bob"]`, "lab_server"}) {
		t.Errorf("connected %v", got)
	}
	res, _ = runLab(t, sharedHostLab, Options{})
	var files []string
	root := filepath.Join(res.Dir, StudentsDir, "ana")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	want := []string{"hosts/desk.ana/facts.json", "hosts/desk.ana/logs/wl.desk.ana.exec.r0.stderr", "hosts/desk.ana/logs/wl.desk.ana.exec.r0.stdout",
		"hosts/lab_server/facts.json", "hosts/lab_server/logs/wl.hello.ana.exec.r0.stderr", "hosts/lab_server/logs/wl.hello.ana.exec.r0.stdout", "results.json", "summary.md"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("students/ana (-want +got):\n%s", diff)
	}
	// Its results.json lists as artifacts the pulled files its folder
	// holds, none of the other students'.
	var arts []string
	for _, a := range readRun(t, root).Artifacts {
		arts = append(arts, a.Path)
	}
	slices.Sort(arts)
	wantArts := slices.DeleteFunc(slices.Clone(want), func(p string) bool { return !strings.Contains(p, "/logs/") })
	if diff := cmp.Diff(wantArts, arts); diff != "" {
		t.Errorf("students/ana's artifacts (-want +got):\n%s", diff)
	}
}

func TestSubLab(t *testing.T) {
	l := loadLab(t, classRXE)
	p, err := plan.NewWith(l, plan.Options{Only: []string{"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Selected
	var names []string
	for _, w := range sub.Workloads {
		names = append(names, w.Name)
	}
	for _, x := range sub.Devices {
		names = append(names, x.Name)
	}
	for _, h := range sub.Hosts {
		names = append(names, h.Name)
	}
	if want := []string{`hello["bob"]`, `bulk["bob"]`, `server["bob"]`, "bastion", `server["bob"]`, `client["bob"]`}; !slices.Equal(names, want) {
		t.Errorf("sub-lab of bob: %v, want %v", names, want)
	}
	if _, err := plan.New(sub); err != nil {
		t.Errorf("plan of the sub-lab: %v", err)
	}
	if _, err := plan.NewWith(l, plan.Options{Only: []string{"dan"}}); err == nil || !strings.Contains(err.Error(), `--only "dan"`) {
		t.Errorf("unknown key: %v", err)
	}
}

// TestClassCaptureIsolation: a student whose capture cannot start is failed
// with that reason; the others run (exit 2).
func TestClassCaptureIsolation(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump not installed")
	}
	res, _ := runLabWith(t, classLab+`
capture "c" {
  for_each = local.students
  host     = host.client[each.key]
  netdev   = each.key == "bob" ? "nosuchdev0" : "lo"
}
`, plan.Options{Only: []string{"ana", "bob"}}, Options{Preflight: noPreflight}) // preflight would catch the netdev
	if res.Code != ExitInfra {
		t.Fatalf("code %d, want 2: %v", res.Code, res.Err)
	}
	got := map[string]results.Student{}
	for _, s := range res.Students {
		got[s.Key] = s
	}
	if got["ana"].Status != results.StudentReady {
		t.Errorf("ana = %+v, want ready", got["ana"])
	}
	if b := got["bob"]; b.Status != results.StudentFailed || !strings.Contains(b.Reason, "nosuchdev0") || !strings.Contains(b.Reason, "capture") {
		t.Errorf("bob = %+v, want failed naming the capture's netdev", b)
	}
}

// TestSweepNoStudents: a run of a lab whose for_each only sweeps writes no
// students (no students.json, no students/ folder), as any other lab.
func TestSweepNoStudents(t *testing.T) {
	res, _ := runLab(t, `
lab "sweep" {}
host "a" { address = "127.0.0.1" }
workload "w" {
  for_each = toset(["0", "1"])
  tool     = "exec"
  host     = host.a
  command  = ["true"]
}`, Options{})
	if res.Code != ExitOK || res.Students != nil || len(res.Outcomes) != 2 {
		t.Fatalf("code %d, students %+v, %d outcomes: %v", res.Code, res.Students, len(res.Outcomes), res.Err)
	}
	for _, f := range []string{StudentsDir, results.StudentsFile} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want none", f, err)
		}
	}
}

// TestRunExecutesTheGivenPlan: a run handed a plan (rlab run plans once and
// counts its workloads for the progress bar) executes that plan's selection
// (--only is the plan's, the run has none): it connects the plan's agents, runs its
// workloads and writes it, unchanged, as plan.json.
func TestRunExecutesTheGivenPlan(t *testing.T) {
	l := loadLab(t, classLab)
	p, err := plan.NewWith(l, plan.Options{Only: []string{"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	bed := newPipeBed(t)
	res := Run(context.Background(), l, Options{Connector: bed, Plan: p, Out: filepath.Join(t.TempDir(), "run"), NoReport: true})
	if res.Code != ExitOK {
		t.Fatalf("code %d: %v", res.Code, res.Err)
	}
	if got, want := connected(bed), []string{`client["bob"]`, `server["bob"]`}; !slices.Equal(got, want) {
		t.Errorf("connected %v, want %v", got, want)
	}
	var wls []string
	for _, o := range res.Outcomes {
		wls = append(wls, o.Workload)
	}
	if want := []string{`hello["bob"]`, `bulk["bob"]`}; !slices.Equal(wls, want) {
		t.Errorf("ran %v, want %v", wls, want)
	}
	want, _ := json.MarshalIndent(p, "", "  ")
	if got, err := os.ReadFile(filepath.Join(res.Dir, "plan.json")); err != nil || string(got) != string(want)+"\n" {
		t.Errorf("plan.json is not the plan the run was given (%v)", err)
	}
}

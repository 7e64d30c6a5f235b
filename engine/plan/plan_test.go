package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/lab"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func load(t testing.TB, path string, opts lab.LoadOptions) *lab.Lab {
	t.Helper()
	l, diags := lab.Load([]string{path}, opts)
	if diags.HasErrors() {
		t.Fatalf("load %s: %s", path, diags.Error())
	}
	return l
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; go test -update to accept):\n%s", name, d)
	}
}

// TestGolden renders the plan of every example lab and some corpus labs as
// text and JSON and compares with testdata/.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.hcl")
	files = append(files, "../../testdata/labs/valid/for_each_map.hcl", "../../testdata/labs/valid/vars_locals_funcs.hcl", "../../testdata/labs/valid/ssh_forms.hcl", "../../testdata/labs/valid/groups.hcl", "../../testdata/labs/valid/program.hcl")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".hcl")
		t.Run(name, func(t *testing.T) {
			p, err := New(load(t, f, lab.LoadOptions{}))
			if err != nil {
				t.Fatal(err)
			}
			checkDAG(t, p)
			var txt bytes.Buffer
			if err := p.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", txt.Bytes())
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".json", append(js, '\n'))
			// WriteJSON streams what MarshalIndent makes in one piece.
			var streamed bytes.Buffer
			if err := p.WriteJSON(&streamed); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(js)+"\n", streamed.String()); d != "" {
				t.Errorf("WriteJSON differs from MarshalIndent (-want +got):\n%s", d)
			}
		})
	}
}

// checkDAG: every dependency exists and comes earlier; workloads that share
// a host are ordered (the later one depends, transitively, on the earlier),
// unless one group runs them together: then neither depends on the other.
func checkDAG(t *testing.T, p *Plan) {
	t.Helper()
	pos := map[string]int{}
	for i, s := range p.Steps {
		pos[s.ID] = i
	}
	for i, s := range p.Steps {
		for _, d := range s.DependsOn {
			j, ok := pos[d]
			if !ok || j >= i {
				t.Fatalf("step %s depends on %s, which is missing or later", s.ID, d)
			}
		}
	}
	reach := func(from, to string) bool {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if id == to {
				return true
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			stack = append(stack, p.Step(id).DependsOn...)
		}
		return false
	}
	// A group runs as one: its workloads wait for what came before on any
	// of the group's hosts, and what comes after on any of them waits for
	// all of its workloads.
	unitHosts := func(w *lab.Workload) []string {
		var hs []string
		for _, g := range p.Groups {
			if slices.Contains(g.Workloads, w.Name) {
				for _, s := range p.Steps {
					if s.Workload != nil && slices.Contains(g.Workloads, s.Subject) && !slices.Contains(hs, s.Host) {
						hs = append(hs, s.Host)
					}
				}
				return hs
			}
		}
		for _, h := range w.Hosts() {
			hs = append(hs, h.Name)
		}
		return hs
	}
	first := map[string]string{} // workload -> its first step
	lastOf := map[string]string{}
	for _, s := range p.Steps {
		if s.Workload == nil {
			continue
		}
		if first[s.Subject] == "" {
			first[s.Subject] = s.ID
		}
		lastOf[s.Subject] = s.ID
	}
	for _, a := range p.Steps {
		for _, b := range p.Steps {
			if a.Workload == nil || b.Workload == nil || a.Workload.Index >= b.Workload.Index || a.ID != lastOf[a.Subject] || b.ID != first[b.Subject] {
				continue
			}
			share := false
			for _, x := range unitHosts(a.Workload) {
				for _, y := range unitHosts(b.Workload) {
					share = share || x == y
				}
			}
			together := false
			for _, g := range p.Groups {
				together = together || slices.Contains(g.Workloads, a.Subject) && slices.Contains(g.Workloads, b.Subject)
			}
			if together {
				if reach(b.ID, a.ID) || reach(first[a.Subject], lastOf[b.Subject]) {
					t.Errorf("workloads %s and %s of one group: one waits for the other", a.Subject, b.Subject)
				}
				continue
			}
			if got := reach(b.ID, a.ID); got != share {
				t.Errorf("workload %s after %s: ordered=%v, share a host=%v", b.Subject, a.Subject, got, share)
			}
		}
	}
}

// TestClassConcurrency is the done-when check: 30 students give 60
// hosts with steps, and every pair's workload runs in the same wave.
func TestClassConcurrency(t *testing.T) {
	l := load(t, "../../labs/class.hcl", lab.LoadOptions{})
	p, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	working := 0
	for _, h := range p.Hosts {
		if !h.JumpOnly {
			working++
			if len(h.Steps) < 6 {
				t.Errorf("host %s has %d steps", h.Name, len(h.Steps))
			}
		}
	}
	if working != 60 {
		t.Errorf("%d hosts with steps, want 60", working)
	}
	want := []int{30, 30, 30}
	var got []int
	for _, w := range p.Waves {
		got = append(got, len(w.Workloads))
	}
	if !cmp.Equal(want, got) {
		t.Errorf("wave sizes %v, want %v", got, want)
	}
	// The second workload of a pair waits for the first of that pair only.
	s := p.Step(`server.ana/workload-server/write_lat.ana`)
	if s == nil {
		t.Fatal("no server step for write_lat[ana]")
	}
	for _, d := range s.DependsOn {
		if strings.Contains(d, "workload") && !strings.Contains(d, ".ana") {
			t.Errorf("write_lat[ana] waits for another pair's step %s", d)
		}
	}
	if b := p.Step("bastion/connect"); b == nil || p.Step("server.ana/connect").DependsOn[0] != "bastion/connect" {
		t.Errorf("student hosts must connect through the bastion")
	}
}

func TestRedaction(t *testing.T) {
	p, err := New(load(t, "../../testdata/labs/valid/vars_locals_funcs.hcl", lab.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	p.WriteText(&txt)
	js, _ := json.Marshal(p)
	for _, out := range []string{txt.String(), string(js)} {
		if strings.Contains(out, "s3cr3t-token") {
			t.Error("plan output shows a sensitive value")
		}
		if !strings.Contains(out, "(sensitive)") {
			t.Error("plan output does not mark the redacted value")
		}
	}
}

// TestGoldenProvision: a run that provisions has a provision step on each
// host it provisions, between ship-agent and preflight, naming what would
// be installed if missing (the plan cannot know what is: it has no host);
// provision = true on one host plans it there only, --provision on every
// host, and a student check (NoProvision) nowhere.
func TestGoldenProvision(t *testing.T) {
	for _, tc := range []struct {
		name string
		lab  string
		opts Options
		on   []string // hosts with a provision step
	}{
		{"provision", "testdata/provision.hcl", Options{}, []string{"server"}},
		{"provision-all", "testdata/provision.hcl", Options{Provision: true}, []string{"server", "client"}},
		{"provision-none", "testdata/provision.hcl", Options{Provision: true, NoProvision: true}, nil},
		{"quickstart-provision", "../../labs/quickstart.hcl", Options{Provision: true}, []string{"server", "client"}},
		// Both VMs under TCG: perftest's QP timeout raised (-u 18), the
		// pingpong's said to be fixed, the tcp baseline untouched.
		{"quickstart-tcg", "../../labs/quickstart.hcl", Options{Provision: true, Emulated: map[string]string{
			"server": "host server is a local VM that will run under TCG (KVM not usable: open /dev/kvm: no such file or directory)",
			"client": "host client is a local VM that will run under TCG (KVM not usable: open /dev/kvm: no such file or directory)"}}, []string{"server", "client"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewWith(load(t, tc.lab, lab.LoadOptions{}), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkDAG(t, p)
			var on []string
			for _, s := range p.Steps {
				if s.Action != Provision {
					continue
				}
				on = append(on, s.Host)
				pf := p.Step(StepID(s.HostRef.Slug, Preflight, ""))
				if !slices.Equal(s.DependsOn, []string{StepID(s.HostRef.Slug, ShipAgent, "")}) || !slices.Equal(pf.DependsOn, []string{s.ID}) {
					t.Errorf("%s depends on %q, its preflight on %q: want ship-agent -> provision -> preflight", s.ID, s.DependsOn, pf.DependsOn)
				}
			}
			if !slices.Equal(on, tc.on) {
				t.Errorf("provision steps on %q, want %q", on, tc.on)
			}
			if tc.name == "provision-none" {
				return
			}
			var txt bytes.Buffer
			if err := p.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".txt", txt.Bytes())
		})
	}
}

// TestOnlyAndIDs: Options.Only plans a student's part of a class (the plan
// selects, the run does not), Agents are its working hosts without the
// bastion it goes through, and IDs finds steps by host, subject and kind.
func TestOnlyAndIDs(t *testing.T) {
	l := load(t, "../../labs/class.hcl", lab.LoadOptions{})
	p, err := NewWith(l, Options{Only: []string{"ana"}})
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	for _, h := range p.Agents() {
		agents = append(agents, h.Name)
	}
	if want := []string{`server["ana"]`, `client["ana"]`}; !cmp.Equal(want, agents) {
		t.Errorf("agents %v, want %v", agents, want)
	}
	for _, w := range p.Selected.Workloads {
		if _, k, _ := InstanceKey(w.Name); k != "ana" {
			t.Errorf("selected %s, not ana's", w.Name)
		}
	}
	for _, tc := range []struct {
		host, subject string
		kinds         []Action
		want          []string
	}{
		{`server["ana"]`, "", []Action{Connect, ShipAgent}, []string{"server.ana/connect", "server.ana/ship-agent"}},
		{"bastion", "", []Action{Connect, ShipAgent}, []string{"bastion/connect"}},
		{`server["ana"]`, `write_bw["ana"]`, []Action{WorkloadServer}, []string{"server.ana/workload-server/write_bw.ana"}},
		{`server["bea"]`, "", []Action{Connect}, nil},
		{"", "", []Action{Teardown}, []string{"server.ana/teardown", "client.ana/teardown"}},
	} {
		if got := p.IDs(tc.host, tc.subject, tc.kinds...); !cmp.Equal(tc.want, got) {
			t.Errorf("IDs(%q, %q, %v) = %v, want %v", tc.host, tc.subject, tc.kinds, got, tc.want)
		}
	}
	var se *SelectionError
	if _, err := NewWith(l, Options{Only: []string{"zed"}}); !errors.As(err, &se) {
		t.Errorf("--only zed: %v, want a *SelectionError", err)
	}
}

// Package plan turns a loaded lab (engine/lab) into the steps a run takes:
// per host, in order, connect, ship the agent, preflight, create rxe
// devices, start captures, run each workload's server and client sides,
// stop captures, fetch artifacts and tear down; and across hosts, a DAG of
// explicit dependencies (step IDs). Workloads that share a host run in file
// order; workloads on disjoint hosts run at the same time; the workloads of a
// lab `group` run at the same time on shared hosts too (the group takes the
// place of its first workload in file order).
//
// The DAG is the one schedule: engine/run executes it and orders nothing
// itself (set-up and tear-down in the phases of phases.go, which New checks
// the DAG allows; workloads and scoped captures edge by edge, as walk.go
// reads the edges once), so a new ordering rule, such as a `depends_on`, is
// an edge added here and nowhere else. A class lab's students (who owns
// which workloads and hosts, students.go) are decided here too.
//
// Selection happens here and only here: Options.Only (rlab run/plan --only)
// and Options.Check (a student check) limit the lab before it is planned
// (select.go), Plan.Selected is what was kept, and engine/run executes
// that plan without selecting again; `rlab run` plans once and hands the
// plan to the run, whose progress bar counts its workloads.
//
// Plan.Estimate (estimate.go) is the plan's estimate of the run's time:
// the phases as measured on the demo, each workload at its tool family's
// pace (kinds.Pace), the longest chain of workloads through the DAG.
//
// A step (Step) is one node of the plan: one action on one host; the ops
// of package steps carry them out (a workload's server and client steps
// are one op). A step's Action is what plan.json calls its "kind"; in the
// Go code a kind is only a tool kind (package kinds). Package steps'
// doc gives every such word its one meaning.
//
// It is pure: no I/O, no SSH, no agent. It must not import the run engine.
//
// # JSON form
//
// `rlab plan -json` prints Plan as JSON:
//
//	{
//	  "lab": "quickstart",
//	  "hosts": [{"name": "server", "slug": "server", "address": "...", "user": "",
//	             "port": 22, "jump": "", "vm": true, "jump_only": false,
//	             "steps": ["server/connect", ...]}],
//	  "steps": [{"id": "server/connect", "kind": "connect", "host": "server",
//	             "subject": "", "description": "...", "depends_on": [], "level": 0,
//	             "trials": [{"size": 65536, "repeat": 0, "port": 20000,
//	                         "argv": ["ib_write_bw", "-d", "rxe_eth1", "-x", "{server.gid}", ...]}]}],
//	  "waves": [{"wave": 1, "workloads": ["write_bw"]}, ...],
//	  "groups": [{"name": "incast", "wave": 2, "workloads": ["a_in", "b_in"],
//	              "shared_hosts": ["server"]}]   // only when the lab has groups
//	}
//
// trials (argv.go) is on the steps of a workload (its server and client,
// or its one step on host): each size × repeat with its port and the
// command that side runs, built by the family's argv hook (kinds.Argver)
// and run as it is by the step's op; {server.gid}, {client.gid}, {mtu}
// and {server.addr} are filled by the run from what the device-create
// steps report. build, on a program workload's steps, is the command that
// builds its program on that host first.
//
// steps is in a topological order (every step after the steps it depends
// on); level is the step's depth in the DAG (0 = no dependencies). A
// workload's wave is one more than the latest wave of the workloads before
// it on any of its hosts, so the workloads of one wave run at the same time.
// Values of sensitive variables are replaced by "(sensitive)".
package plan

import (
	"fmt"
	"slices"
	"sort"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision/needs"
	"github.com/rlab-dev/rlab/kinds"
)

// Action is what a step does.
type Action string

// Step actions, in the order they appear on a host.
const (
	Connect        Action = "connect"         // open the SSH connection (through the jump host, if any)
	ShipAgent      Action = "ship-agent"      // upload the agent unless cached, start it
	Provision      Action = "provision"       // install what the lab needs and the host lacks (--provision, provision = true)
	Preflight      Action = "preflight"       // facts, kernel module and tools check
	CreateDevice   Action = "create-rxe"      // rxe.ensure
	StartCapture   Action = "start-capture"   // capture.start
	WorkloadServer Action = "workload-server" // the listening side of a two-sided workload
	WorkloadClient Action = "workload-client" // the side that connects; its end is the workload's end
	WorkloadRun    Action = "workload-run"    // an exec workload's command
	StopCapture    Action = "stop-capture"    // capture.stop
	StartImpair    Action = "impair"          // impair.apply: netem on a netdev (impair.go)
	StopImpair     Action = "remove-impair"   // impair.remove
	Fetch          Action = "fetch"           // pull logs, captures, results into the run folder
	Teardown       Action = "teardown"        // delete rxe devices not kept, stop leftovers
)

// Step is one node of the plan DAG.
type Step struct {
	ID          string   `json:"id"`
	Action      Action   `json:"kind"`
	Host        string   `json:"host"`    // lab.Host.Name
	Subject     string   `json:"subject"` // name of the rxe, capture or workload; "" for host steps
	Description string   `json:"description"`
	DependsOn   []string `json:"depends_on"`
	Level       int      `json:"level"`

	// The model objects the step acts on, for the run engine.
	HostRef *lab.Host `json:"-"`
	// Dial is, on a client step whose server has no rxe of its own (tcp),
	// the address the client dials, resolved once here (lab.ServerDial).
	Dial     *lab.Dial     `json:"-"`
	Device   *lab.Device   `json:"-"`
	Capture  *lab.Capture  `json:"-"`
	Workload *lab.Workload `json:"-"`
	Impair   *lab.Impair   `json:"-"`

	// Trials are, on the server, client or run step of a workload whose
	// family has an argv hook (kinds.Argver), its trials resolved
	// (argv.go): each size × repeat with its port and the command this
	// side runs.
	Trials []Trial `json:"trials,omitempty"`
	// planned is, on a workload's client (or one) step, what its Trials
	// show before any sensitive value is hidden, with the placeholders
	// the run fills: WorkloadPlan.Trials.
	planned []kinds.Planned
	// Build is, on a step of a program workload whose program block has a
	// build, the argv that builds it in its folder on this host before
	// the first trial. A host builds a program once per run (the
	// workloads after the first reuse it) and not at all when its cache
	// holds the build (kinds/program).
	Build []string `json:"build,omitempty"`
}

// HostPlan is one host's steps in order.
type HostPlan struct {
	Name     string   `json:"name"`
	Slug     string   `json:"slug"`
	Address  string   `json:"address"`
	User     string   `json:"user"`
	Port     int      `json:"port"`
	Jump     string   `json:"jump"`
	VM       bool     `json:"vm"`
	JumpOnly bool     `json:"jump_only"` // only a jump host: connected, no agent
	Steps    []string `json:"steps"`

	Ref *lab.Host `json:"-"` // the host, for the run engine
	// Need is what the lab needs on it (packages, modules), which its
	// provision step installs when the host lacks it.
	Need needs.Need `json:"-"`
	// How the run reaches it (hosts.go), resolved once here: Hops, its
	// jump string's bastions (first dialled first), or Via, the planned
	// lab host it jumps through.
	Hops []Hop     `json:"-"`
	Via  *HostPlan `json:"-"`
}

// Wave is a set of workloads that run at the same time.
type Wave struct {
	Wave      int      `json:"wave"`
	Workloads []string `json:"workloads"`
}

// GroupPlan is a lab's group: workloads that run at the same time although
// they share hosts (Shared names those hosts).
type GroupPlan struct {
	Name      string   `json:"name"`
	Wave      int      `json:"wave"`
	Workloads []string `json:"workloads"`
	Shared    []string `json:"shared_hosts"`
}

// Plan is the whole plan of a lab.
type Plan struct {
	Lab    string      `json:"lab"`
	Hosts  []*HostPlan `json:"hosts"`
	Steps  []*Step     `json:"steps"`
	Waves  []Wave      `json:"waves"`
	Groups []GroupPlan `json:"groups,omitempty"`
	// VMCost is what the local VMs the run boots need (nil: none).
	VMCost *VMCost `json:"vm_cost,omitempty"`
	// Machine is what this machine has for them, when the caller read it
	// (rlab plan and run do; a plan is pure, so it does not read it).
	Machine *Machine `json:"machine,omitempty"`
	// Check: this is the plan of a student check (Options.Check), and its
	// run is one (its directory's name, its exit code).
	Check bool `json:"-"`

	// Selected is the lab limited to what the plan runs (Options.Only,
	// Options.Check): its workloads, rxe devices, captures and impairments,
	// and the hosts they use with their jump hosts, in file order. It is
	// the lab itself when nothing limits it.
	Selected *lab.Lab `json:"-"`
	// Students are the students of a class lab and what of the plan is
	// theirs (students.go); nil when the lab is no class.
	Students []*Student `json:"-"`
	// Workloads, Captures and Impairs are those of Selected, in its order,
	// with their steps and the edges the run follows between them
	// (walk.go).
	Workloads []*WorkloadPlan `json:"-"`
	Captures  []*WindowPlan   `json:"-"`
	Impairs   []*WindowPlan   `json:"-"`

	byID  map[string]*Step
	byKey map[stepKey][]string
}

// stepKey finds steps by kind, host and subject.
type stepKey struct {
	action        Action
	host, subject string
}

// IDs are the IDs of the steps of these kinds about subject on host (the
// host's own steps when subject is ""), or, when host is "", of every step
// of these kinds: what the run's events about them name.
func (p *Plan) IDs(host, subject string, kinds ...Action) []string {
	var ids []string
	for _, k := range kinds {
		if host != "" {
			ids = append(ids, p.byKey[stepKey{k, host, subject}]...)
			continue
		}
		for _, s := range p.Steps {
			if s.Action == k {
				ids = append(ids, s.ID)
			}
		}
	}
	return ids
}

// Agents are the hosts a run opens an agent on, in file order: every
// planned host but those that are only jump hosts.
func (p *Plan) Agents() []*HostPlan {
	var out []*HostPlan
	for _, h := range p.Hosts {
		if !h.JumpOnly {
			out = append(out, h)
		}
	}
	return out
}

// Agent reports whether the run opens an agent on h: a planned host that
// is not only a jump host.
func (p *Plan) Agent(h *lab.Host) bool {
	for _, x := range p.Hosts {
		if x.Ref == h {
			return !x.JumpOnly
		}
	}
	return false
}

// SelectionError is an --only value that selects nothing or is ambiguous;
// its text names the value and what the lab has.
type SelectionError struct{ Err error }

func (e *SelectionError) Error() string { return e.Err.Error() }
func (e *SelectionError) Unwrap() error { return e.Err }

// Step returns the step with the given ID, or nil.
func (p *Plan) Step(id string) *Step { return p.byID[id] }

// StepID builds a step ID: host slug, kind, and the subject's slug if any.
func StepID(hostSlug string, k Action, subjectSlug string) string {
	if subjectSlug == "" {
		return hostSlug + "/" + string(k)
	}
	return hostSlug + "/" + string(k) + "/" + subjectSlug
}

type builder struct {
	o     Options
	err   error
	p     *Plan
	l     *lab.Lab
	steps []*Step
	hosts map[*lab.Host]*HostPlan
}

func (b *builder) add(s *Step) *Step {
	if b.p.byID[s.ID] != nil && b.err == nil {
		// Slugs are unique after lab.Load; a hand-built lab may break that.
		b.err = fmt.Errorf("plan: two steps with ID %s (two %ss with one slug?)", s.ID, s.Action)
	}
	b.p.byID[s.ID] = s
	b.steps = append(b.steps, s)
	b.hosts[s.HostRef].Steps = append(b.hosts[s.HostRef].Steps, s.ID)
	return s
}

func (s *Step) after(ids ...string) {
	for _, id := range ids {
		if id == "" || id == s.ID {
			continue
		}
		dup := false
		for _, d := range s.DependsOn {
			dup = dup || d == id
		}
		if !dup {
			s.DependsOn = append(s.DependsOn, id)
		}
	}
}

// Options change what New plans; the zero value plans what the lab says.
type Options struct {
	// Provision plans a provision step on every working host (rlab run
	// --provision); without it, only on the hosts whose lab says
	// provision = true.
	Provision bool
	// NoProvision plans none, whatever the lab says (a student check
	// changes no packages).
	NoProvision bool
	// Only limits the plan (rlab run/plan --only): each value is a
	// workload name (all its instances), an instance address
	// (`write_bw["ana"]`) or a student's for_each key (`ana`: that
	// student's workloads, rxe devices and captures); only the hosts these
	// use are planned. A value that selects nothing is a *SelectionError.
	Only []string
	// Check plans a student check (`rlab check --validate`): only the
	// workloads with expect blocks (all of them when none has one), no
	// captures.
	Check bool
	// Emulated names the hosts that are (or will boot as) emulated (TCG)
	// guests, with why: their RDMA workloads' steps say that the RC QP
	// timeout is raised, or why the tool cannot raise it
	// (kinds/qptimeout.go). The plan cannot know it of a host it has not
	// reached: the caller tells it (rlab plan and run: the local VMs when
	// KVM is not usable here); a run learns the rest from facts.
	Emulated map[string]string
}

// usedHosts are the hosts l's rxe devices, captures, impairments and
// workloads are on: the hosts a run connects an agent to. The jump hosts
// they go through are only dialled through.
func usedHosts(l *lab.Lab) map[*lab.Host]bool {
	used := map[*lab.Host]bool{}
	for _, r := range l.Devices {
		used[r.Host] = true
	}
	for _, c := range l.Captures {
		used[c.Host] = true
	}
	for _, im := range l.Impairs {
		used[im.Host] = true
	}
	for _, w := range l.Workloads {
		for _, h := range w.Hosts() {
			if h != nil {
				used[h] = true
			}
		}
	}
	return used
}

// New computes the plan of a lab. The lab must have loaded without errors.
func New(l *lab.Lab) (*Plan, error) { return NewWith(l, Options{}) }

// NewWith is New with options.
func NewWith(whole *lab.Lab, o Options) (*Plan, error) {
	l, err := selectLab(whole, o.Only, o.Check)
	if err != nil {
		return nil, &SelectionError{err}
	}
	b := &builder{o: o, p: &Plan{Lab: l.Name, Check: o.Check, Selected: l, byID: map[string]*Step{}}, l: l, hosts: map[*lab.Host]*HostPlan{}}
	for _, h := range l.Hosts {
		if h == nil {
			return nil, fmt.Errorf("plan lab %q: nil host", l.Name)
		}
	}
	for _, w := range l.Workloads {
		for _, h := range w.Hosts() {
			if h == nil {
				return nil, fmt.Errorf("plan workload %q: a side has no host", w.Name)
			}
		}
	}
	// Which hosts work, and which only carry connections.
	used := usedHosts(l)
	jumps := map[*lab.Host]bool{}
	for h := range used {
		for j := h.JumpHost; j != nil && !jumps[j]; j = j.JumpHost {
			jumps[j] = true
		}
	}
	for _, h := range l.Hosts {
		if !used[h] && !jumps[h] {
			continue
		}
		hp := newHostPlan(h)
		hp.JumpOnly = !used[h]
		b.hosts[h] = hp
		b.p.Hosts = append(b.p.Hosts, hp)
	}
	if err := b.resolveJumps(); err != nil {
		return nil, err
	}

	// Per host: connect, ship, provision, preflight.
	need := map[*lab.Host]needs.Need{}
	for _, n := range needs.Of(l) {
		need[n.Host] = n
	}
	ready := map[*lab.Host]string{} // host -> preflight step ID
	for _, h := range l.Hosts {
		if b.hosts[h] == nil {
			continue
		}
		c := b.add(&Step{ID: StepID(h.Slug, Connect, ""), Action: Connect, Host: h.Name, HostRef: h, Description: connectText(h)})
		if h.JumpHost != nil {
			c.after(StepID(h.JumpHost.Slug, Connect, ""))
		}
		if !used[h] {
			continue
		}
		b.hosts[h].Need = need[h]
		s := b.add(&Step{ID: StepID(h.Slug, ShipAgent, ""), Action: ShipAgent, Host: h.Name, HostRef: h, Description: "ship the rlab agent (skipped when the host has this build cached) and start it"})
		s.after(c.ID)
		if !o.NoProvision && (o.Provision || h.Provision) {
			pv := b.add(&Step{ID: StepID(h.Slug, Provision, ""), Action: Provision, Host: h.Name, HostRef: h, Description: provisionText(need[h])})
			pv.after(s.ID)
			s = pv
		}
		pf := b.add(&Step{ID: StepID(h.Slug, Preflight, ""), Action: Preflight, Host: h.Name, HostRef: h, Description: preflightText(l, h)})
		pf.after(s.ID)
		ready[h] = pf.ID
	}

	// rxe devices.
	deviceStep := map[*lab.Device]string{}
	for _, r := range l.Devices {
		s := b.add(&Step{ID: StepID(r.Host.Slug, CreateDevice, r.Slug), Action: CreateDevice, Host: r.Host.Name, Subject: r.Name, HostRef: r.Host, Device: r,
			Description: r.Describe()})
		s.after(ready[r.Host])
		deviceStep[r] = s.ID
	}

	// Capture starts; which workloads each covers.
	type capInfo struct {
		start, stop *Step
		covers      []*lab.Workload
	}
	var caps []*capInfo
	for _, c := range l.Captures {
		s := b.add(&Step{ID: StepID(c.Host.Slug, StartCapture, c.Slug), Action: StartCapture, Host: c.Host.Name, Subject: c.Name, HostRef: c.Host, Capture: c, Description: captureText(c)})
		s.after(ready[c.Host])
		ci := &capInfo{start: s, covers: c.During}
		if len(c.During) == 0 {
			for _, w := range l.Workloads {
				for _, h := range w.Hosts() {
					if h == c.Host {
						ci.covers = append(ci.covers, w)
						break
					}
				}
			}
		}
		caps = append(caps, ci)
	}

	// Workloads, in file order; each waits for the previous workload on
	// each of its hosts.
	last := map[*lab.Host][]string{}     // host -> steps of its latest workload
	lastWave := map[*lab.Host]int{}      // host -> wave of its latest workload
	done := map[*lab.Workload][]string{} // workload -> its steps
	wave := map[*lab.Workload]int{}      // workload -> wave
	onHost := map[*lab.Host][]string{}   // host -> workload step IDs on it
	capsFor := map[*lab.Workload][]string{}
	for _, ci := range caps {
		for _, w := range ci.covers {
			capsFor[w] = append(capsFor[w], ci.start.ID)
		}
	}
	imps := b.impairStarts(ready, deviceStep) // impair.go
	for _, ii := range imps {
		for _, w := range ii.covers {
			capsFor[w] = append(capsFor[w], ii.start.ID)
		}
	}
	// A group runs as one: where its first workload is in file order, its
	// workloads wait for what came before on any of their hosts, not for
	// each other, and what comes after waits for all of them.
	groupOf := map[*lab.Workload]*lab.Group{}
	for _, g := range l.Groups {
		for _, w := range g.Workloads {
			groupOf[w] = g
		}
	}
	placed := map[*lab.Workload]bool{}
	for _, first := range l.Workloads {
		if placed[first] {
			continue
		}
		batch := []*lab.Workload{first}
		if g := groupOf[first]; g != nil {
			batch = batch[:0]
			for _, w := range l.Workloads { // file order, as a run reads it
				if groupOf[w] == g {
					batch = append(batch, w)
				}
			}
		}
		var hosts []*lab.Host
		var before []string
		wv := 1
		for _, w := range batch {
			placed[w] = true
			for _, h := range w.Hosts() {
				if !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
					before = append(before, last[h]...)
					wv = max(wv, lastWave[h]+1)
				}
			}
		}
		var batchSteps []string
		for _, w := range batch {
			wave[w] = wv
			done[w] = b.addWorkload(w, before, ready, deviceStep, capsFor[w], onHost)
			batchSteps = append(batchSteps, done[w]...)
		}
		for _, h := range hosts {
			last[h] = batchSteps
			lastWave[h] = wv
		}
	}

	// Capture stops.
	stopsOn := map[*lab.Host][]string{}
	for _, ci := range caps {
		c := ci.start.Capture
		s := b.add(&Step{ID: StepID(c.Host.Slug, StopCapture, c.Slug), Action: StopCapture, Host: c.Host.Name, Subject: c.Name, HostRef: c.Host, Capture: c,
			Description: fmt.Sprintf("stop capture %s", c.Name)})
		s.after(ci.start.ID)
		for _, w := range ci.covers {
			s.after(done[w]...)
		}
		ci.stop = s
		stopsOn[c.Host] = append(stopsOn[c.Host], s.ID)
	}
	b.impairStops(imps, done, stopsOn)

	// Fetch and teardown per working host.
	for _, h := range l.Hosts {
		if !used[h] {
			continue
		}
		f := b.add(&Step{ID: StepID(h.Slug, Fetch, ""), Action: Fetch, Host: h.Name, HostRef: h, Description: "fetch facts, logs and captures into the run folder"})
		f.after(ready[h])
		f.after(onHost[h]...)
		f.after(stopsOn[h]...)
		for _, r := range l.Devices {
			if r.Host == h {
				f.after(deviceStep[r])
			}
		}
		t := b.add(&Step{ID: StepID(h.Slug, Teardown, ""), Action: Teardown, Host: h.Name, HostRef: h, Description: teardownText(l, h)})
		t.after(f.ID)
	}

	if b.err != nil {
		return nil, b.err
	}
	if err := b.order(); err != nil {
		return nil, err
	}
	b.waves(wave)
	b.groups(wave)
	b.redact()
	b.p.VMCost = b.p.vmCost()
	b.p.Students = students(whole, l)
	if err := b.p.checkPhases(); err != nil {
		return nil, err
	}
	if err := b.p.walk(); err != nil {
		return nil, err
	}
	if err := b.p.checkTrialBytes(); err != nil {
		return nil, err
	}
	return b.p, nil
}

// addWorkload adds a workload's steps after before (the steps of the
// workloads it waits for), and returns them.
func (b *builder) addWorkload(w *lab.Workload, before []string, ready map[*lab.Host]string, deviceStep map[*lab.Device]string, caps []string, onHost map[*lab.Host][]string) []string {
	if w.Host != nil { // one command on one host (exec, a program on host)
		s := b.add(&Step{ID: StepID(w.Host.Slug, WorkloadRun, w.Slug), Action: WorkloadRun, Host: w.Host.Name, Subject: w.Name, HostRef: w.Host, Workload: w, Description: workloadText(w, "run", "")})
		s.after(ready[w.Host])
		s.after(before...)
		s.after(caps...)
		b.resolveTrials(w, nil, s, lab.Dial{})
		b.build(w, s)
		onHost[w.Host] = append(onHost[w.Host], s.ID)
		return []string{s.ID}
	}
	srv := b.add(&Step{ID: StepID(w.ServerHost.Slug, WorkloadServer, w.Slug), Action: WorkloadServer, Host: w.ServerHost.Name, Subject: w.Name, HostRef: w.ServerHost, Workload: w, Description: workloadText(w, "server", "")})
	srv.after(ready[w.ServerHost])
	if w.ServerDevice != nil {
		srv.after(deviceStep[w.ServerDevice])
	}
	srv.after(before...)
	srv.after(caps...)
	dial := b.l.ServerDial(w)
	if w.ServerDevice == nil && dial.Device != nil && deviceStep[dial.Device] != "" {
		srv.after(deviceStep[dial.Device]) // tcp dials that rxe's netdev
	}
	dialText := ""
	if w.ServerDevice == nil {
		dialText = dial.Text()
	}
	cli := b.add(&Step{ID: StepID(w.ClientHost.Slug, WorkloadClient, w.Slug), Action: WorkloadClient, Host: w.ClientHost.Name, Subject: w.Name, HostRef: w.ClientHost, Workload: w, Description: workloadText(w, "client", dialText)})
	if e := b.emulatedText(w); e != "" {
		srv.Description += "; " + e
		cli.Description += "; " + e
	}
	if w.ServerDevice == nil {
		cli.Dial = &dial
	}
	cli.after(ready[w.ClientHost])
	if w.ClientDevice != nil {
		cli.after(deviceStep[w.ClientDevice])
	}
	cli.after(srv.ID)
	b.resolveTrials(w, srv, cli, dial)
	b.build(w, srv)
	b.build(w, cli)
	onHost[w.ServerHost] = append(onHost[w.ServerHost], srv.ID, cli.ID)
	if w.ClientHost != w.ServerHost {
		onHost[w.ClientHost] = append(onHost[w.ClientHost], cli.ID)
	}
	return []string{srv.ID, cli.ID}
}

// build sets s.Build from w's program block.
func (b *builder) build(w *lab.Workload, s *Step) {
	if w.Program != nil && len(w.Program.Build) > 0 {
		s.Build = slices.Clone(w.Program.Build)
	}
}

// order sorts the steps topologically (stable: among ready steps, the one
// created first) and sets each step's level.
func (b *builder) order() error {
	idx := map[string]int{}
	for i, s := range b.steps {
		idx[s.ID] = i
	}
	indeg := make([]int, len(b.steps))
	next := make([][]int, len(b.steps))
	for i, s := range b.steps {
		for _, d := range s.DependsOn {
			j, ok := idx[d]
			if !ok {
				return fmt.Errorf("plan: step %s depends on unknown step %s", s.ID, d)
			}
			indeg[i]++
			next[j] = append(next[j], i)
		}
	}
	var ready []int
	for i := range b.steps {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	var out []*Step
	for len(ready) > 0 {
		sort.Ints(ready)
		i := ready[0]
		ready = ready[1:]
		s := b.steps[i]
		for _, d := range s.DependsOn {
			if lv := b.p.byID[d].Level + 1; lv > s.Level {
				s.Level = lv
			}
		}
		out = append(out, s)
		for _, j := range next[i] {
			indeg[j]--
			if indeg[j] == 0 {
				ready = append(ready, j)
			}
		}
	}
	if len(out) != len(b.steps) {
		return fmt.Errorf("plan: the step dependencies form a cycle")
	}
	b.p.Steps = out
	b.p.byKey = map[stepKey][]string{}
	for _, s := range out {
		if s.DependsOn == nil {
			s.DependsOn = []string{}
		}
		k := stepKey{s.Action, s.Host, s.Subject}
		b.p.byKey[k] = append(b.p.byKey[k], s.ID)
	}
	return nil
}

func (b *builder) waves(wave map[*lab.Workload]int) {
	byWave := map[int][]string{}
	max := 0
	for _, w := range b.l.Workloads {
		byWave[wave[w]] = append(byWave[wave[w]], w.Name)
		if wave[w] > max {
			max = wave[w]
		}
	}
	b.p.Waves = []Wave{}
	for i := 1; i <= max; i++ {
		b.p.Waves = append(b.p.Waves, Wave{Wave: i, Workloads: byWave[i]})
	}
}

func (b *builder) groups(wave map[*lab.Workload]int) {
	for _, g := range b.l.Groups {
		gp := GroupPlan{Name: g.Name, Workloads: []string{}, Shared: []string{}}
		count := map[*lab.Host]int{}
		for _, w := range b.l.Workloads { // file order, as the waves list them
			if !slices.Contains(g.Workloads, w) {
				continue
			}
			gp.Wave = wave[w]
			gp.Workloads = append(gp.Workloads, w.Name)
			for _, h := range w.Hosts() {
				count[h]++
			}
		}
		for _, h := range b.l.Hosts {
			if count[h] > 1 {
				gp.Shared = append(gp.Shared, h.Name)
			}
		}
		if len(gp.Workloads) > 0 {
			b.p.Groups = append(b.p.Groups, gp)
		}
	}
}

// redact replaces sensitive variable values in every text of the plan.
func (b *builder) redact() {
	if len(b.l.Sensitive) == 0 {
		return
	}
	// As written in every encoding: descriptions quote argv with %q.
	r := lab.Redactor(b.l.Sensitive)
	for _, s := range b.p.Steps {
		s.Description = r.Replace(s.Description)
		for i := range s.Trials {
			for j, a := range s.Trials[i].Argv {
				s.Trials[i].Argv[j] = r.Replace(a)
			}
		}
		for i, a := range s.Build {
			s.Build[i] = r.Replace(a)
		}
	}
	for _, h := range b.p.Hosts {
		h.Address, h.User, h.Jump = r.Replace(h.Address), r.Replace(h.User), r.Replace(h.Jump)
	}
}

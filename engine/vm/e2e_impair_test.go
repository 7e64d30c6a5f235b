package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/results"
)

// impairHoldLab is the lab of the impair-interrupt subtest (a netem on each
// end of the link during a TCP transfer far longer than the test waits).
const impairHoldLab = "engine/vm/testdata/impair/hold.hcl"

// exitInterrupted is rlab's exit status after a Ctrl-C (rlab run --help).
const exitInterrupted = 130

// writeImpairHold writes the hold lab with its hosts pointed at server and
// client (127.0.0.1:port each, the VMs' forwarded SSH ports), and returns
// its path.
func writeImpairHold(t *testing.T, root, server, client, key, knownHosts string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, impairHoldLab))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "hold.hcl")
	direct := map[string]string{"server": server, "client": client}
	if err := os.WriteFile(p, retarget(t, src, direct, nil, server, key, knownHosts), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRetargetImpairHold checks, without VMs, the lab the impair-interrupt
// subtest runs: it loads once retargeted, both hosts direct with the VMs'
// login, and both impairments are on eth1 during the one workload.
func TestRetargetImpairHold(t *testing.T) {
	p := writeImpairHold(t, "../..", "127.0.0.1:40001", "127.0.0.1:40002", "/k/id", "/k/kh")
	l, diags := lab.Load([]string{p}, lab.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	want := map[string]int{"server": 40001, "client": 40002}
	for _, h := range l.Hosts {
		if h.Address != "127.0.0.1" || h.Port != want[h.Name] || h.User != "root" || h.IdentityFile != "/k/id" || h.KnownHosts != "/k/kh" || h.Become || h.JumpHost != nil {
			t.Errorf("host %s: %s:%d user %q key %q known_hosts %q become %v jump %v", h.Name, h.Address, h.Port, h.User, h.IdentityFile, h.KnownHosts, h.Become, h.JumpHost != nil)
		}
	}
	if len(l.Hosts) != 2 || len(l.Workloads) != 1 || len(l.Impairs) != 2 || len(l.Devices) != 2 {
		t.Fatalf("%d hosts, %d workloads, %d impairs, %d rxe; want 2, 1, 2, 2", len(l.Hosts), len(l.Workloads), len(l.Impairs), len(l.Devices))
	}
	for _, im := range l.Impairs {
		if im.Netdev != "eth1" || len(im.During) != 1 {
			t.Errorf("impair %s: netdev %q during %d workloads, want eth1 during the one", im.Name, im.Netdev, len(im.During))
		}
	}
}

// testImpairInterrupt runs the hold lab on the examples' pair twice, ending
// it the two ways a run can end early, while both impairments are in force
// (tc shows rlab's netem on both VMs' eth1):
//   - sigint: Ctrl-C. rlab tears down and exits 130; the run directory is
//     complete (results.json says interrupted, state.json says every
//     impairment and rxe device undone) and the VMs have no netem and no rxe.
//   - sigkill: the server's agent is frozen (SIGSTOP), rlab's process group
//     is SIGKILLed, then the frozen agent too: a controller and a host agent
//     that both died without a word. The client's agent, seeing its
//     controller gone, removes its netem and rxe and ends on its own; the
//     server's are left (nobody alive knew of them), and `rlab down RUN`
//     removes them from state.json alone (exit 0), listing the client's as
//     already gone. A second `rlab down` undoes nothing and exits 0.
func testImpairInterrupt(ctx context.Context, t *testing.T, bin, root string, set *Set, khFile string) {
	labFile := writeImpairHold(t, root, set.VMs[0].Addr, set.VMs[1].Addr, set.VMs[0].IdentityFile, khFile)
	var gs []*guest // server, client
	for _, v := range set.VMs {
		c, err := v.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		gs = append(gs, &guest{name: v.Name, c: c})
	}
	for _, g := range gs {
		if q, l := leftOn(t, ctx, g); q != "" || l != "" {
			t.Fatalf("%s before the run: %s %s", g.name, q, l)
		}
	}

	t.Run("sigint", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		r := startHold(t, bin, labFile, out)
		r.waitImpaired(ctx, t, gs)
		t0 := time.Now()
		if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := r.wait(t, 2*time.Minute)
		t.Logf("rlab run ended %s after SIGINT: %v\nstdout:\n%s\nstderr:\n%s", time.Since(t0).Round(time.Millisecond), err, r.stdout.String(), r.stderr.String())
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Errorf("rlab run after SIGINT: %v, want exit %d", err, exitInterrupted)
		}
		if !strings.HasSuffix(strings.TrimSpace(r.stdout.String()), "run directory: "+out) {
			t.Errorf("the last line does not name the run directory:\n%s", r.stdout.String())
		}
		// Every artifact kept, and the run directory complete.
		for _, f := range []string{"state.json", "results.json", "summary.md", "events.jsonl", "plan.json", "report.html", "lab/hold.hcl", "hosts/server/facts.json", "hosts/client/facts.json"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("interrupted run: %v", err)
			}
		}
		run, err := results.ReadRun(out)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != results.RunInterrupted || run.Incomplete != "" {
			t.Errorf("results.json: status %q (want %q), incomplete %q", run.Status, results.RunInterrupted, run.Incomplete)
		}
		st := readHoldState(t, out)
		st.checkUndone(t, "after SIGINT")
		for _, e := range st.Effects {
			if e.Kind == "impair" && !strings.Contains(e.Detail, "; removed, root qdisc now ") {
				t.Errorf("impairment %s on %s: the journal does not say it was removed: %q", e.ID, e.Host, e.Detail)
			}
		}
		checkRXETeardown(t, out)
		for _, g := range gs {
			if q, l := leftOn(t, ctx, g); q != "" || l != "" {
				t.Errorf("%s after SIGINT: %s %s", g.name, q, l)
			}
		}
		if t.Failed() {
			logHostLogs(t, out)
		}
	})

	t.Run("sigkill", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		r := startHold(t, bin, labFile, out)
		r.waitImpaired(ctx, t, gs)
		before := readHoldState(t, out)
		pids := map[string]int{}
		for _, h := range before.Hosts {
			pids[h.Name] = h.AgentPID
		}
		server, client := gs[0], gs[1]
		spid := strconv.Itoa(pids["server"])
		if args := server.must(t, ctx, "ps", "-o", "args=", "-p", spid); pids["server"] == 0 || !strings.Contains(args, "rlab-agent") || pids["client"] == 0 {
			r.kill()
			t.Fatalf("state.json names agents %v; pid %s on the server runs %q", pids, spid, args)
		}
		// The server's agent can no longer act: it sees neither its
		// controller go nor anything else.
		server.must(t, ctx, "kill", "-STOP", spid)
		if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		err := r.wait(t, time.Minute)
		t.Logf("rlab run after SIGKILL of its process group: %v", err)
		server.must(t, ctx, "kill", "-KILL", spid)

		// The client's agent: its controller's SSH connection closed, so its
		// stdin did; it removes what it set up and ends.
		cpid := strconv.Itoa(pids["client"])
		var q, l string
		gone := false
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			q, l = leftOn(t, ctx, client)
			_, _, perr := client.run(ctx, 20*time.Second, "ps", "-p", cpid)
			if gone = perr != nil; q == "" && l == "" && gone {
				break
			}
		}
		t.Logf("client, %s after the SIGKILL: agent (pid %s) ended %v; netem left %q, rxe left %q", time.Since(t0).Round(100*time.Millisecond), cpid, gone, q, l)
		if q != "" || l != "" || !gone {
			t.Errorf("the client's agent did not clean up after losing its controller: agent ended %v, %s %s", gone, q, l)
		}
		// The server's, frozen and killed, did nothing: what is there is
		// for rlab down.
		if q, l := leftOn(t, ctx, server); q == "" || l == "" {
			t.Errorf("server after its agent was killed: netem %q rxe %q, want both still there (else down proves nothing)", q, l)
		}
		mid := readHoldState(t, out)
		for _, e := range mid.Effects {
			if e.Host == "server" && (e.Kind == "impair" || e.Kind == "rxe") && e.Undone {
				t.Errorf("state.json says %s %s on the server was undone, yet no one alive could have", e.Kind, e.ID)
			}
		}

		down := func(what string) string {
			cmd := rlabCommand(ctx, t, rlabLimit, bin, "down", out)
			cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
			b, err := cmd.CombinedOutput()
			t.Logf("rlab down (%s): %v\n%s", what, err, b)
			if err != nil {
				t.Errorf("rlab down (%s): %v, want exit 0", what, err)
			}
			if !strings.Contains(string(b), "run "+out+" is down") {
				t.Errorf("rlab down (%s) does not say the run is down", what)
			}
			return string(b)
		}
		// down removes the server's; the client's agent had removed its own.
		first := down("after the SIGKILL")
		for _, want := range []string{"undone server: impair server", "undone server: rxe rxe_eth1", "undone client: impair client (already gone)", "undone client: rxe rxe_eth1 (already gone)"} {
			if !strings.Contains("\n"+first, "\n"+want+"\n") {
				t.Errorf("rlab down does not list %q", want)
			}
		}
		after := readHoldState(t, out)
		after.checkUndone(t, "after rlab down")
		if after.TornDown == nil {
			t.Error("state.json: torn_down not set after rlab down")
		}
		for _, g := range gs {
			if q, l := leftOn(t, ctx, g); q != "" || l != "" {
				t.Errorf("%s after rlab down: %s %s", g.name, q, l)
			}
		}
		// Nothing left: every effect of the journal counted as already undone.
		if second := down("again"); strings.Contains("\n"+second, "\nundone ") || !strings.Contains("\n"+second, fmt.Sprintf("\n%d thing(s) already undone", len(after.Effects))) {
			t.Errorf("a second rlab down: want nothing undone and %d thing(s) already undone:\n%s", len(after.Effects), second)
		}
	})
}

// leftOn returns what of rlab's is left on g: a netem on eth1 (tc's line)
// and rxe_eth1 (rdma's line), each "" when there is none.
func leftOn(t *testing.T, ctx context.Context, g *guest) (qdisc, link string) {
	t.Helper()
	for _, l := range strings.Split(g.must(t, ctx, "tc", "qdisc", "show", "dev", "eth1"), "\n") {
		if strings.Contains(l, "netem") {
			qdisc = "qdisc: " + strings.TrimSpace(l)
		}
	}
	for _, l := range strings.Split(g.must(t, ctx, "rdma", "link", "show"), "\n") {
		if strings.Contains(l, "rxe_eth1") {
			link = "rdma link: " + strings.TrimSpace(l)
		}
	}
	return qdisc, link
}

// holdRun is a `rlab run` of the hold lab under way.
type holdRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan error
}

// startHold starts `rlab run` in a process group of its own (the test
// signals it, or the whole group, itself).
func startHold(t *testing.T, bin, labFile, out string) *holdRun {
	t.Helper()
	r := &holdRun{exited: make(chan error, 1)}
	r.cmd = exec.Command(bin, "run", "--out", out, labFile)
	r.cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(r.kill)
	return r
}

func (r *holdRun) kill() {
	if r.cmd.ProcessState == nil {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// wait waits for rlab to end, at most d (then kills it and fails).
func (r *holdRun) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.exited:
		return err
	case <-time.After(d):
		r.kill()
		<-r.exited
		t.Fatalf("rlab run did not end within %s\nstderr:\n%s", d, r.stderr.String())
		return nil
	}
}

// waitImpaired polls the guests until rlab's netem (handle 524c:) is on
// eth1 of each, failing if rlab ends first.
func (r *holdRun) waitImpaired(ctx context.Context, t *testing.T, gs []*guest) {
	t.Helper()
	t0 := time.Now()
	for deadline := t0.Add(5 * time.Minute); time.Now().Before(deadline); {
		select {
		case err := <-r.exited:
			t.Fatalf("rlab run ended (%v) before both impairments were in force\nstdout:\n%s\nstderr:\n%s", err, r.stdout.String(), r.stderr.String())
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
		n := 0
		var lines []string
		for _, g := range gs {
			out, _, _ := g.run(ctx, 20*time.Second, "tc", "qdisc", "show", "dev", "eth1")
			if strings.Contains(out, "netem 524c:") {
				n++
				lines = append(lines, g.name+": "+strings.TrimSpace(out))
			}
		}
		if n == len(gs) {
			t.Logf("impairments in force %s after the start: %s", time.Since(t0).Round(100*time.Millisecond), strings.Join(lines, "; "))
			return
		}
	}
	r.kill()
	t.Fatalf("rlab's netem never showed on both guests\nstderr:\n%s", r.stderr.String())
}

// holdState is what the test reads of state.json.
type holdState struct {
	Hosts []struct {
		Name     string
		AgentPID int `json:"agent_pid"`
	} `json:"hosts"`
	Effects []struct {
		Host, Kind, ID, Netdev, Detail string
		Created, Undone, Keep          bool
	} `json:"effects"`
	TornDown *time.Time `json:"torn_down"`
}

func readHoldState(t *testing.T, dir string) *holdState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st holdState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	return &st
}

// checkUndone: both impairments and both created rxe devices are journaled,
// and journaled undone.
func (st *holdState) checkUndone(t *testing.T, when string) {
	t.Helper()
	n := map[string]int{}
	for _, e := range st.Effects {
		if e.Kind != "impair" && (e.Kind != "rxe" || !e.Created) {
			continue
		}
		n[e.Kind]++
		if !e.Undone {
			t.Errorf("%s: state.json says %s %s on %s is not undone (%s)", when, e.Kind, e.ID, e.Host, e.Detail)
		}
	}
	if n["impair"] != 2 || n["rxe"] != 2 {
		t.Errorf("%s: state.json journals %d impairments and %d created rxe devices, want 2 and 2", when, n["impair"], n["rxe"])
	}
}

package provision_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/testbed"
	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// The netns bed's hosts share this machine's filesystem, so their agents
// (root through become) run this machine's real apt-get and dpkg-query on
// its real package database; each in its own network namespace, without a
// route to the Debian mirrors.

func TestMain(m *testing.M) {
	if p := os.Getenv("RLAB_PROVISION_HOLD_LOCK"); p != "" {
		// A real fcntl lock holder, as apt is: another process, since a
		// process's own locks never conflict with it.
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		if err := unix.FcntlFlock(f.Fd(), unix.F_SETLKW, &lk); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	builtin.Register() // the built-in tool families, as cmd/rlab registers them
	os.Exit(m.Run())
}

type hostRun struct {
	facts *proto.Facts
	res   provision.Result
}

// provisionBed gathers every host's facts over real SSH and runs plan on
// each host's open agent.
func provisionBed(t *testing.T, bed *testbed.Bed, users map[string]string, plan func(host string, f *proto.Facts) provision.HostPlan, o provision.Options) (map[string]*hostRun, []remote.Result) {
	t.Helper()
	var specs []remote.Spec
	for _, h := range bed.Hosts {
		u := bed.User
		if users[h.Name] != "" {
			u = users[h.Name]
		}
		specs = append(specs, remote.Spec{Become: true, Target: sshx.Target{Name: h.Name, Address: h.Addr, Port: 22, User: u, IdentityFiles: []string{bed.KeyFile}, NoJump: true}})
	}
	var mu sync.Mutex
	out := map[string]*hostRun{}
	res, _, err := remote.Gather(context.Background(), specs, remote.GatherOptions{
		SSH:    sshx.Options{KnownHosts: []string{bed.KnownHosts}, SSHConfig: "none", AgentSocket: "none", HandshakeTimeout: 10 * time.Second},
		Agents: remote.NewPackedAgents(dist.Packed),
		Then: func(ctx context.Context, host string, a *remote.Agent, f *proto.Facts) {
			r := provision.Apply(ctx, a.RPC(), plan(host, f), o)
			mu.Lock()
			out[host] = &hostRun{facts: f, res: r}
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, res
}

func installed(t *testing.T, pkg string) bool {
	out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return strings.HasSuffix(string(out), " installed")
}

func TestProvisionNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 2})
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("needs a Debian host: apt-get")
	}

	t.Run("nothing missing: no package manager, then dpkg-query says present", func(t *testing.T) {
		// (a) A lab whose tools are all installed here: the plan from the
		// real facts is empty (no call at all); asked for an installed
		// package anyway, the agent's real dpkg-query finds it present
		// and apt-get never runs.
		need := provision.Need{Host: &lab.Host{Name: "h0"}, Programs: []string{"rdma", "tcpdump"}}
		runs, _ := provisionBed(t, bed, nil, func(host string, f *proto.Facts) provision.HostPlan {
			if host == "h0" {
				return provision.PlanHost(need, f)
			}
			return provision.HostPlan{Host: host, Family: provision.Debian, Packages: []string{"tcpdump", "iproute2"}}
		}, provision.Options{})
		h0, h1 := runs["h0"], runs["h1"]
		if h0 == nil || h1 == nil {
			t.Fatalf("hosts provisioned: %v", runs)
		}
		if h0.res.Err != nil || len(h0.res.Installed) > 0 || h0.res.Manager != "" {
			t.Errorf("h0 (nothing missing): %+v", h0.res)
		}
		if h0.res.Family != provision.Debian {
			t.Errorf("h0 family %q from facts %+v", h0.res.Family, h0.facts.Platform)
		}
		if h1.res.Err != nil || len(h1.res.Installed) > 0 || !slices.Equal(h1.res.Present, []string{"tcpdump", "iproute2"}) {
			t.Errorf("h1 (all present): %+v", h1.res)
		}
		if strings.Contains(h1.res.Log, "apt-get") || !strings.Contains(h1.res.Log, "install ok installed") {
			t.Errorf("h1 log: want dpkg-query only:\n%s", h1.res.Log)
		}
	})

	t.Run("a package the repositories lack fails that host only", func(t *testing.T) {
		// (b) apt-get's real "Unable to locate package", after one
		// refresh of the index (which, without a route from the
		// namespace, fails as a real unreachable mirror does).
		const bogus = "rlab-no-such-package"
		runs, _ := provisionBed(t, bed, nil, func(host string, f *proto.Facts) provision.HostPlan {
			if host == "h0" {
				return provision.HostPlan{Host: host, Family: provision.Debian, Packages: []string{bogus}}
			}
			return provision.HostPlan{Host: host, Family: provision.Debian, Packages: []string{"tcpdump"}}
		}, provision.Options{LockWait: time.Minute, Timeout: 5 * time.Minute})
		h0, h1 := runs["h0"].res, runs["h1"].res
		if h0.Err == nil {
			t.Fatalf("h0 provisioned a package that does not exist: %+v", h0)
		}
		msg := h0.Err.Error()
		t.Logf("h0: %s", msg)
		var pe *provision.Error
		if !asError(h0.Err, &pe) || (pe.Code != proto.CodeNotFound && pe.Code != proto.CodeCommand) {
			t.Errorf("h0 error %T %v", h0.Err, h0.Err)
		}
		for _, w := range []string{`host "h0": provision:`, "apt-get", bogus} {
			if !strings.Contains(msg, w) {
				t.Errorf("h0 error lacks %q", w)
			}
		}
		if !strings.Contains(h0.Log, "E: Unable to locate package "+bogus) || !strings.Contains(h0.Log, "apt-get -q update") {
			t.Errorf("h0 log lacks apt's real stderr or the index refresh:\n%s", h0.Log)
		}
		if h1.Err != nil {
			t.Errorf("h1 did not go on: %v", h1.Err)
		}
	})

	t.Run("dpkg lock held: waited for, named, bounded", func(t *testing.T) {
		// (c) A real process holds /var/lib/dpkg/lock-frontend with an
		// fcntl lock, as apt does: the agent names it and gives up after
		// the lock wait, before running apt-get.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "RLAB_PROVISION_HOLD_LOCK=/var/lib/dpkg/lock-frontend")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { stdin.Close(); cmd.Wait() }()
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "locked" {
			t.Fatalf("lock holder: %q", line)
		}
		runs, _ := provisionBed(t, bed, nil, func(host string, f *proto.Facts) provision.HostPlan {
			return provision.HostPlan{Host: host, Family: provision.Debian, Packages: []string{"sl"}}
		}, provision.Options{LockWait: 3 * time.Second})
		stdin.Close()
		cmd.Wait()
		for _, h := range []string{"h0", "h1"} {
			r := runs[h].res
			var pe *provision.Error
			if !asError(r.Err, &pe) || pe.Code != proto.CodeTimeout {
				t.Fatalf("%s: want a lock timeout, got %v", h, r.Err)
			}
			want := fmt.Sprintf("(pid %d) held /var/lib/dpkg/lock-frontend", cmd.Process.Pid)
			if !strings.Contains(r.Err.Error(), want) {
				t.Errorf("%s: %q does not name the holder (%q)", h, r.Err, want)
			}
			if strings.Contains(r.Log, "apt-get") {
				t.Errorf("%s ran apt-get while the lock was held:\n%s", h, r.Log)
			}
		}
		if installed(t, "sl") {
			t.Error("sl got installed")
		}
	})

	t.Run("real install and removal of a tiny package", func(t *testing.T) {
		// (d) sl, fetched into apt's cache from this machine (the
		// namespaces have no route to the mirror), installed by the agent
		// through apt-get, found present the second time, then removed.
		if installed(t, "sl") {
			t.Skip("sl is installed here already")
		}
		if out, err := exec.Command("apt-get", "install", "-y", "-q", "--download-only", "sl").CombinedOutput(); err != nil {
			t.Skipf("cannot fetch sl into apt's cache: %v\n%s", err, out)
		}
		t.Cleanup(func() {
			if installed(t, "sl") {
				exec.Command("apt-get", "remove", "-y", "-q", "sl").Run()
			}
		})
		only := func(host string, f *proto.Facts) provision.HostPlan {
			if host == "h0" {
				return provision.HostPlan{Host: host, Family: provision.Debian, Packages: []string{"sl"}}
			}
			return provision.HostPlan{Host: host}
		}
		runs, _ := provisionBed(t, bed, nil, only, provision.Options{})
		r := runs["h0"].res
		if r.Err != nil || !slices.Equal(r.Installed, []string{"sl"}) || r.Manager != "apt-get" {
			t.Fatalf("install: %+v\n%s", r, r.Log)
		}
		if !installed(t, "sl") {
			t.Fatal("dpkg says sl is not installed")
		}
		if !strings.Contains(r.Log, "DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a") || !strings.Contains(r.Log, "Setting up sl") {
			t.Errorf("log:\n%s", r.Log)
		}
		// Idempotent: the second provision installs nothing.
		runs, _ = provisionBed(t, bed, nil, only, provision.Options{})
		if r := runs["h0"].res; r.Err != nil || len(r.Installed) != 0 || !slices.Equal(r.Present, []string{"sl"}) {
			t.Errorf("second provision: %+v", r)
		}
		// What this run installed, removed (rlab down --remove-provisioned).
		var rm provision.Result
		provisionBed(t, bed, nil, func(host string, f *proto.Facts) provision.HostPlan { return provision.HostPlan{Host: host} }, provision.Options{})
		_, res := provisionBedRemove(t, bed, "h0", []string{"sl"}, &rm)
		_ = res
		if rm.Err != nil || !slices.Equal(rm.Installed, []string{"sl"}) || installed(t, "sl") {
			t.Errorf("remove: %+v (installed now: %v)", rm, installed(t, "sl"))
		}
	})

	t.Run("sudo asking for a password fails before anything changes", func(t *testing.T) {
		runs, res := provisionBed(t, bed, map[string]string{"h0": bed.UserNoSudo}, func(host string, f *proto.Facts) provision.HostPlan {
			return provision.HostPlan{Host: host, Family: provision.Debian, Packages: []string{"tcpdump"}}
		}, provision.Options{})
		if runs["h0"] != nil {
			t.Errorf("h0 got an agent as root through a sudo that asks for a password")
		}
		var h0err error
		for _, r := range res {
			if r.Name == "h0" {
				h0err = r.Err
			}
		}
		if h0err == nil || !strings.Contains(h0err.Error(), "sudo") {
			t.Errorf("h0: %v", h0err)
		}
		if runs["h1"] == nil || runs["h1"].res.Err != nil {
			t.Errorf("h1 did not go on: %+v", runs["h1"])
		}
	})
}

func provisionBedRemove(t *testing.T, bed *testbed.Bed, host string, pkgs []string, out *provision.Result) (map[string]*hostRun, []remote.Result) {
	var mu sync.Mutex
	var specs []remote.Spec
	for _, h := range bed.Hosts {
		if h.Name == host {
			specs = append(specs, remote.Spec{Become: true, Target: sshx.Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true}})
		}
	}
	res, _, err := remote.Gather(context.Background(), specs, remote.GatherOptions{
		SSH:    sshx.Options{KnownHosts: []string{bed.KnownHosts}, SSHConfig: "none", AgentSocket: "none", HandshakeTimeout: 10 * time.Second},
		Agents: remote.NewPackedAgents(dist.Packed),
		Then: func(ctx context.Context, h string, a *remote.Agent, f *proto.Facts) {
			r := provision.Remove(ctx, a.RPC(), h, provision.Debian, pkgs, provision.Options{})
			mu.Lock()
			*out = r
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return nil, res
}

func asError(err error, target **provision.Error) bool {
	for err != nil {
		if e, ok := err.(*provision.Error); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// Package testbed brings up lab hosts for integration tests: network
// namespaces on this machine, each running its own OpenSSH sshd, one of them
// optionally a bastion that is the only way to reach a second subnet, and
// behind it optionally a second bastion, the only way to a third. It
// drives testdata/testbed/netns.sh and tears everything down when the test
// ends. Tests using it skip unless RLAB_NETNS=1 and they run as root.
//
// Typical use:
//
//	bed := testbed.Start(t, testbed.Options{Hosts: 2, BehindBastion: 1})
//	for _, h := range bed.Hosts { ... h.Addr, bed.User, bed.KeyFile, bed.KnownHosts ... }
//
// It must not import anything from engine/ but the standard library: every
// package's tests may use it (internal/archtest checks it).
package testbed

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Options size a bed.
type Options struct {
	Hosts         int // hosts on the directly reachable subnet
	BehindBastion int // hosts reachable only through the bastion (adds the bastion)
	// BehindBastion2 hosts are reachable only through bastion2, itself
	// reachable only from the bastion's subnet (adds both bastions): a
	// two-hop jump chain.
	BehindBastion2 int
	// MaxStartups for every sshd, bastions included; "" raises it
	// (200:30:400) for fan-out; "10:30:100" is sshd's default, to test
	// handshake pacing.
	MaxStartups string
	// LogLevel of every sshd (its log is DIR/NAME/sshd.log); "" is ERROR.
	// "INFO" logs each accepted login, which Logins counts.
	LogLevel string
}

// Host is one lab host of the bed.
type Host struct {
	Name   string // h0.., "bastion", b0.., "bastion2", c0..
	NS     string // network namespace
	Addr   string // IPv4 address; port 22
	Behind bool   // only reachable through the bastion (and bastion2 for c0..)
	// Via lists the bastions to go through, the first one reached
	// directly: none, [bastion], or [bastion, bastion2].
	Via []*Host
}

// Bed is a running test bed.
type Bed struct {
	Dir        string  // state: keys, configs, hosts.tsv
	Hosts      []*Host // direct hosts first, then those behind the bastion, then behind bastion2
	Bastion    *Host   // nil without BehindBastion or BehindBastion2
	Bastion2   *Host   // nil without BehindBastion2; reachable only through Bastion
	User       string  // login user with passwordless sudo (become works)
	UserNoSudo string  // login user whose sudo asks for a password
	KeyFile    string  // private key authorized for both users
	KnownHosts string  // known_hosts holding every host's key, bastion included
	Home       string  // the login user's home, shared by all hosts (as NFS)
	script     string
	lock       *os.File
	idx        int
}

// Script is the path of netns.sh (found from this source file, so tests of
// any package can use it).
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "testbed", "netns.sh")
}

// Enabled reports whether the netns bed can be used here, and why not.
func Enabled() (bool, string) {
	if os.Getenv("RLAB_NETNS") != "1" {
		return false, "set RLAB_NETNS=1 to run tests on network-namespace sshd hosts (root)"
	}
	if os.Geteuid() != 0 {
		return false, "the netns test bed needs root"
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		return false, "the netns test bed needs openssh-server (testdata/deps.sh)"
	}
	return true, ""
}

// Start brings a bed up (or skips the test) and tears it down at cleanup.
func Start(t testing.TB, o Options) *Bed {
	t.Helper()
	if ok, why := Enabled(); !ok {
		t.Skip(why)
	}
	b, err := Up(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Down)
	return b
}

// Up brings a bed up in dir (for benchmarks; tests use Start). Call Down.
func Up(dir string, o Options) (*Bed, error) {
	if err := os.MkdirAll("/var/lib/rlab-testbed", 0o755); err != nil {
		return nil, err
	}
	b := &Bed{Dir: dir, script: Script(), User: "rlabbed", UserNoSudo: "rlabnopw",
		KeyFile: filepath.Join(dir, "id_ed25519"), KnownHosts: filepath.Join(dir, "known_hosts"),
		Home: "/var/lib/rlab-testbed/home/rlabbed"}
	// Take a free bed index so concurrent beds (other packages' tests) get
	// their own subnets and link names.
	idx := -1
	for i := 0; i < 50; i++ {
		f, err := os.OpenFile(fmt.Sprintf("/var/lib/rlab-testbed/bed-%d.lock", i), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			idx, b.lock, b.idx = i, f, i
			break
		}
		f.Close()
	}
	if idx < 0 {
		return nil, fmt.Errorf("testbed: all 50 bed slots are taken")
	}
	// A bed left over by a crashed test in this slot: remove its links.
	exec.Command("ip", "link", "del", fmt.Sprintf("rb%da", idx)).Run()
	exec.Command("ip", "link", "del", fmt.Sprintf("rb%db", idx)).Run()
	exec.Command("ip", "link", "del", fmt.Sprintf("rb%dc", idx)).Run()
	for _, ns := range leftoverNS(idx) {
		exec.Command("ip", "netns", "del", ns).Run()
	}
	args := []string{"up", dir, fmt.Sprint(idx), fmt.Sprint(o.Hosts), fmt.Sprint(o.BehindBastion)}
	if o.MaxStartups != "" || o.BehindBastion2 > 0 {
		ms := o.MaxStartups
		if ms == "" {
			ms = "200:30:400"
		}
		args = append(args, ms)
	}
	if o.BehindBastion2 > 0 {
		args = append(args, fmt.Sprint(o.BehindBastion2))
	}
	cmd := exec.Command(b.script, args...)
	cmd.Env = os.Environ()
	if o.LogLevel != "" {
		cmd.Env = append(cmd.Env, "RLAB_TESTBED_LOGLEVEL="+o.LogLevel)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Down()
		return nil, fmt.Errorf("testbed up: %v: %s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "hosts.tsv"))
	if err != nil {
		b.Down()
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	side := map[*Host]string{}
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 4 {
			continue
		}
		h := &Host{Name: p[0], NS: p[1], Addr: p[2], Behind: p[3] == "b" || p[3] == "c"}
		side[h] = p[3]
		switch p[3] {
		case "bastion":
			b.Bastion = h
			continue
		case "bastion2":
			b.Bastion2 = h
			continue
		}
		b.Hosts = append(b.Hosts, h)
	}
	if err := sc.Err(); err != nil {
		b.Down()
		return nil, err
	}
	if b.Bastion2 != nil {
		b.Bastion2.Via = []*Host{b.Bastion}
	}
	for _, h := range b.Hosts {
		switch side[h] {
		case "b":
			h.Via = []*Host{b.Bastion}
		case "c":
			h.Via = []*Host{b.Bastion, b.Bastion2}
		}
	}
	return b, nil
}

func leftoverNS(idx int) []string {
	out, _ := exec.Command("ip", "netns", "list").Output()
	var ns []string
	prefix := fmt.Sprintf("rb%d-", idx)
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			ns = append(ns, f[0])
		}
	}
	return ns
}

// Down stops every sshd and removes the namespaces and links.
func (b *Bed) Down() {
	exec.Command(b.script, "down", b.Dir).Run()
	if b.lock != nil {
		b.lock.Close()
		b.lock = nil
	}
}

// Host returns the host with that name, or nil.
func (b *Bed) Host(name string) *Host {
	for _, h := range b.Hosts {
		if h.Name == name {
			return h
		}
	}
	for _, bh := range []*Host{b.Bastion, b.Bastion2} {
		if bh != nil && bh.Name == name {
			return bh
		}
	}
	return nil
}

// Logins counts the logins a host's sshd accepted so far ("Accepted
// publickey" in its log; the bed needs Options.LogLevel "INFO").
func (b *Bed) Logins(t testing.TB, h *Host) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(b.Dir, h.Name, "sshd.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("testbed: sshd log of %s: %v", h.Name, err)
	}
	return strings.Count(string(log), "Accepted publickey for ")
}

// Throttle limits the traffic towards a host to rate (a tc rate such as
// "2mbit") with a token bucket on its bridge-side veth, so a transfer to it
// lasts long enough to be interrupted. Lifted by the returned func, and
// at cleanup.
func (b *Bed) Throttle(t testing.TB, h *Host, rate string) (lift func()) {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(b.Dir, h.Name, "veth"))
	if err != nil {
		t.Fatalf("testbed: veth of %s: %v", h.Name, err)
	}
	dev := strings.TrimSpace(string(v))
	if out, err := exec.Command("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", "32kb", "latency", "1s").CombinedOutput(); err != nil {
		t.Fatalf("testbed: throttle %s (%s) to %s: %v: %s", h.Name, dev, rate, err, out)
	}
	var once sync.Once
	lift = func() { once.Do(func() { exec.Command("tc", "qdisc", "del", "dev", dev, "root").Run() }) }
	t.Cleanup(lift)
	return lift
}

// KillSessions kills (SIGKILL) every process of a host but its listening
// sshd: each SSH connection to it drops at once, as when the sshd child
// serving a session dies; the host still accepts new logins.
func (b *Bed) KillSessions(t testing.TB, h *Host) int {
	t.Helper()
	listener := b.pid(t, h)
	out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
	if err != nil {
		t.Fatalf("testbed: pids of %s: %v", h.Name, err)
	}
	n := 0
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid != listener {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// Pids lists the processes running in a host's network namespace (its
// sshd, sessions, agents), with their command lines.
func (b *Bed) Pids(t testing.TB, h *Host) map[int]string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
	if err != nil {
		t.Fatalf("testbed: pids of %s: %v", h.Name, err)
	}
	m := map[int]string{}
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			m[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return m
}

func (b *Bed) run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(b.script, args...).CombinedOutput(); err != nil {
		t.Fatalf("testbed %s: %v: %s", args[0], err, out)
	}
}

// StopSSHD kills a host's sshd: connections to it are refused.
func (b *Bed) StopSSHD(t testing.TB, h *Host) { b.run(t, "stop-sshd", b.Dir, h.Name) }

// StartSSHD (re)starts a host's sshd with its current settings.
func (b *Bed) StartSSHD(t testing.TB, h *Host) { b.run(t, "start-sshd", b.Dir, h.Name) }

// Freeze stops a host's sshd with SIGSTOP: TCP connects (the kernel
// accepts), but it never speaks: a silent host. Thawed at cleanup.
func (b *Bed) Freeze(t testing.TB, h *Host) {
	t.Helper()
	pid := b.pid(t, h)
	syscall.Kill(pid, syscall.SIGSTOP)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
}

func (b *Bed) pid(t testing.TB, h *Host) int {
	t.Helper()
	s, err := os.ReadFile(filepath.Join(b.Dir, h.Name, "sshd.pid"))
	if err != nil {
		t.Fatalf("testbed: sshd of %s: %v", h.Name, err)
	}
	var pid int
	fmt.Sscan(string(s), &pid)
	return pid
}

// PrivateHome gives a host its own home folder for the login user (instead
// of the shared one), holding files (name -> content; e.g. ".bashrc" that
// prints to stdout), and restarts its sshd.
func (b *Bed) PrivateHome(t testing.TB, h *Host, files map[string]string) string {
	t.Helper()
	home := filepath.Join(b.Dir, h.Name, "private-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exec.Command("chown", "-R", b.User+":"+b.User, home).Run()
	b.StartSSHD(t, h)
	return home
}

// FullDisk gives a host a tiny tmpfs as the login user's home, so writing
// anything sizeable there fails with ENOSPC, and restarts its sshd.
func (b *Bed) FullDisk(t testing.TB, h *Host, kb int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.Dir, h.Name, "disk-kb"), []byte(fmt.Sprint(kb)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.StartSSHD(t, h)
}

// FreezeHost stops every process of a host (its sshd, the sessions it
// forked, an agent) with SIGSTOP, as a hung machine or a dead link looks
// from outside: connections stay open and nothing answers. Thawed at
// cleanup.
func (b *Bed) FreezeHost(t testing.TB, h *Host) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
	if err != nil {
		t.Fatalf("testbed: pids of %s: %v", h.Name, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			syscall.Kill(pid, syscall.SIGSTOP)
			pids = append(pids, pid)
		}
	}
	t.Cleanup(func() {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGCONT)
		}
	})
}

// ForceCommand makes a host's sshd run script (a bash script) for every
// session instead of what the client asked, which it finds in
// $SSH_ORIGINAL_COMMAND ("internal-sftp" for the SFTP subsystem): a
// hostile or broken host that stalls, or streams, at chosen commands. The
// script is kept where the login user can run it; the sshd is restarted.
func (b *Bed) ForceCommand(t testing.TB, h *Host, script string) {
	t.Helper()
	idx, err := os.ReadFile(filepath.Join(b.Dir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	dir := "/var/lib/rlab-testbed/force"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("rb%s-%s.sh", strings.TrimSpace(string(idx)), h.Name))
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	conf := filepath.Join(b.Dir, h.Name, "sshd_config")
	f, err := os.OpenFile(conf, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "ForceCommand %s\n", p)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	b.StartSSHD(t, h)
}

// Blackhole takes a host's bridge-side veth down: from then on nothing
// passes between the host and anyone, the controller included, and
// neither end is told (no RST, no FIN), as when the controller's laptop
// lid closes or its VPN drops. Its SSH sessions stay open on the host.
// Restored by the returned func, and at cleanup.
func (b *Bed) Blackhole(t testing.TB, h *Host) (restore func()) {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(b.Dir, h.Name, "veth"))
	if err != nil {
		t.Fatalf("testbed: veth of %s: %v", h.Name, err)
	}
	dev := strings.TrimSpace(string(v))
	if out, err := exec.Command("ip", "link", "set", dev, "down").CombinedOutput(); err != nil {
		t.Fatalf("testbed: blackhole %s (%s): %v: %s", h.Name, dev, err, out)
	}
	var once sync.Once
	restore = func() { once.Do(func() { exec.Command("ip", "link", "set", dev, "up").Run() }) }
	t.Cleanup(restore)
	return restore
}

// SudoRule adds rule, one sudoers line, until the test ends (checked with
// visudo first). The bed's users have NOPASSWD: ALL (User) and a sudo that
// asks for a password (UserNoSudo): a rule for the agent alone is tested
// by giving it to UserNoSudo. The file sorts after the bed's own, so its
// rule is the last match for what it names, and wins.
func (b *Bed) SudoRule(t testing.TB, rule string) {
	t.Helper()
	tmp := filepath.Join(b.Dir, "sudoers-rule")
	if err := os.WriteFile(tmp, []byte(rule+"\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("visudo", "-c", "-f", tmp).CombinedOutput(); err != nil {
		t.Fatalf("sudoers rule %q: visudo: %v: %s", rule, err, out)
	}
	f := fmt.Sprintf("/etc/sudoers.d/rlab-testbed-rule-%d", b.idx)
	if err := os.WriteFile(f, []byte(rule+"\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f) })
}

// UID returns the uid and gid of one of the bed's users.
func UID(t testing.TB, user string) (int, int) {
	t.Helper()
	out, err := exec.Command("id", "-u", user).Output()
	if err != nil {
		t.Fatalf("id -u %s: %v", user, err)
	}
	gout, err := exec.Command("id", "-g", user).Output()
	if err != nil {
		t.Fatalf("id -g %s: %v", user, err)
	}
	var uid, gid int
	fmt.Sscan(string(out), &uid)
	fmt.Sscan(string(gout), &gid)
	return uid, gid
}

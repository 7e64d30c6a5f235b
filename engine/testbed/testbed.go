// Package testbed brings up lab hosts for integration tests: network
// namespaces on this machine, each running its own OpenSSH sshd, one of them
// optionally a bastion that is the only way to reach a second subnet. It
// drives testdata/testbed/netns.sh and tears everything down when the test
// ends. Tests using it skip unless RLAB_NETNS=1 and they run as root.
//
// Typical use:
//
//	bed := testbed.Start(t, testbed.Options{Hosts: 2, BehindBastion: 1})
//	for _, h := range bed.Hosts { ... h.Addr, bed.User, bed.KeyFile, bed.KnownHosts ... }
//
// It must not import anything from engine/ but the standard library: every
// package's tests may use it.
package testbed

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// Options size a bed.
type Options struct {
	Hosts         int // hosts on the directly reachable subnet
	BehindBastion int // hosts reachable only through the bastion (adds the bastion)
	// MaxStartups for every sshd; "" raises it (200:30:400) for fan-out;
	// "10:30:100" is sshd's default, to test handshake pacing.
	MaxStartups string
}

// Host is one lab host of the bed.
type Host struct {
	Name   string // h0.., "bastion", b0..
	NS     string // network namespace
	Addr   string // IPv4 address; port 22
	Behind bool   // only reachable through the bastion
}

// Bed is a running test bed.
type Bed struct {
	Dir        string  // state: keys, configs, hosts.tsv
	Hosts      []*Host // direct hosts first, then those behind the bastion
	Bastion    *Host   // nil without BehindBastion
	User       string  // login user with passwordless sudo (become works)
	UserNoSudo string  // login user whose sudo asks for a password
	KeyFile    string  // private key authorized for both users
	KnownHosts string  // known_hosts holding every host's key, bastion included
	Home       string  // the login user's home, shared by all hosts (as NFS)
	script     string
	lock       *os.File
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
			idx, b.lock = i, f
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
	for _, ns := range leftoverNS(idx) {
		exec.Command("ip", "netns", "del", ns).Run()
	}
	args := []string{"up", dir, fmt.Sprint(idx), fmt.Sprint(o.Hosts), fmt.Sprint(o.BehindBastion)}
	if o.MaxStartups != "" {
		args = append(args, o.MaxStartups)
	}
	if out, err := exec.Command(b.script, args...).CombinedOutput(); err != nil {
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
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 4 {
			continue
		}
		h := &Host{Name: p[0], NS: p[1], Addr: p[2], Behind: p[3] == "b"}
		if p[3] == "bastion" {
			b.Bastion = h
			continue
		}
		b.Hosts = append(b.Hosts, h)
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
	if b.Bastion != nil && b.Bastion.Name == name {
		return b.Bastion
	}
	return nil
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

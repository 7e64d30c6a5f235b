package sshx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// Many logins to one sshd left at its default MaxStartups (10:30:100) at
// once: the per-destination handshake cap and the retry keep every one
// from being dropped.
func TestMaxStartupsNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1, MaxStartups: "10:30:100"})
	o := Options{KnownHosts: []string{bed.KnownHosts}, HandshakeTimeout: 30 * time.Second}
	if os.Getenv("RLAB_SSHX_NOCAP") == "1" { // shows the test can fail
		o.MaxHandshakes, o.Retries = 1000, -1
	}
	d := newDialer(t, o)
	h := bed.Hosts[0]
	const n = 60
	var wg sync.WaitGroup
	errs := make([]error, n)
	clients := make([]*Client, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			clients[i], errs[i] = d.Dial(context.Background(), Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true})
		}(i)
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("login %d: %v", i, err)
		} else {
			clients[i].Close()
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d logins failed", failed, n)
	}
}

// A host that stops answering (hung, or the link dropped) is noticed by
// the keepalive, which closes the connection instead of hanging.
func TestKeepaliveNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	d := newDialer(t, Options{KnownHosts: []string{bed.KnownHosts}, KeepaliveInterval: 200 * time.Millisecond, KeepaliveTimeout: time.Second})
	h := bed.Hosts[0]
	c, err := d.Dial(context.Background(), Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Run one command first: sshd forks the connection's post-auth process
	// after the handshake returns, and a freeze that lists the host's
	// processes before that fork would miss it (seen once on a loaded CI run).
	if s, err := c.NewSession(); err != nil {
		t.Fatal(err)
	} else if err := s.Run("true"); err != nil {
		t.Fatal(err)
	}
	bed.FreezeHost(t, h)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("connection to a frozen host still open after a minute: keepalive did not close it")
	}
}

// Hosts behind one bastion share a single authenticated connection to it
// (direct-tcpip channels), however many of them are dialed at once.
func TestBastionSharedNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{BehindBastion: 4})
	d := newDialer(t, Options{KnownHosts: []string{bed.KnownHosts}, HandshakeTimeout: 30 * time.Second})
	jump := &Target{Name: "bastion", Address: bed.Bastion.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true}
	var wg sync.WaitGroup
	for _, h := range bed.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.Dial(context.Background(), Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, Jump: jump})
			if err != nil {
				t.Errorf("%s: %v", h.Name, err)
				return
			}
			s, err := c.NewSession()
			if err == nil {
				out, _ := s.Output("hostname -I")
				if !strings.Contains(string(out), h.Addr) {
					t.Errorf("%s answered from %q", h.Name, out)
				}
				s.Close()
			}
			t.Cleanup(func() { c.Close() })
		}()
	}
	wg.Wait()
	out, err := exec.Command("ip", "netns", "exec", bed.Bastion.NS, "ss", "-Htn", "state", "established", "( sport = :22 )").Output()
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || lines[0] == "" {
		t.Errorf("bastion has these SSH connections, want exactly 1:\n%s", out)
	}
}

// TestHostCertificateNetns: a stock OpenSSH sshd with a HostCertificate
// (signed with ssh-keygen -s) offers both its plain key and the
// certificate; with its @cert-authority in known_hosts rlab negotiates the
// certificate and logs in, as OpenSSH's client does with the same file (the
// old code asked for the plain key first and reported HOST KEY CHANGED).
// With the certificate gone from sshd, the host is refused naming the
// authority.
func TestHostCertificateNetns(t *testing.T) {
	bed := testbed.Start(t, testbed.Options{Hosts: 1})
	h := bed.Hosts[0]
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rlab-test-ca", "-f", ca).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	hostKey := filepath.Join(bed.Dir, h.Name, "ssh_host_ed25519_key.pub")
	if out, err := exec.Command("ssh-keygen", "-q", "-s", ca, "-h", "-I", h.Name, "-n", h.Addr, "-V", "-1h:+1h", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -s: %v: %s", err, out)
	}
	conf := filepath.Join(bed.Dir, h.Name, "sshd_config")
	plain, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	certConf := string(plain) + "HostCertificate " + strings.TrimSuffix(hostKey, ".pub") + "-cert.pub\n"
	if err := os.WriteFile(conf, []byte(certConf), 0o644); err != nil {
		t.Fatal(err)
	}
	bed.StartSSHD(t, h)
	caPub, err := os.ReadFile(ca + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte("@cert-authority "+h.Addr+" "+string(caPub)), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: []string{bed.KeyFile}, NoJump: true}
	d := newDialer(t, Options{KnownHosts: []string{kh}, Retries: -1})
	c, err := d.Dial(context.Background(), tg)
	if err != nil {
		t.Fatalf("dial a host with a certificate from a trusted authority: %v", err)
	}
	if typ := c.HostKey.Type(); typ != "ssh-ed25519-cert-v01@openssh.com" {
		t.Errorf("negotiated %s, want the certificate", typ)
	}
	c.Close()
	// OpenSSH's own client agrees with the same known_hosts.
	ssh := exec.Command("ssh", "-F", "none", "-i", bed.KeyFile, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+kh, "-o", "GlobalKnownHostsFile=/dev/null",
		bed.User+"@"+h.Addr, "true")
	if out, err := ssh.CombinedOutput(); err != nil {
		t.Errorf("OpenSSH refused the same setup: %v: %s", err, out)
	}

	// The same host without its certificate: refused, naming the authority.
	if err := os.WriteFile(conf, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	bed.StartSSHD(t, h)
	d2 := newDialer(t, Options{KnownHosts: []string{kh}, Retries: -1})
	c, err = d2.Dial(context.Background(), tg)
	if err == nil {
		c.Close()
		t.Fatal("a host without a certificate passed on an @cert-authority line alone")
	}
	var nc *NotCertifiedError
	if !errors.As(err, &nc) || !strings.Contains(err.Error(), "not a host certificate") {
		t.Errorf("error %T %v, want a NotCertifiedError", err, err)
	}
}

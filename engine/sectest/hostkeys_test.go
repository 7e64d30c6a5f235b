package sectest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostCert signs key as a host certificate for principal with ca.
func hostCert(t *testing.T, ca, key ssh.Signer, principal string) ssh.Signer {
	t.Helper()
	c := &ssh.Certificate{
		Key: key.PublicKey(), CertType: ssh.HostCert, KeyId: "sectest",
		ValidPrincipals: []string{principal},
		ValidAfter:      uint64(time.Now().Add(-time.Hour).Unix()),
		ValidBefore:     uint64(time.Now().Add(time.Hour).Unix()),
	}
	if err := c.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewCertSigner(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func authorized(s ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s)))
}

// TestHostKeyPolicy: host keys are always verified against known_hosts.
// Unknown keys are refused unless --accept-new-host-keys (then recorded);
// a changed key is refused always, naming both fingerprints; @revoked keys
// and @revoked authorities are refused; @cert-authority is honoured; the
// known_hosts file is never rewritten by a refusal.
func TestHostKeyPolicy(t *testing.T) {
	other := sshtest.NewKey(t)
	ca := sshtest.NewKey(t)
	otherCA := sshtest.NewKey(t)
	tests := []struct {
		name      string
		acceptNew bool
		// setup may change the server's host key (before any dial) and
		// returns the known_hosts lines.
		setup    func(t *testing.T, s *sshtest.Server) []string
		wantType any      // the error's type; nil: the dial succeeds
		want     []string // substrings of the error ("$KEY" is the server's fingerprint, "$OTHER" the known one)
		recorded bool     // accept-new wrote the key
	}{
		{
			name:  "known key",
			setup: func(t *testing.T, s *sshtest.Server) []string { return []string{s.KnownHostsLine()} },
		},
		{
			name:     "unknown key refused",
			setup:    func(t *testing.T, s *sshtest.Server) []string { return nil },
			wantType: &sshx.UnknownHostKeyError{},
			want:     []string{"unknown host key", "$KEY", "--accept-new-host-keys"},
		},
		{
			name:      "unknown key recorded with accept-new",
			acceptNew: true,
			setup:     func(t *testing.T, s *sshtest.Server) []string { return nil },
			recorded:  true,
		},
		{
			name: "changed key refused naming both fingerprints",
			setup: func(t *testing.T, s *sshtest.Server) []string {
				return []string{knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, other.PublicKey())}
			},
			wantType: &sshx.ChangedHostKeyError{},
			want:     []string{"HOST KEY CHANGED", "$KEY", "$OTHER"},
		},
		{
			name:      "changed key refused even with accept-new",
			acceptNew: true,
			setup: func(t *testing.T, s *sshtest.Server) []string {
				return []string{knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, other.PublicKey())}
			},
			wantType: &sshx.ChangedHostKeyError{},
			want:     []string{"HOST KEY CHANGED", "$KEY", "$OTHER"},
		},
		{
			name:      "revoked key refused even with accept-new",
			acceptNew: true,
			setup: func(t *testing.T, s *sshtest.Server) []string {
				return []string{"@revoked * " + authorized(s.HostKey.PublicKey()), s.KnownHostsLine()}
			},
			wantType: &sshx.RevokedHostKeyError{},
			want:     []string{"@revoked", "$KEY"},
		},
		{
			name: "certificate from a trusted authority",
			setup: func(t *testing.T, s *sshtest.Server) []string {
				s.HostKey = hostCert(t, ca, s.HostKey, "127.0.0.1")
				return []string{"@cert-authority " + knownhosts.Normalize(s.Addr) + " " + authorized(ca.PublicKey())}
			},
		},
		{
			name: "certificate from another authority refused",
			setup: func(t *testing.T, s *sshtest.Server) []string {
				s.HostKey = hostCert(t, otherCA, s.HostKey, "127.0.0.1")
				return []string{"@cert-authority " + knownhosts.Normalize(s.Addr) + " " + authorized(ca.PublicKey())}
			},
			want: []string{"authorit"},
		},
		{
			name:      "certificate for another host refused",
			acceptNew: true,
			setup: func(t *testing.T, s *sshtest.Server) []string {
				s.HostKey = hostCert(t, ca, s.HostKey, "db.example.org")
				return []string{"@cert-authority " + knownhosts.Normalize(s.Addr) + " " + authorized(ca.PublicKey())}
			},
			want: []string{"principal"},
		},
		{
			name:      "certificate from a revoked authority refused",
			acceptNew: true,
			setup: func(t *testing.T, s *sshtest.Server) []string {
				s.HostKey = hostCert(t, ca, s.HostKey, "127.0.0.1")
				return []string{"@cert-authority " + knownhosts.Normalize(s.Addr) + " " + authorized(ca.PublicKey()), "@revoked " + knownhosts.Normalize(s.Addr) + " " + authorized(ca.PublicKey())}
			},
			want: []string{"revoked"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sshtest.Start(t, nil)
			lines := tc.setup(t, s)
			kh := sshtest.WriteKnownHosts(t, lines...)
			before, _ := os.ReadFile(kh)
			d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{kh}, AcceptNewHostKeys: tc.acceptNew, SSHConfig: "none", AgentSocket: "none", Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h := &host{name: "server", srv: s}
			c, err := d.Dial(ctx, target(h))
			after, _ := os.ReadFile(kh)
			if tc.want == nil && tc.wantType == nil {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				c.Close()
				if got := string(after) != string(before); got != tc.recorded {
					t.Errorf("known_hosts changed: %v, want %v\n%s", got, tc.recorded, after)
				}
				if tc.recorded && !strings.Contains(string(after), authorized(s.HostKey.PublicKey())) {
					t.Errorf("accept-new did not record the key:\n%s", after)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if tc.wantType != nil {
				target := tc.wantType
				switch target.(type) {
				case *sshx.UnknownHostKeyError:
					var e *sshx.UnknownHostKeyError
					if !errors.As(err, &e) {
						t.Errorf("error %T %v, want %T", err, err, target)
					}
				case *sshx.ChangedHostKeyError:
					var e *sshx.ChangedHostKeyError
					if !errors.As(err, &e) {
						t.Errorf("error %T %v, want %T", err, err, target)
					}
				case *sshx.RevokedHostKeyError:
					var e *sshx.RevokedHostKeyError
					if !errors.As(err, &e) {
						t.Errorf("error %T %v, want %T", err, err, target)
					}
				}
			}
			r := strings.NewReplacer("$KEY", ssh.FingerprintSHA256(s.HostKey.PublicKey()), "$OTHER", ssh.FingerprintSHA256(other.PublicKey()))
			for _, w := range tc.want {
				if w = r.Replace(w); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if string(after) != string(before) {
				t.Errorf("a refused dial changed known_hosts:\n%s", after)
			}
			if n := s.Execs.Load(); n != 0 {
				t.Errorf("%d commands ran on a refused host", n)
			}
		})
	}
}

// connectHost connects to h through run.SSHConnector (what rlab run and
// rlab down use) as the lab host l names it, with the user's options o.
func connectHost(t *testing.T, l *lab.Lab, o sshx.Options, vm bool) error {
	t.Helper()
	lh := l.Hosts[0]
	tgt := run.Target{Host: runstate.Host{Name: lh.Name, Slug: lh.Slug, Address: lh.Address, Port: lh.Port,
		User: lh.User, IdentityFile: lh.IdentityFile, KnownHosts: lh.KnownHosts, VM: vm}}
	if !vm { // a VM host is reached at the endpoint the VM engine gave
		hp, err := plan.HostOf(lh) // as a run's plan resolves it
		if err != nil {
			t.Fatal(err)
		}
		tgt.Plan = hp
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hst, err := connector(t, o).Connect(ctx, tgt, "sectest")
	if err == nil {
		hst.Close()
	}
	return err
}

// TestLabKnownHostsOnlyAddTrust: a lab's known_hosts is read, never
// written, and only vouches for hosts the user's own known_hosts has no
// entry for. With --accept-new-host-keys a new key goes to the user's file
// (--known-hosts, else ~/.ssh/known_hosts) and the file the lab named is
// left as it was, however it is named (an authorized_keys file, a path in
// a folder that does not exist); a key the user pinned wins over the one
// the lab lists (refused as changed, naming both); a local VM's generated
// known_hosts is the only file its host key is checked against. The
// attack this closes wrote a valid "restrict ssh-ed25519 ..." line into
// ~/.ssh/authorized_keys2 through a lab's known_hosts (with address
// "restrict", which the lab loader now refuses too: the last case).
func TestLabKnownHostsOnlyAddTrust(t *testing.T) {
	other := sshtest.NewKey(t)
	tests := []struct {
		name      string
		acceptNew bool
		vm        bool
		// user and lab are the lines of the user's and the lab's files
		// (nil: the file does not exist); $SRV is the server's line,
		// $OTHER a line for the server's address with another key.
		user, lab []string
		labPath   string // the lab's known_hosts, relative to a temp home ("" .ssh/authorized_keys2)
		want      []string
		recorded  bool // the user's file got the server's key
	}{
		{name: "accept-new writes to the user's file, not the lab's", acceptNew: true, user: nil, lab: []string{}, recorded: true},
		{name: "accept-new creates no folder for the lab", acceptNew: true, labPath: "new/dir/known_hosts", recorded: true},
		{name: "lab's file vouches where the user has no entry", lab: []string{"$SRV"}, user: []string{}},
		{name: "pinned key wins over the lab's", user: []string{"$OTHER"}, lab: []string{"$SRV"},
			want: []string{"HOST KEY CHANGED", "$KEY", "$OTHERFP", "lists the offered key"}},
		{name: "pinned key wins even with accept-new", acceptNew: true, user: []string{"$OTHER"}, lab: []string{"$SRV"},
			want: []string{"HOST KEY CHANGED", "$KEY", "$OTHERFP"}},
		{name: "a VM's own file decides for it", vm: true, acceptNew: true, user: []string{"$OTHER"}, lab: []string{"$SRV"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHost(t, "server", nil)
			repl := strings.NewReplacer("$SRV", h.srv.KnownHostsLine(),
				"$OTHER", knownhosts.Line([]string{knownhosts.Normalize(h.srv.Addr)}, other.PublicKey()))
			write := func(p string, lines []string) {
				if lines == nil {
					return
				}
				var b strings.Builder
				for _, l := range lines {
					b.WriteString(repl.Replace(l) + "\n")
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			home := t.TempDir()
			userKH := filepath.Join(home, ".ssh", "known_hosts")
			labPath := tc.labPath
			if labPath == "" {
				labPath = ".ssh/authorized_keys2"
			}
			labKH := filepath.Join(home, labPath)
			write(userKH, tc.user)
			write(labKH, tc.lab)
			before := snapshot(t, home)
			labBefore, _ := os.ReadFile(labKH)
			h.kh = labKH
			l := writeLab(t, "lab \"kh\" {}\n"+h.hcl(), lab.LoadOptions{})
			err := connectHost(t, l, sshx.Options{KnownHosts: []string{userKH}, AcceptNewHostKeys: tc.acceptNew}, tc.vm)
			if labAfter, _ := os.ReadFile(labKH); string(labAfter) != string(labBefore) {
				t.Errorf("the lab's known_hosts %s changed:\n%s", labKH, labAfter)
			}
			for p := range snapshot(t, home) {
				if !before[p] && p != userKH && p != filepath.Dir(userKH) {
					t.Errorf("new file %s", p)
				}
			}
			userAfter, _ := os.ReadFile(userKH)
			if got := strings.Contains(string(userAfter), authorized(h.srv.HostKey.PublicKey())) && !contains(strings.Join(tc.user, "\n"), "$SRV"); got != tc.recorded {
				t.Errorf("user's known_hosts holds the server's key: %v, want %v:\n%s", got, tc.recorded, userAfter)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("connect succeeded")
			}
			var ce *sshx.ChangedHostKeyError
			if !errors.As(err, &ce) {
				t.Errorf("error %T %v, want a ChangedHostKeyError", err, err)
			}
			r := strings.NewReplacer("$KEY", ssh.FingerprintSHA256(h.srv.HostKey.PublicKey()), "$OTHERFP", ssh.FingerprintSHA256(other.PublicKey()))
			for _, w := range tc.want {
				if w = r.Replace(w); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
			if n := h.srv.Execs.Load(); n != 0 {
				t.Errorf("%d commands ran on a refused host", n)
			}
		})
	}
	t.Run("address restrict refused at load", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "lab.hcl")
		os.WriteFile(p, []byte("lab \"kh\" {}\nhost \"x\" {\n  address     = \"restrict\"\n  known_hosts = \"~/.ssh/authorized_keys2\"\n}\nhost \"y\" {\n  address = \"192.0.2.1\"\n  jump    = \"u@restrict\"\n}\n"), 0o644)
		_, diags := lab.Load([]string{p}, lab.LoadOptions{})
		var got []string
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				got = append(got, fmt.Sprintf("%s at line %d", d.Summary, d.Subject.Start.Line))
			}
		}
		if want := []string{"Invalid address at line 3", "Invalid jump at line 8"}; strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("diagnostics %q, want %q", got, want)
		}
	})
}

// TestCertificateFirst: a host that offers both its plain key and a host
// certificate (as a stock sshd with HostCertificate does) passes when
// known_hosts trusts its @cert-authority (rlab asks for certificates
// first); with only the authority listed, a host without a certificate is
// refused saying it offered no certificate.
func TestCertificateFirst(t *testing.T) {
	ca := sshtest.NewKey(t)
	for _, tc := range []struct {
		name string
		cert bool
		want string
	}{
		{"plain key and certificate offered", true, ""},
		{"plain key only", false, "not a host certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sshtest.Start(t, nil)
			if tc.cert {
				s.More = []ssh.Signer{hostCert(t, ca, s.HostKey, "127.0.0.1")}
			}
			kh := sshtest.WriteKnownHosts(t, "@cert-authority "+knownhosts.Normalize(s.Addr)+" "+authorized(ca.PublicKey()))
			d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{kh}, SSHConfig: "none", AgentSocket: "none", Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := d.Dial(ctx, target(&host{name: "server", srv: s}))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				if _, ok := c.HostKey.(*ssh.Certificate); !ok {
					t.Errorf("host key %s, want the certificate", c.HostKey.Type())
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ssh.FingerprintSHA256(ca.PublicKey())) {
				t.Errorf("error %q, want %q naming the authority", err, tc.want)
			}
		})
	}
}

package sectest

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

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

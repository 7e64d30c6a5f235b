package sshx

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

func echoHandler(cmd string, _ io.Reader, stdout, _ io.Writer) int {
	fmt.Fprint(stdout, "ran: "+cmd)
	return 0
}

func run(t *testing.T, c *Client, cmd string) string {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Output(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func target(s *sshtest.Server, ident string) Target {
	h, p, _ := net.SplitHostPort(s.Addr)
	var port int
	fmt.Sscan(p, &port)
	t := Target{Name: "server", Address: h, Port: port, User: s.User, NoJump: true}
	if ident != "" {
		t.IdentityFiles = []string{ident}
	}
	return t
}

func newDialer(t *testing.T, o Options) *Dialer {
	t.Helper()
	if o.SSHConfig == "" {
		o.SSHConfig = "none"
	}
	if o.AgentSocket == "" {
		o.AgentSocket = "none"
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = 5 * time.Second
	}
	d, err := NewDialer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func ecdsaKey(t *testing.T) ssh.Signer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDialHostKeys(t *testing.T) {
	other := sshtest.NewKey(t)
	tests := []struct {
		name       string
		setup      func(t *testing.T, s *sshtest.Server) (knownHosts string, o Options, tg Target)
		wantErr    []string // substrings of the error; none: success
		wantType   any
		afterwards func(t *testing.T, s *sshtest.Server, kh string)
	}{
		{
			name: "known host",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{}, target(s, s.KeyFile)
			},
		},
		{
			name: "unknown host refused with fingerprint and the flag",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				return sshtest.WriteKnownHosts(t), Options{}, target(s, s.KeyFile)
			},
			wantType: &UnknownHostKeyError{},
			wantErr:  []string{"unknown host key", "--accept-new-host-keys", "ssh-keyscan -p", "SHA256:"},
		},
		{
			name: "unknown host with missing known_hosts file",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				return filepath.Join(t.TempDir(), "nope", "known_hosts"), Options{}, target(s, s.KeyFile)
			},
			wantType: &UnknownHostKeyError{},
			wantErr:  []string{"unknown host key"},
		},
		{
			name: "accept-new records the key, a later strict dial passes",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				return sshtest.WriteKnownHosts(t, "# comment"), Options{AcceptNewHostKeys: true}, target(s, s.KeyFile)
			},
			afterwards: func(t *testing.T, s *sshtest.Server, kh string) {
				b, _ := os.ReadFile(kh)
				if !strings.Contains(string(b), s.KnownHostsLine()) {
					t.Errorf("known_hosts lacks the recorded key:\n%s", b)
				}
				d := newDialer(t, Options{KnownHosts: []string{kh}})
				c, err := d.Dial(context.Background(), target(s, s.KeyFile))
				if err != nil {
					t.Fatalf("strict dial after accept-new: %v", err)
				}
				c.Close()
			},
		},
		{
			name: "changed key refused even with accept-new, naming both fingerprints",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, other.PublicKey())
				return sshtest.WriteKnownHosts(t, line), Options{AcceptNewHostKeys: true}, target(s, s.KeyFile)
			},
			wantType: &ChangedHostKeyError{},
			wantErr:  []string{"HOST KEY CHANGED", ssh.FingerprintSHA256(other.PublicKey()), "ssh-keygen -R"},
		},
		{
			name: "revoked key refused",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine(), "@revoked * "+string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(s.HostKey.PublicKey())))), Options{AcceptNewHostKeys: true}, target(s, s.KeyFile)
			},
			wantType: &RevokedHostKeyError{},
			wantErr:  []string{"@revoked"},
		},
		{
			name: "known ecdsa key while the server prefers ed25519 (HostKeyAlgorithms from known_hosts)",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				ek := ecdsaKey(t)
				s.More = []ssh.Signer{ek}
				line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, ek.PublicKey())
				return sshtest.WriteKnownHosts(t, line), Options{}, target(s, s.KeyFile)
			},
		},
		{
			name: "host certificate from a trusted @cert-authority",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				ca := sshtest.NewKey(t)
				s.HostKey = hostCert(t, ca, s.HostKey, "127.0.0.1")
				return sshtest.WriteKnownHosts(t, "@cert-authority "+knownhosts.Normalize(s.Addr)+" "+string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(ca.PublicKey())))), Options{}, target(s, s.KeyFile)
			},
		},
		{
			name: "host certificate from an untrusted authority",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				ca := sshtest.NewKey(t)
				s.HostKey = hostCert(t, ca, s.HostKey, "127.0.0.1")
				return sshtest.WriteKnownHosts(t, "@cert-authority "+knownhosts.Normalize(s.Addr)+" "+string(bytes.TrimSpace(ssh.MarshalAuthorizedKey(other.PublicKey())))), Options{}, target(s, s.KeyFile)
			},
			wantErr: []string{"no authorities"},
		},
		{
			name: "wrong user",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				tg := target(s, s.KeyFile)
				tg.User = "mallory"
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{}, tg
			},
			wantErr: []string{`login as "mallory" refused`, "tried identity file"},
		},
		{
			name: "wrong key",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				kf := sshtest.WriteKey(t, t.TempDir(), "other", other, "")
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{}, target(s, kf)
			},
			wantErr: []string{`login as "tester" refused`},
		},
		{
			name: "encrypted key and no agent",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				kf := sshtest.WriteKey(t, t.TempDir(), "enc", s.Key, "canary-passphrase")
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{}, target(s, kf)
			},
			wantErr: []string{"encrypted with a passphrase", "ssh-add"},
		},
		{
			name: "encrypted key loaded in ssh-agent",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				kf := sshtest.WriteKey(t, t.TempDir(), "enc", s.Key, "canary-passphrase")
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{AgentSocket: startAgent(t, kf)}, target(s, kf)
			},
		},
		{
			name: "silent server times out",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				s.Silent = true
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{HandshakeTimeout: 300 * time.Millisecond}, target(s, s.KeyFile)
			},
			wantErr: []string{"no SSH answer within 300ms", "host silent"},
		},
		{
			name: "port closed",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				ln, _ := net.Listen("tcp", "127.0.0.1:0")
				addr := ln.Addr().(*net.TCPAddr)
				ln.Close()
				tg := target(s, s.KeyFile)
				tg.Port = addr.Port
				return sshtest.WriteKnownHosts(t), Options{}, tg
			},
			wantErr: []string{"connection refused: nothing listens on port"},
		},
		{
			name: "connections dropped during key exchange are retried",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				s.DropN.Store(3)
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{}, target(s, s.KeyFile)
			},
			afterwards: func(t *testing.T, s *sshtest.Server, _ string) {
				if n := s.Conns.Load(); n != 4 {
					t.Errorf("server saw %d connections, want 4 (3 dropped + 1)", n)
				}
			},
		},
		{
			name: "ssh config alias gives HostName, Port, User and IdentityFile",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				tg := target(s, s.KeyFile)
				cfg := filepath.Join(t.TempDir(), "config")
				os.WriteFile(cfg, []byte(fmt.Sprintf("Host labserver\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n", tg.Address, tg.Port, s.User, s.KeyFile)), 0o600)
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{SSHConfig: cfg}, Target{Name: "server", Address: "labserver"}
			},
		},
		{
			name: "ssh config ProxyJump applies when the lab names no jump",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				tg := target(s, s.KeyFile)
				cfg := filepath.Join(t.TempDir(), "config")
				os.WriteFile(cfg, []byte(fmt.Sprintf("Host %s\n  Port 1\n  User mallory\n  IdentityFile /nonexistent\n  ProxyJump nowhere.invalid\n", tg.Address)), 0o600)
				tg.NoJump = false // the lab names no jump; the config's ProxyJump applies...
				tg.Jump = nil
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{SSHConfig: cfg}, tg
			},
			wantErr: []string{"nowhere.invalid"}, // ...and is used (it does not exist)
		},
		{
			name: "lab user, port and key win over the ssh config",
			setup: func(t *testing.T, s *sshtest.Server) (string, Options, Target) {
				tg := target(s, s.KeyFile)
				cfg := filepath.Join(t.TempDir(), "config")
				os.WriteFile(cfg, []byte(fmt.Sprintf("Host %s\n  Port 1\n  User mallory\n  IdentityFile /nonexistent\n", tg.Address)), 0o600)
				return sshtest.WriteKnownHosts(t, s.KnownHostsLine()), Options{SSHConfig: cfg}, tg
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sshtest.Start(t, echoHandler)
			kh, o, tg := tc.setup(t, s)
			o.KnownHosts = []string{kh}
			d := newDialer(t, o)
			c, err := d.Dial(context.Background(), tg)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				if got := run(t, c, "hello"); got != "ran: hello" {
					t.Errorf("exec output %q", got)
				}
				c.Close()
			} else {
				if err == nil {
					c.Close()
					t.Fatalf("dial succeeded, want error with %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\nlacks %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "canary-passphrase") {
					t.Errorf("error shows the passphrase: %v", err)
				}
				if tc.wantType != nil {
					target := tc.wantType
					switch target.(type) {
					case *UnknownHostKeyError:
						var e *UnknownHostKeyError
						if !errors.As(err, &e) {
							t.Errorf("error is not *UnknownHostKeyError: %T", err)
						}
					case *ChangedHostKeyError:
						var e *ChangedHostKeyError
						if !errors.As(err, &e) {
							t.Errorf("error is not *ChangedHostKeyError: %T", err)
						}
					case *RevokedHostKeyError:
						var e *RevokedHostKeyError
						if !errors.As(err, &e) {
							t.Errorf("error is not *RevokedHostKeyError: %T", err)
						}
					}
				}
			}
			if tc.afterwards != nil {
				tc.afterwards(t, s, kh)
			}
		})
	}
}

func hostCert(t *testing.T, ca, host ssh.Signer, principal string) ssh.Signer {
	cert := &ssh.Certificate{
		Key:             host.PublicKey(),
		CertType:        ssh.HostCert,
		KeyId:           "test",
		ValidPrincipals: []string{principal},
		ValidBefore:     ssh.CertTimeInfinity,
	}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewCertSigner(cert, host)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startAgent serves an ssh-agent holding the key in kf (decrypted with the
// test passphrase) on a unix socket.
func startAgent(t *testing.T, kf string) string {
	b, err := os.ReadFile(kf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ssh.ParseRawPrivateKeyWithPassphrase(b, []byte("canary-passphrase"))
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: raw}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go agent.ServeAgent(kr, c)
		}
	}()
	return sock
}

// Many hosts accepted at once must each be recorded exactly once and leave
// a file every later strict dial accepts.
func TestAcceptNewConcurrent(t *testing.T) {
	var servers []*sshtest.Server
	for i := 0; i < 6; i++ {
		servers = append(servers, sshtest.Start(t, echoHandler))
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	d := newDialer(t, Options{KnownHosts: []string{kh}, AcceptNewHostKeys: true})
	var wg sync.WaitGroup
	errs := make([]error, len(servers)*4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := servers[i%len(servers)]
			c, err := d.Dial(context.Background(), target(s, s.KeyFile))
			if err == nil {
				c.Close()
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("dial %d: %v", i, err)
		}
	}
	b, _ := os.ReadFile(kh)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(servers) {
		t.Errorf("known_hosts has %d lines, want %d:\n%s", len(lines), len(servers), b)
	}
	strict := newDialer(t, Options{KnownHosts: []string{kh}})
	for _, s := range servers {
		c, err := strict.Dial(context.Background(), target(s, s.KeyFile))
		if err != nil {
			t.Errorf("strict dial %s: %v", s.Addr, err)
			continue
		}
		c.Close()
	}
}

func TestParseJump(t *testing.T) {
	tests := []struct {
		spec    string
		want    []string // user@address:port, closest to the destination first
		wantErr bool
	}{
		{spec: "", want: nil},
		{spec: "none", want: nil},
		{spec: "bastion", want: []string{"@bastion:0"}},
		{spec: "ops@bastion:2222", want: []string{"ops@bastion:2222"}},
		{spec: "a@first,b@second:22", want: []string{"b@second:22", "a@first:0"}},
		{spec: "[2001:db8::1]:22", want: []string{"@2001:db8::1:22"}},
		{spec: "bastion:notaport", wantErr: true},
		{spec: "a,,b", wantErr: true},
	}
	for _, tc := range tests {
		j, err := ParseJump(tc.spec)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseJump(%q) error %v, want error %v", tc.spec, err, tc.wantErr)
			continue
		}
		var got []string
		for ; j != nil; j = j.Jump {
			got = append(got, fmt.Sprintf("%s@%s:%d", j.User, j.Address, j.Port))
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("ParseJump(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func FuzzParseJump(f *testing.F) {
	for _, s := range []string{"", "none", "bastion", "ops@bastion:2222", "a@first,b@second:22", "[::1]:22", "ssh://x@y:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		j, err := ParseJump(spec)
		if err != nil {
			return
		}
		for n := 0; j != nil; j = j.Jump {
			if n++; n > 1000 || j.Address == "" {
				t.Fatalf("bad chain from %q", spec)
			}
		}
	})
}

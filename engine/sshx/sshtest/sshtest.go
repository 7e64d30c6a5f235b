// Package sshtest runs an in-process SSH server (golang.org/x/crypto/ssh)
// for unit tests of edge cases a real sshd makes hard to stage: a server
// that never answers, one that drops the first connections (as MaxStartups
// does), changed host keys. Exec requests are served by a Go handler.
// Integration tests use real OpenSSH on the netns test bed instead.
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Handler serves one exec request: cmd is the command line, stdin/stdout/
// stderr the session's streams. It returns the exit status.
type Handler func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int

// Server is a running in-process SSH server.
type Server struct {
	Addr    string       // 127.0.0.1:port
	HostKey ssh.Signer   // the server's host key
	More    []ssh.Signer // more host keys offered (set before the first dial)
	User    string       // the only user accepted
	Key     ssh.Signer   // the client key it accepts
	KeyFile string       // Key as an unencrypted OpenSSH private key file
	Handler Handler      // exec handler; nil: exit 0
	SFTPDir string       // serve the sftp subsystem rooted here ("" none)
	Silent  bool         // accept TCP, never speak SSH
	Forward bool         // serve direct-tcpip (a jump host); set before the first dial
	// StallOpens: after login, never answer a channel open (keepalives
	// are still answered): a host whose sshd hangs after auth.
	StallOpens atomic.Bool
	// StallExec: accept sessions, never answer their exec request.
	StallExec atomic.Bool
	DropN     atomic.Int32 // close this many next connections at once (MaxStartups)
	Conns     atomic.Int32 // connections accepted
	Execs     atomic.Int32 // exec requests served
	ln        net.Listener
	wg        sync.WaitGroup
	mu        sync.Mutex
	open      []net.Conn
	dir       string
}

// Start starts a server on 127.0.0.1 and stops it when the test ends.
func Start(t testing.TB, h Handler) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{User: "tester", Handler: h, dir: dir}
	s.HostKey = NewKey(t)
	s.Key = NewKey(t)
	s.KeyFile = WriteKey(t, dir, "id_ed25519", s.Key, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln, s.Addr = ln, ln.Addr().String()
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.Close)
	return s
}

// NewKey makes an ed25519 signer.
func NewKey(t testing.TB) ssh.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyOf.Store(s, priv)
	return s
}

// keyOf remembers the private key behind each signer NewKey made.
var keyOf sync.Map

// WriteKey writes a private key file (encrypted when passphrase != "").
func WriteKey(t testing.TB, dir, name string, s ssh.Signer, passphrase string) string {
	t.Helper()
	k, ok := keyOf.Load(s)
	if !ok {
		t.Fatal("sshtest: WriteKey needs a key from NewKey")
	}
	var blk *pem.Block
	var err error
	if passphrase == "" {
		blk, err = ssh.MarshalPrivateKey(k, "")
	} else {
		blk, err = ssh.MarshalPrivateKeyWithPassphrase(k, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ShellHandler runs each command with /bin/sh -c in home (as $HOME), as
// sshd runs a user's command: a real shell and real processes, on this
// machine, as the test's user.
func ShellHandler(home string) Handler {
	return ShellHandlerPath(home, "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
}

// ShellHandlerPath is ShellHandler with the commands' PATH (a host without
// some tool: a folder of links to all the others).
func ShellHandlerPath(home, path string) Handler {
	return func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		c := exec.Command("/bin/sh", "-c", cmd)
		c.Dir = home
		c.Env = []string{"HOME=" + home, "PATH=" + path, "LC_ALL=C"}
		c.Stdout, c.Stderr = stdout, stderr
		// Copy stdin ourselves: exec would wait for a client that keeps
		// stdin open after the command exited.
		w, err := c.StdinPipe()
		if err != nil {
			return 127
		}
		c.WaitDelay = time.Second
		if err := c.Start(); err != nil {
			fmt.Fprintln(stderr, err)
			return 127
		}
		go func() { io.Copy(w, stdin); w.Close() }()
		if err := c.Wait(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode()
			}
			fmt.Fprintln(stderr, err)
			return 127
		}
		return 0
	}
}

// KnownHostsLine is the known_hosts line for this server's host key.
func (s *Server) KnownHostsLine() string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey.PublicKey())
}

// WriteKnownHosts writes a known_hosts file with the given lines.
func WriteKnownHosts(t testing.TB, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Close stops the server and drops every connection.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// DropConns closes every open connection (the host's link dropped, sshd
// restarted) and keeps listening.
func (s *Server) DropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.open {
		c.Close()
	}
	s.open = nil
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.Conns.Add(1)
		s.mu.Lock()
		s.open = append(s.open, c)
		s.mu.Unlock()
		if s.DropN.Load() > 0 {
			s.DropN.Add(-1)
			c.Close()
			continue
		}
		if s.Silent {
			continue // held open, never answered, closed by Close
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

func (s *Server) handle(c net.Conn) {
	defer c.Close()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(m ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if m.User() == s.User && bytes.Equal(k.Marshal(), s.Key.PublicKey().Marshal()) {
				return &ssh.Permissions{}, nil
			}
			return nil, fmt.Errorf("key rejected")
		},
	}
	cfg.AddHostKey(s.HostKey)
	for _, k := range s.More {
		cfg.AddHostKey(k)
	}
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if s.StallOpens.Load() {
			// A stalled open is left unanswered: the channel request
			// waits until the connection ends.
			_ = nc
			continue
		}
		if nc.ChannelType() == "direct-tcpip" && s.Forward {
			go forward(nc)
			continue
		}
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.session(ch, creqs)
	}
}

// forward serves a direct-tcpip channel (ssh -J) by dialing its target.
func forward(nc ssh.NewChannel) {
	var p struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
		nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
		return
	}
	c, err := net.Dial("tcp", net.JoinHostPort(p.Host, fmt.Sprint(p.Port)))
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		c.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	go func() {
		io.Copy(ch, c)
		ch.Close()
	}()
	io.Copy(c, ch)
	c.Close()
}

func (s *Server) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for r := range reqs {
		if r.Type == "subsystem" && s.SFTPDir != "" {
			r.Reply(true, nil)
			srv, err := sftp.NewServer(ch, sftp.WithServerWorkingDirectory(s.SFTPDir))
			if err != nil {
				return
			}
			srv.Serve()
			srv.Close()
			return
		}
		if r.Type != "exec" {
			r.Reply(false, nil)
			continue
		}
		if s.StallExec.Load() {
			continue // never answered
		}
		var p struct{ Cmd string }
		if err := ssh.Unmarshal(r.Payload, &p); err != nil {
			r.Reply(false, nil)
			return
		}
		r.Reply(true, nil)
		s.Execs.Add(1)
		code := 0
		if s.Handler != nil {
			code = s.Handler(p.Cmd, ch, ch, ch.Stderr())
		}
		ch.CloseWrite()
		ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
		return
	}
}

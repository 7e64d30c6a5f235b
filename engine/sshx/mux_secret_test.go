package sshx

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"golang.org/x/crypto/ssh"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The daemon's log, at debug level, through a dial, a session and a caller
// with a wrong token, never holds the token.
func TestMuxLogHoldsNoToken(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	dir := muxDir(t)
	var logBuf lockedBuffer
	startMux(t, MuxServeOptions{Dir: dir, Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	d := muxDialer(t, dir, Options{KnownHosts: []string{kh}})
	c, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "x")
	c.Close()
	token := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, muxToken)))))
	if len(token) < 16 {
		t.Fatalf("token %d bytes", len(token))
	}
	conn, err := dialMuxSocket(dir)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, _ := ssh.ParseAuthorizedKey(must(os.ReadFile(filepath.Join(dir, muxHostKey))))
	ssh.NewClientConn(conn, "rlab-mux", &ssh.ClientConfig{User: muxUser, Auth: []ssh.AuthMethod{ssh.Password(token[:len(token)-1] + "x")}, HostKeyCallback: ssh.FixedHostKey(pub)})
	log := logBuf.String()
	if log == "" {
		t.Fatal("the daemon logged nothing: the test proves nothing")
	}
	if strings.Contains(log, token) || strings.Contains(log, token[:len(token)-1]) {
		t.Errorf("the daemon's log holds the token:\n%s", log)
	}
}

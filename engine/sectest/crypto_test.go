package sectest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// minCrypto is the oldest golang.org/x/crypto rlab may be built with: it
// has the Terrapin fix (CVE-2023-48795, strict kex) and the knownhosts fix
// for @revoked certificate authorities (CVE-2026-42508).
const minCrypto = "v0.52.0"

// TestCryptoVersion checks the x/crypto this binary was built with (its
// build info) and the one go.mod requires.
func TestCryptoVersion(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info in the test binary")
	}
	var built string
	for _, d := range bi.Deps {
		if d.Path == "golang.org/x/crypto" {
			built = d.Version
			if d.Replace != nil {
				built = d.Replace.Version
			}
		}
	}
	if built == "" {
		// Test binaries carry no dependency list: ask the go command which
		// module version golang.org/x/crypto/ssh is built from.
		out, err := exec.Command("go", "list", "-f", "{{.Module.Version}}", "golang.org/x/crypto/ssh").Output()
		if err != nil {
			t.Skipf("no build info and no go command: %v", err)
		}
		built = strings.TrimSpace(string(out))
	}
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	var required string
	for _, r := range mf.Require {
		if r.Mod.Path == "golang.org/x/crypto" {
			required = r.Mod.Version
		}
	}
	for _, r := range mf.Replace {
		if r.Old.Path == "golang.org/x/crypto" {
			t.Errorf("go.mod replaces golang.org/x/crypto with %s %s", r.New.Path, r.New.Version)
		}
	}
	for what, v := range map[string]string{"built with": built, "go.mod requires": required} {
		if !semver.IsValid(v) || semver.Compare(v, minCrypto) < 0 {
			t.Errorf("golang.org/x/crypto %s %q, want >= %s", what, v, minCrypto)
		}
	}
}

// kexinit reads the SSH version line and the first binary packet (the
// KEXINIT, sent in the clear) from r and returns its kex algorithm list.
func kexinit(r *bufio.Reader) ([]string, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("version line: %w", err)
		}
		if strings.HasPrefix(line, "SSH-") {
			break
		}
	}
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n > 35000 || n < 1+16+4 {
		return nil, fmt.Errorf("packet length %d", n)
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	payload := body[:len(body)-int(hdr[4])]
	if len(payload) < 1+16+4 || payload[0] != 20 {
		return nil, fmt.Errorf("first packet is message %d, not KEXINIT", payload[0])
	}
	l := binary.BigEndian.Uint32(payload[17:21])
	if int(l) > len(payload)-21 {
		return nil, fmt.Errorf("kex list length %d", l)
	}
	return strings.Split(string(payload[21:21+l]), ","), nil
}

// TestStrictKex dials through a recording TCP relay and reads both
// KEXINITs off the wire: the controller offers strict key exchange
// (kex-strict-c-v00@openssh.com, the Terrapin countermeasure) and, with a
// server that offers it too, the connection runs in strict mode.
func TestStrictKex(t *testing.T) {
	s := sshtest.Start(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var fromClient, fromServer bytes.Buffer
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", s.Addr)
		if err != nil {
			c.Close()
			return
		}
		rec := func(dst net.Conn, src net.Conn, buf *bytes.Buffer) {
			b := make([]byte, 32<<10)
			for {
				n, err := src.Read(b)
				if n > 0 {
					mu.Lock()
					if buf.Len() < 64<<10 {
						buf.Write(b[:n])
					}
					mu.Unlock()
					dst.Write(b[:n])
				}
				if err != nil {
					dst.Close()
					return
				}
			}
		}
		go rec(u, c, &fromClient)
		rec(c, u, &fromServer)
	}()
	// known_hosts names the relay's address with the server's key.
	h := &host{name: "server", srv: &sshtest.Server{Addr: ln.Addr().String(), HostKey: s.HostKey, User: s.User, KeyFile: s.KeyFile}}
	kh := sshtest.WriteKnownHosts(t, h.srv.KnownHostsLine())
	d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{kh}, SSHConfig: "none", AgentSocket: "none", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := d.Dial(ctx, target(h))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, side := range []struct {
		name string
		buf  *bytes.Buffer
		want string
	}{{"controller", &fromClient, "kex-strict-c-v00@openssh.com"}, {"server", &fromServer, "kex-strict-s-v00@openssh.com"}} {
		kex, err := kexinit(bufio.NewReader(bytes.NewReader(side.buf.Bytes())))
		if err != nil {
			t.Fatalf("%s KEXINIT: %v", side.name, err)
		}
		found := false
		for _, k := range kex {
			found = found || k == side.want
		}
		if !found {
			t.Errorf("%s KEXINIT offers %q, without %s", side.name, kex, side.want)
		}
		t.Logf("%s offers %s", side.name, strings.Join(kex, ","))
	}
}

package sshx

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// TestIdentitiesOnly: an ssh-agent holds five keys, and the host's
// identity file is one of them, another is an encrypted file ssh-add
// loaded (rlab reads only its FILE.pub). Without IdentitiesOnly every
// agent key is offered, then the file's (OpenSSH's order); with it only
// the identity files' keys are (attack round 18, host side, low: a hostile
// host that refuses each key saw all five of the user's public keys).
func TestIdentitiesOnly(t *testing.T) {
	dir := t.TempDir()
	kr := agent.NewKeyring()
	var pubs []ssh.PublicKey
	for i := 0; i < 5; i++ {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := kr.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
			t.Fatal(err)
		}
		s, _ := ssh.NewSignerFromKey(priv)
		pubs = append(pubs, s.PublicKey())
		if i == 0 { // a plain identity file
			blk, err := ssh.MarshalPrivateKey(priv, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "plain"), pem.EncodeToMemory(blk), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if i == 1 { // an encrypted one: its .pub only
			blk, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("pass"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "locked"), pem.EncodeToMemory(blk), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "locked.pub"), ssh.MarshalAuthorizedKey(s.PublicKey()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go agent.ServeAgent(kr, c)
		}
	}()
	ids := []string{filepath.Join(dir, "plain"), filepath.Join(dir, "locked")}
	for _, tt := range []struct {
		only bool
		want []int // pubs offered, in order
	}{
		{false, []int{0, 1, 2, 3, 4, 0}},
		{true, []int{0, 1, 0}},
	} {
		a := &auth{agentSock: sock}
		ss, notes, err := a.signers(ids, tt.only)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, s := range ss {
			for i, p := range pubs {
				if string(p.Marshal()) == string(s.PublicKey().Marshal()) {
					got = append(got, i)
				}
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("IdentitiesOnly %v: offered keys %v, want %v (%q)", tt.only, got, tt.want, notes)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("IdentitiesOnly %v: offered keys %v, want %v", tt.only, got, tt.want)
				break
			}
		}
	}
}

// TestIdentitiesOnlyFromConfig: ssh config's IdentitiesOnly yes reaches
// the host's resolution (any case, as OpenSSH reads it); no is off.
func TestIdentitiesOnlyFromConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte("Host strict\n  IdentitiesOnly Yes\nHost loose\n  IdentitiesOnly no\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadSSHConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	d := &Dialer{sshCfg: cfg}
	for host, want := range map[string]bool{"strict": true, "loose": false, "other": false} {
		r, err := d.resolve(&Target{Address: host, User: "u"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.identitiesOnly != want {
			t.Errorf("host %s: identitiesOnly %v, want %v", host, r.identitiesOnly, want)
		}
	}
}

package sshx

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/testbed"
)

// A two-hop jump chain on real sshd hosts: c0 and c1 sit on a subnet that
// only bastion2 reaches, and bastion2 only from the bastion's subnet. Both
// ways to write the chain (Target.Jump links and a ProxyJump string) reach
// every host, and each bastion is logged into once however many hosts are
// dialed through it at once (counted in the bastions' sshd logs).
func TestJumpChainNetns(t *testing.T) {
	// Logins are counted per command: no persisting mux (a warm mux would
	// log in 0 times).
	t.Setenv("RLAB_PERSIST", "")
	bed := testbed.Start(t, testbed.Options{Hosts: 1, BehindBastion: 1, BehindBastion2: 2, MaxStartups: "10:30:100", LogLevel: "INFO"})
	key := []string{bed.KeyFile}
	chains := []struct {
		name string
		jump func() *Target
	}{
		{"targets", func() *Target {
			b1 := &Target{Name: "bastion", Address: bed.Bastion.Addr, Port: 22, User: bed.User, IdentityFiles: key, NoJump: true}
			return &Target{Name: "bastion2", Address: bed.Bastion2.Addr, Port: 22, User: bed.User, IdentityFiles: key, Jump: b1}
		}},
		{"proxyjump string", func() *Target {
			j, err := ParseJump(fmt.Sprintf("%s@%s,%s@%s:22", bed.User, bed.Bastion.Addr, bed.User, bed.Bastion2.Addr))
			if err != nil {
				t.Fatal(err)
			}
			for h := j; h != nil; h = h.Jump {
				h.IdentityFiles = key
			}
			return j
		}},
	}
	for _, tc := range chains {
		t.Run(tc.name, func(t *testing.T) {
			before1, before2 := bed.Logins(t, bed.Bastion), bed.Logins(t, bed.Bastion2)
			d := newDialer(t, Options{KnownHosts: []string{bed.KnownHosts}, HandshakeTimeout: 30 * time.Second})
			var wg sync.WaitGroup
			for _, h := range bed.Hosts {
				if len(h.Via) != 2 {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := d.Dial(context.Background(), Target{Name: h.Name, Address: h.Addr, Port: 22, User: bed.User, IdentityFiles: key, Jump: tc.jump()})
					if err != nil {
						t.Errorf("%s: %v", h.Name, err)
						return
					}
					defer c.Close()
					s, err := c.NewSession()
					if err != nil {
						t.Errorf("%s: session: %v", h.Name, err)
						return
					}
					defer s.Close()
					if out, _ := s.Output("hostname -I"); !strings.Contains(string(out), h.Addr) {
						t.Errorf("%s answered from %q", h.Name, out)
					}
				}()
			}
			wg.Wait()
			d.Close()
			if n := bed.Logins(t, bed.Bastion) - before1; n != 1 {
				t.Errorf("bastion: %d logins, want 1 (one shared connection)", n)
			}
			if n := bed.Logins(t, bed.Bastion2) - before2; n != 1 {
				t.Errorf("bastion2: %d logins, want 1 (one shared connection)", n)
			}
		})
	}

	// The second bastion down: the error names the host, both hops and
	// the cause, and the host before it in the chain still works.
	bed.StopSSHD(t, bed.Bastion2)
	d := newDialer(t, Options{KnownHosts: []string{bed.KnownHosts}, Retries: -1})
	c0 := bed.Host("c0")
	_, err := d.Dial(context.Background(), Target{Name: c0.Name, Address: c0.Addr, Port: 22, User: bed.User, IdentityFiles: key, Jump: chains[0].jump()})
	if err == nil {
		t.Fatal("c0 reached with bastion2 down")
	}
	// sshd on the bastion reports the refusal as a rejected tunnel
	// ("connect failed (Connection refused)").
	msg := strings.ToLower(err.Error())
	for _, want := range []string{"via jump host " + bed.User + "@" + bed.Bastion2.Addr + ":22 via " + bed.User + "@" + bed.Bastion.Addr + ":22", "open tunnel through " + bed.Bastion.Addr, "connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("bastion2 down: error %q lacks %q", msg, want)
		}
	}
	b0 := bed.Host("b0")
	c, err := d.Dial(context.Background(), Target{Name: b0.Name, Address: b0.Addr, Port: 22, User: bed.User, IdentityFiles: key, Jump: chains[0].jump().Jump})
	if err != nil {
		t.Fatalf("b0 behind the first bastion, with bastion2 down: %v", err)
	}
	c.Close()
}

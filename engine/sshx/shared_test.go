package sshx

import (
	"context"
	"sync"
	"testing"

	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// A lab host that is also the bastion of others is logged into once,
// whichever is dialed first: its own connection and the jump connection
// are one. Closing the host's client leaves the jump working; the Dialer's
// Close ends it.
func TestBastionIsAlsoALabHost(t *testing.T) {
	for _, order := range []string{"bastion host first", "hosts behind first", "all at once"} {
		t.Run(order, func(t *testing.T) {
			bastion := sshtest.Start(t, echoHandler)
			bastion.Forward = true
			h1 := sshtest.Start(t, echoHandler)
			h2 := sshtest.Start(t, echoHandler)
			kh := sshtest.WriteKnownHosts(t, bastion.KnownHostsLine(), h1.KnownHostsLine(), h2.KnownHostsLine())
			jump := target(bastion, bastion.KeyFile)
			jump.Name = "bastion"
			behind := func(s *sshtest.Server, name string) Target {
				tg := target(s, s.KeyFile)
				tg.Name, tg.NoJump, tg.Jump = name, false, &jump
				return tg
			}
			d := newDialer(t, Options{KnownHosts: []string{kh}})
			targets := []Target{jump, behind(h1, "h1"), behind(h2, "h2")}
			if order == "hosts behind first" {
				targets = []Target{behind(h1, "h1"), behind(h2, "h2"), jump}
			}
			clients := make([]*Client, len(targets))
			var wg sync.WaitGroup
			for i, tg := range targets {
				dial := func() {
					c, err := d.Dial(context.Background(), tg)
					if err != nil {
						t.Errorf("dial %s: %v", tg.Name, err)
						return
					}
					clients[i] = c
				}
				if order == "all at once" {
					wg.Add(1)
					go func() { defer wg.Done(); dial() }()
				} else {
					dial()
				}
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			for i, c := range clients {
				if c.Name != targets[i].Name {
					t.Errorf("client %d is named %q, want %q", i, c.Name, targets[i].Name)
				}
				if out := run(t, c, c.Name); out != "ran: "+c.Name {
					t.Errorf("%s answered %q", c.Name, out)
				}
			}
			if b := bastion.Conns.Load(); b != 1 {
				t.Errorf("bastion logged into %d times, want 1", b)
			}
			// The bastion host's own client closed: the hosts behind it
			// still work, and a new host behind it needs no new login.
			for i, tg := range targets {
				if tg.Name == "bastion" {
					clients[i].Close()
				}
			}
			for i, c := range clients {
				if targets[i].Name != "bastion" {
					if out := run(t, c, c.Name); out != "ran: "+c.Name {
						t.Errorf("after the bastion host's client closed, %s answered %q", c.Name, out)
					}
				}
			}
			c, err := d.Dial(context.Background(), behind(h1, "h1-again"))
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if b := bastion.Conns.Load(); b != 1 {
				t.Errorf("bastion logged into %d times after more dials, want 1", b)
			}
		})
	}
}

// A host dialed twice by one Dialer (not a bastion) shares one login, and
// its connection ends with the last client.
func TestDirectClientsShareAndClose(t *testing.T) {
	s := sshtest.Start(t, echoHandler)
	kh := sshtest.WriteKnownHosts(t, s.KnownHostsLine())
	d := newDialer(t, Options{KnownHosts: []string{kh}})
	a, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Conns.Load(); n != 1 {
		t.Errorf("%d logins, want 1", n)
	}
	a.Close()
	if out := run(t, b, "b"); out != "ran: b" {
		t.Errorf("b after a closed: %q", out)
	}
	b.Close()
	select {
	case <-b.Gone():
	case <-a.Gone():
	}
	c, err := d.Dial(context.Background(), target(s, s.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := s.Conns.Load(); n != 2 {
		t.Errorf("%d logins after the last client closed and a new dial, want 2", n)
	}
}

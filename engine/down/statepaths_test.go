package down

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/plan"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// TestDownStatePathsConfined: a run directory received from someone else
// cannot make rlab down use a known_hosts or an identity file outside it
// that the user did not name (issue 24, the low left of round 3). The
// user's own run (its state.json signed with the user's key) keeps the
// paths its lab gave.
func TestDownStatePathsConfined(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	outside := t.TempDir()
	otherKey := filepath.Join(outside, "id_other") // "the user's other key"
	plantedKH := filepath.Join(outside, "known_hosts")
	for _, f := range []string{otherKey, plantedKH} {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type paths struct{ kh, id string }
	tests := []struct {
		name string
		// own: written by this user's rlab (newJournal); else the paths
		// are edited into state.json afterwards (a received one).
		own       bool
		otherUser bool // signed, but by another user's key
		p         func(dir string) paths
		jump      bool // the paths are the bastion's
		flagsKH   []string
		flagsID   []string
		refused   string // field named in the refusal, "" = connects
		// retarget: an own (signed) entry whose address, port or user is
		// edited afterwards: the signed key must not follow it elsewhere.
		retarget func(*runstate.Host)
	}{
		{name: "own run keeps its lab's paths", own: true, p: func(string) paths { return paths{plantedKH, otherKey} }},
		{name: "received: identity_file outside", p: func(string) paths { return paths{"", otherKey} }, refused: "identity_file"},
		{name: "received: known_hosts outside", p: func(string) paths { return paths{plantedKH, ""} }, refused: "known_hosts"},
		{name: "received: bastion's identity_file outside", p: func(string) paths { return paths{"", otherKey} }, jump: true, refused: "identity_file"},
		{name: "received: relative path", p: func(string) paths { return paths{"../known_hosts", ""} }, refused: "known_hosts"},
		{name: "signed by another user's rlab", own: true, otherUser: true, p: func(string) paths { return paths{plantedKH, ""} }, refused: "known_hosts"},
		{name: "received: the user names the same files", p: func(string) paths { return paths{plantedKH, otherKey} },
			flagsKH: []string{plantedKH}, flagsID: []string{filepath.Join(outside, ".", "id_other")}},
		{name: "received: files inside the run directory", p: func(dir string) paths {
			return paths{filepath.Join(dir, "hosts", "known_hosts"), filepath.Join(dir, "vms", "login")}
		}},
		{name: "received: a symlink in the run directory to a file outside", p: func(dir string) paths {
			return paths{"", filepath.Join(dir, "vms", "link")}
		}, refused: "identity_file"},
		{name: "own run re-pointed at another address", own: true, p: func(string) paths { return paths{plantedKH, otherKey} },
			retarget: func(x *runstate.Host) { x.Address = "198.51.100.7" }, refused: "known_hosts"},
		{name: "own run re-pointed at another user and port", own: true, p: func(string) paths { return paths{"", otherKey} },
			retarget: func(x *runstate.Host) { x.User, x.Port = "root", 2222 }, refused: "identity_file"},
		{name: "own run given another bastion", own: true, p: func(string) paths { return paths{"", otherKey} },
			retarget: func(x *runstate.Host) { x.Hops = []plan.Hop{{User: "ops", Address: "198.51.100.7"}} }, refused: "identity_file"},
		{name: "own run's bastion re-pointed", own: true, jump: true, p: func(string) paths { return paths{"", otherKey} },
			retarget: func(x *runstate.Host) { x.Address = "198.51.100.7" }, refused: "identity_file"},
		{name: "received: ~/.ssh/known_hosts (the user's own, read only)", p: func(string) paths { return paths{"~/.ssh/known_hosts", ""} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.otherUser {
				t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			}
			dir := t.TempDir()
			for _, d := range []string{"hosts", "vms"} {
				os.MkdirAll(filepath.Join(dir, d), 0o700)
			}
			os.WriteFile(filepath.Join(dir, "hosts", "known_hosts"), nil, 0o600)
			os.WriteFile(filepath.Join(dir, "vms", "login"), nil, 0o600)
			os.Symlink(otherKey, filepath.Join(dir, "vms", "link"))
			p := tt.p(dir)
			h := runstate.Host{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true}
			target := &h
			if tt.jump {
				h.JumpHost = &runstate.Host{Name: "bastion", Address: "127.0.0.2", Port: 22}
				target = h.JumpHost
			}
			if tt.own {
				target.KnownHosts, target.IdentityFile = p.kh, p.id
			}
			st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(), Hosts: []runstate.Host{h},
				Effects: []steps.Effect{{Host: "a", Type: "proc", ID: "wl.x", Argv: []string{"sleep", "300"}, PID: 1 << 22}}}
			if _, err := runstate.Create(dir, st); err != nil {
				t.Fatal(err)
			}
			if tt.otherUser {
				t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // down runs as someone else
			}
			if tt.retarget != nil {
				editState(t, dir, func(s *runstate.State) {
					x := &s.Hosts[0]
					if tt.jump {
						x = x.JumpHost
					}
					tt.retarget(x)
				})
			}
			if !tt.own {
				editState(t, dir, func(s *runstate.State) {
					x := &s.Hosts[0]
					if tt.jump {
						x = x.JumpHost
					}
					x.KnownHosts, x.IdentityFile = p.kh, p.id
				})
			}
			var mu sync.Mutex
			var asked []string
			conn := connectFunc(func(_ context.Context, tg runstate.Host, _ string) (Host, error) {
				mu.Lock()
				asked = append(asked, tg.Name)
				mu.Unlock()
				return nil, errors.New("test: not connecting")
			})
			_, err := Run(context.Background(), dir, Options{Connector: conn, KnownHosts: tt.flagsKH, Identities: tt.flagsID, TrustState: true})
			if tt.refused == "" {
				if len(asked) != 1 || err == nil || !strings.Contains(err.Error(), "test: not connecting") {
					t.Fatalf("down refused paths it should use (connect asked for %v): %v", asked, err)
				}
				return
			}
			if len(asked) != 0 {
				t.Errorf("down connected to %v with a path it must refuse", asked)
			}
			if err == nil || !errors.Is(err, runstate.ErrPath) || !strings.Contains(err.Error(), "its "+tt.refused) ||
				!strings.Contains(err.Error(), "rlab down ") {
				t.Fatalf("down's error does not refuse the %s naming it and the fix: %v", tt.refused, err)
			}
		})
	}
}

// editState rewrites dir's state.json as a person would, without rlab.
func editState(t *testing.T, dir string, f func(*runstate.State)) {
	t.Helper()
	p := filepath.Join(dir, runstate.File)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var st runstate.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	f(&st)
	if b, err = json.MarshalIndent(&st, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDownStateFIFO: a state.json that is a FIFO is refused, not waited on.
func TestDownStateFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, runstate.File)); err != nil {
		t.Skip("no mkfifo here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), dir, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "state.json") {
			t.Fatalf("down of a FIFO state.json: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("down hangs on a FIFO named state.json")
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// TestDownRemovesOnlyOwnProvisioned: rlab down --remove-provisioned removes,
// as root, the packages state.json lists; a received (or edited) state.json
// could list openssh-server or sudo. Only a list this user's rlab signed is
// removed; another is left, said so, and its host not even connected for it.
func TestDownRemovesOnlyOwnProvisioned(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*runstate.Provision) // nil: the run's own list
		removes bool
	}{
		{name: "own run's packages", removes: true},
		{name: "a package added to the own list", edit: func(p *runstate.Provision) { p.Installed = append(p.Installed, "openssh-server") }},
		{name: "the list replaced", edit: func(p *runstate.Provision) { p.Installed = []string{"sudo"} }},
		{name: "another family", edit: func(p *runstate.Provision) { p.Family = "rhel" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			dir := t.TempDir()
			h := runstate.Host{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22,
				Provision: &runstate.Provision{Family: "debian", Packages: []string{"make"}, Installed: []string{"make"}, Done: true}}
			st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(), Hosts: []runstate.Host{h}}
			if _, err := runstate.Create(dir, st); err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				editState(t, dir, func(s *runstate.State) { tt.edit(s.Hosts[0].Provision) })
			}
			var asked []string
			conn := connectFunc(func(_ context.Context, tg runstate.Host, _ string) (Host, error) {
				asked = append(asked, tg.Name)
				return nil, errors.New("test: not connecting")
			})
			res, err := Run(context.Background(), dir, Options{Connector: conn, RemoveProvisioned: true, TrustState: true})
			if tt.removes {
				if len(asked) != 1 {
					t.Fatalf("down did not go to remove the run's own packages (asked %v): %v", asked, err)
				}
				return
			}
			if len(asked) != 0 {
				t.Fatalf("down connected to %v to remove packages a changed state.json names", asked)
			}
			if err != nil || res == nil || len(res.Left) != 1 || !strings.Contains(res.Left[0], "not written by your rlab") {
				t.Fatalf("down does not say it left the packages: %+v, %v", res, err)
			}
		})
	}
}

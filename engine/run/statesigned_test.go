package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/steps"
)

// TestDownStateSignedWhole: whoever can write a run directory can swap its
// state.json; its become flag, run ID and effects decide what rlab down
// does as root on the hosts. Down acts on a state.json only as this user's
// rlab signed it whole (or when the user vouches for it, --trust-state):
// an edited become, run ID, agent pid or effect is refused before any
// connection (issue 24, round 3 lows, item 1).
func TestDownStateSignedWhole(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*runstate.State) // nil: the run's own file
		otherUser bool                  // signed by another user's key
		trust     bool                  // rlab down --trust-state
		refused   bool
		become    bool // the Target down connects with
	}{
		{name: "own run", become: false},
		{name: "own run with become", edit: nil, become: true},
		{name: "become set afterwards", edit: func(s *runstate.State) { s.Hosts[0].Become = true }, refused: true},
		{name: "an effect added", edit: func(s *runstate.State) {
			s.Effects = append(s.Effects, steps.Effect{Host: "a", Type: "proc", ID: "wl.y", Argv: []string{"sshd"}, PID: 1})
		}, refused: true},
		{name: "an effect's pid changed", edit: func(s *runstate.State) { s.Effects[0].PID = 1 }, refused: true},
		{name: "a kept device made pending", edit: func(s *runstate.State) { s.Effects[1].Keep = false }, refused: true},
		{name: "the agent's pid changed", edit: func(s *runstate.State) { s.Hosts[0].AgentPID = 1 }, refused: true},
		{name: "the run ID changed", edit: func(s *runstate.State) { s.RunID = "t-2" }, refused: true},
		{name: "the work dir changed", edit: func(s *runstate.State) { s.Hosts[0].WorkDir = "/etc" }, refused: true},
		{name: "the signature removed", edit: func(s *runstate.State) { s.MAC = "" }, refused: true},
		{name: "signed by another user's rlab", otherUser: true, refused: true},
		{name: "become set afterwards, the user trusts it", edit: func(s *runstate.State) { s.Hosts[0].Become = true }, trust: true, become: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			dir := t.TempDir()
			h := runstate.Host{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true, AgentPID: 1 << 22,
				WorkDir: "/tmp/rlab/t-1/a", Become: tt.become && tt.edit == nil}
			st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(), Hosts: []runstate.Host{h},
				Effects: []steps.Effect{
					{Host: "a", Type: "proc", ID: "wl.x", Argv: []string{"sleep", "300"}, PID: 1 << 22},
					{Host: "a", Type: "rxe", ID: "rxe0", Created: true, Keep: true},
				}}
			if _, err := runstate.Create(dir, st); err != nil {
				t.Fatal(err)
			}
			if tt.otherUser {
				t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			}
			if tt.edit != nil {
				editState(t, dir, tt.edit)
			}
			var mu sync.Mutex
			var asked []Target
			conn := ConnectFunc(func(_ context.Context, tg Target, _ string) (Host, error) {
				mu.Lock()
				asked = append(asked, tg)
				mu.Unlock()
				return nil, errors.New("test: not connecting")
			})
			before, err := os.ReadFile(filepath.Join(dir, runstate.File))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Down(context.Background(), dir, DownOptions{Connector: conn, TrustState: tt.trust})
			if tt.refused {
				if len(asked) != 0 {
					t.Errorf("down connected (become %v) for a state.json your rlab did not sign", asked[0].Become)
				}
				if !errors.Is(err, ErrStateUnsigned) || !strings.Contains(err.Error(), "rlab down --trust-state "+dir) {
					t.Errorf("down's error does not refuse the state.json naming the fix: %v", err)
				}
				if after, _ := os.ReadFile(filepath.Join(dir, runstate.File)); string(after) != string(before) {
					t.Error("down rewrote a state.json it refused")
				}
				return
			}
			if len(asked) != 1 || asked[0].Become != tt.become {
				t.Fatalf("down connected %+v, want once with become %v: %v", asked, tt.become, err)
			}
		})
	}
}

// TestDownKeepsStateSigned: what down journals of the user's own run stays
// signed (a second down acts on it), and nothing down writes signs a file
// it was only told to trust.
func TestDownKeepsStateSigned(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, own := range []bool{true, false} {
		dir := t.TempDir()
		st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(),
			Hosts:   []runstate.Host{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22}},
			Effects: []steps.Effect{{Host: "vm", Type: "proc", ID: "wl.x"}}}
		if _, err := runstate.Create(dir, st); err != nil {
			t.Fatal(err)
		}
		if !own {
			editState(t, dir, func(s *runstate.State) { s.Lab = "received" })
		}
		if _, err := Down(context.Background(), dir, DownOptions{TrustState: !own}); err != nil {
			t.Fatalf("down (own %v): %v", own, err)
		}
		after := readState(t, dir)
		if after.TornDown == nil {
			t.Fatalf("down (own %v) did not journal torn_down", own)
		}
		j, err := runstate.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := j.Signed(); got != own {
			t.Errorf("state.json after down of an own run %v: signed %v", own, got)
		}
	}
}

// TestDownReadsOlderStateJump: a state.json written by an rlab from before
// hops were recorded (testdata/state-older-jump.json, made and signed by
// rlab at b9ade18 with the key below) names a host's bastions as a jump
// string. Down still acts on it as signed (its outside identity_file
// included) and reaches the host through the bastions the string names,
// with the host's user unless a hop names one.
func TestDownReadsOlderStateJump(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if err := os.MkdirAll(filepath.Join(cfg, "rlab"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "rlab", "state.key"), []byte("rlab test key of an older state!"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "state-older-jump.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"hops"`) || !strings.Contains(string(b), `"jump"`) {
		t.Fatal("the fixture is not an older state.json (a jump string, no hops)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, runstate.File), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var asked []Target
	conn := ConnectFunc(func(_ context.Context, tg Target, _ string) (Host, error) {
		asked = append(asked, tg)
		return nil, errors.New("test: not connecting")
	})
	_, err = Down(context.Background(), dir, DownOptions{Connector: conn, Parallel: 1})
	if len(asked) != 1 || err == nil || !strings.Contains(err.Error(), "test: not connecting") {
		t.Fatalf("down of an older signed state.json: connect asked %d times: %v", len(asked), err)
	}
	got, err := stateTarget(asked[0].Host, []string{"/ids/run"})
	if err != nil {
		t.Fatal(err)
	}
	id := []string{"/nonexistent/id_lab"}
	want := sshx.Target{Name: "a", Address: "192.0.2.1", Port: 22, User: "root", IdentityFiles: id,
		Jump: &sshx.Target{Name: "bastion 10.0.0.2", Address: "10.0.0.2", User: "root", IdentityFiles: id,
			Jump: &sshx.Target{Name: "bastion 10.0.0.1", Address: "10.0.0.1", Port: 2222, User: "ops", IdentityFiles: id, NoJump: true}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the host of an older state.json (-want +got):\n%s", d)
	}
}

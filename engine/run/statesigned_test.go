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
		edit      func(*State) // nil: the run's own file
		otherUser bool         // signed by another user's key
		trust     bool         // rlab down --trust-state
		refused   bool
		become    bool // the Target down connects with
	}{
		{name: "own run", become: false},
		{name: "own run with become", edit: nil, become: true},
		{name: "become set afterwards", edit: func(s *State) { s.Hosts[0].Become = true }, refused: true},
		{name: "an effect added", edit: func(s *State) {
			s.Effects = append(s.Effects, steps.Effect{Host: "a", Type: "proc", ID: "wl.y", Argv: []string{"sshd"}, PID: 1})
		}, refused: true},
		{name: "an effect's pid changed", edit: func(s *State) { s.Effects[0].PID = 1 }, refused: true},
		{name: "a kept device made pending", edit: func(s *State) { s.Effects[1].Keep = false }, refused: true},
		{name: "the agent's pid changed", edit: func(s *State) { s.Hosts[0].AgentPID = 1 }, refused: true},
		{name: "the run ID changed", edit: func(s *State) { s.RunID = "t-2" }, refused: true},
		{name: "the work dir changed", edit: func(s *State) { s.Hosts[0].WorkDir = "/etc" }, refused: true},
		{name: "the signature removed", edit: func(s *State) { s.MAC = "" }, refused: true},
		{name: "signed by another user's rlab", otherUser: true, refused: true},
		{name: "become set afterwards, the user trusts it", edit: func(s *State) { s.Hosts[0].Become = true }, trust: true, become: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			dir := t.TempDir()
			h := StateHost{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true, AgentPID: 1 << 22,
				WorkDir: "/tmp/rlab/t-1/a", Become: tt.become && tt.edit == nil}
			st := State{Lab: "t", RunID: "t-1", Started: time.Now(), Hosts: []StateHost{h},
				Effects: []steps.Effect{
					{Host: "a", Type: "proc", ID: "wl.x", Argv: []string{"sleep", "300"}, PID: 1 << 22},
					{Host: "a", Type: "rxe", ID: "rxe0", Created: true, Keep: true},
				}}
			if _, err := newJournal(dir, st); err != nil {
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
			before, err := os.ReadFile(filepath.Join(dir, StateFile))
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
				if after, _ := os.ReadFile(filepath.Join(dir, StateFile)); string(after) != string(before) {
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
		st := State{Lab: "t", RunID: "t-1", Started: time.Now(),
			Hosts:   []StateHost{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22}},
			Effects: []steps.Effect{{Host: "vm", Type: "proc", ID: "wl.x"}}}
		if _, err := newJournal(dir, st); err != nil {
			t.Fatal(err)
		}
		if !own {
			editState(t, dir, func(s *State) { s.Lab = "received" })
		}
		if _, err := Down(context.Background(), dir, DownOptions{TrustState: !own}); err != nil {
			t.Fatalf("down (own %v): %v", own, err)
		}
		after := readState(t, dir)
		if after.TornDown == nil {
			t.Fatalf("down (own %v) did not journal torn_down", own)
		}
		if got := stateSigned(readStateKey(false), after); got != own {
			t.Errorf("state.json after down of an own run %v: signed %v", own, got)
		}
	}
}

package down

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/steps"
)

// impairHost answers down's impair.remove like an agent, recording what
// it was asked; every other call fails (down goes on without them).
type impairHost struct{ asked []proto.ImpairRemoveParams }

func (h *impairHost) Name() string { return "a" }
func (h *impairHost) Close() error { return nil }
func (h *impairHost) Send(ctx context.Context, r *rpc.Request) error {
	p, res, ok := rpc.Match(r, rpc.ImpairRemove)
	if !ok {
		return fmt.Errorf("test: no %s here", r.Method())
	}
	h.asked = append(h.asked, p)
	*res = proto.ImpairResult{Netdev: p.Netdev, Qdisc: "noqueue", Handle: "0:", Removed: true}
	return nil
}

// TestDownGivesBackJournaledGSO: `rlab down` after a killed agent asks for
// the netdev's own gso_max_segs as the run's agent reported it (journaled
// with the impairment), not for nothing, which had down's agent give the
// kernel's default back over a lower value an admin had set (attack rounds
// 13, 14).
func TestDownGivesBackJournaledGSO(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		name string
		own  uint32
	}{
		{"an admin's lower value", 7},
		{"not known (an older rlab's state.json)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := runstate.State{Lab: "t", RunID: "t-1", Started: time.Now(),
				Hosts:   []runstate.Host{{Name: "a", Slug: "a", Address: "127.0.0.1", Port: 22, Connected: true}},
				Effects: []steps.Effect{{Host: "a", Type: "impair", ID: `loss["1"]`, Netdev: "eth1", GSOOwn: tc.own}}}
			if _, err := runstate.Create(dir, st); err != nil {
				t.Fatal(err)
			}
			h := &impairHost{}
			conn := connectFunc(func(context.Context, runstate.Host, string) (Host, error) { return h, nil })
			if _, err := Run(context.Background(), dir, Options{Connector: conn}); err != nil {
				t.Fatal(err)
			}
			want := proto.ImpairRemoveParams{Netdev: "eth1", GSOOwn: tc.own}
			if len(h.asked) != 1 || h.asked[0] != want {
				t.Errorf("down asked impair.remove %+v, want once %+v", h.asked, want)
			}
		})
	}
}

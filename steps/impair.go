package steps

import (
	"context"
	"fmt"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// Impair puts netem on a host's netdev (the agent's impair.apply) from
// Apply until Undo. The effect is journaled before the agent is asked, so a
// controller that dies in between still leaves `rlab down` a record to undo;
// what the kernel then reports (the root qdisc read back) is journaled too.
type Impair struct {
	Name   string // reference form of the impair block
	Host   string
	Netdev string
	// Text is the impairment in tc's words ("loss 1% delay 2ms").
	Text   string
	Params proto.ImpairParams

	mu      sync.Mutex
	applied bool
	removed bool
	// Result is the root qdisc the agent read back after applying.
	Result *proto.ImpairResult
}

func (s *Impair) Describe() string {
	return fmt.Sprintf("impair %s: netem %s on %s of host %s", s.Name, s.Text, s.Netdev, s.Host)
}

func (s *Impair) effect() Effect {
	return Effect{Host: s.Host, Type: "impair", ID: s.Name, Netdev: s.Netdev}
}

func (s *Impair) Apply(ctx context.Context, env *Env) error {
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	e := s.effect()
	e.Pending, e.Detail = true, "netem "+s.Text
	if err := env.Note(e); err != nil {
		return err
	}
	s.mu.Lock()
	s.applied = true // from here Undo asks the agent, whatever the answer was
	s.mu.Unlock()
	p := s.Params
	p.ID, p.Netdev = s.Name, s.Netdev
	res, err := rpc.Invoke(ctx, h, rpc.ImpairApply, p)
	if err != nil {
		return fmt.Errorf("impair %s: netem %s on %s of host %q: %w", s.Name, s.Text, s.Netdev, s.Host, err)
	}
	s.mu.Lock()
	s.Result = &res
	s.mu.Unlock()
	e = s.effect()
	e.Detail, e.GSOOwn = appliedDetail(&res), res.GSOOwn
	return env.Note(e)
}

// Undo removes rlab's netem from the netdev; idempotent.
func (s *Impair) Undo(ctx context.Context, env *Env) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.applied || s.removed {
		return nil
	}
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	res, err := rpc.Invoke(ctx, h, rpc.ImpairRemove, proto.ImpairRemoveParams{Netdev: s.Netdev})
	if err != nil {
		return fmt.Errorf("remove impairment %s from %s of host %q: %w", s.Name, s.Netdev, s.Host, err)
	}
	s.removed = true
	e := s.effect()
	e.Undone, e.Detail = true, fmt.Sprintf("removed, root qdisc now %s %s", res.Qdisc, res.Handle)
	if res.GSO != "" {
		e.Detail += ", " + res.GSO
	}
	if s.Result != nil {
		e.Detail = appliedDetail(s.Result) + "; " + e.Detail
	}
	return env.Note(e)
}

// Applied returns what the agent read back after applying, or nil.
func (s *Impair) Applied() *proto.ImpairResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Result
}

// appliedDetail is the root qdisc as the agent read it back after applying,
// e.g. "applied netem 524c: loss 1%".
func appliedDetail(r *proto.ImpairResult) string {
	d := fmt.Sprintf("applied %s %s %s", r.Qdisc, r.Handle, r.Netem)
	if r.GSO != "" {
		d += "; " + r.GSO
	}
	return d
}

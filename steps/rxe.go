package steps

import (
	"context"
	"fmt"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// RXE ensures a Soft-RoCE device on a host's netdev. A device that already
// existed is used but recorded as not ours, so Undo never deletes it.
type RXE struct {
	Name   string // reference form of the rxe block
	Host   string
	Device string
	Netdev string
	Keep   bool
	// WaitMs bounds the wait for the port to become ACTIVE (0: the agent's default).
	WaitMs int

	mu      sync.Mutex
	created bool
	deleted bool
}

func (s *RXE) Describe() string {
	return fmt.Sprintf("rxe %s: create %s on %s of host %s", s.Name, s.Device, s.Netdev, s.Host)
}

func (s *RXE) Apply(ctx context.Context, env *Env) error {
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	if err := env.note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Pending: true}); err != nil {
		return err
	}
	info, err := rpc.Invoke(ctx, h, rpc.RXEEnsure, proto.RXEEnsureParams{Name: s.Device, Netdev: s.Netdev, WaitMs: s.WaitMs})
	if err != nil {
		return fmt.Errorf("create rxe %q on %s of host %q: %w", s.Device, s.Netdev, s.Host, err)
	}
	s.mu.Lock()
	s.created = info.Created
	s.mu.Unlock()
	if err := env.note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Created: info.Created}); err != nil {
		return err
	}
	env.SetRXE(s.Name, &info)
	return nil
}

// Undo deletes the device when this run created it and it is not kept.
func (s *RXE) Undo(ctx context.Context, env *Env) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.created || s.deleted || s.Keep || env.Keep {
		return nil
	}
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	_, err = rpc.Invoke(ctx, h, rpc.RXEDelete, proto.RXEDeleteParams{Name: s.Device})
	if err != nil {
		return fmt.Errorf("delete rxe %q on host %q: %w", s.Device, s.Host, err)
	}
	s.deleted = true
	return env.note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: s.Netdev, Created: true, Undone: true})
}

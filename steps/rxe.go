package steps

import (
	"context"
	"fmt"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// RXE readies an RDMA device for workloads: it ensures a Soft-RoCE (rxe)
// or soft-iWARP (siw) device on a host's netdev, or, for an rdma block,
// checks an existing device's port (Type "rdma"). A device that already
// existed is used but recorded as not ours (Created false), so Undo, the
// agent's cleanup and `rlab down` never delete it.
type RXE struct {
	Name   string // reference form of the rxe/siw/rdma block
	Type   string // "rxe" ("" too), "siw" or "rdma"
	Host   string
	Device string
	Netdev string
	Port   int // rdma: the port to use
	Keep   bool
	// WaitMs bounds the wait for the port to become ACTIVE (0: the agent's default).
	WaitMs int

	mu      sync.Mutex
	created bool
	deleted bool
}

func (s *RXE) typ() string {
	if s.Type == "" {
		return "rxe"
	}
	return s.Type
}

func (s *RXE) Describe() string {
	if s.typ() == "rdma" {
		return fmt.Sprintf("rdma %s: use %s port %d of host %s as found", s.Name, s.Device, s.Port, s.Host)
	}
	return fmt.Sprintf("%s %s: create %s on %s of host %s", s.typ(), s.Name, s.Device, s.Netdev, s.Host)
}

func (s *RXE) Apply(ctx context.Context, env *Env) error {
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	if s.typ() == "rdma" {
		// Journaled as found, not created: nothing undoes it.
		info, err := rpc.Invoke(ctx, h, rpc.RDMAUse, proto.RDMAUseParams{Name: s.Device, Port: s.Port})
		if err != nil {
			return fmt.Errorf("use RDMA device %q port %d of host %q (rdma %s): %w", s.Device, s.Port, s.Host, s.Name, err)
		}
		if err := env.Note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: info.Netdev, Keep: true}); err != nil {
			return err
		}
		env.SetRXE(s.Name, &info)
		return nil
	}
	if err := env.Note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Pending: true}); err != nil {
		return err
	}
	params := proto.RXEEnsureParams{Name: s.Device, Netdev: s.Netdev, WaitMs: s.WaitMs}
	if s.typ() != "rxe" {
		params.Type = s.typ()
	}
	info, err := rpc.Invoke(ctx, h, rpc.RXEEnsure, params)
	if err != nil {
		return fmt.Errorf("create %s %q on %s of host %q: %w", s.typ(), s.Device, s.Netdev, s.Host, err)
	}
	s.mu.Lock()
	s.created = info.Created
	s.mu.Unlock()
	if err := env.Note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Created: info.Created}); err != nil {
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
		return fmt.Errorf("delete %s %q on host %q: %w", s.typ(), s.Device, s.Host, err)
	}
	s.deleted = true
	return env.Note(Effect{Host: s.Host, Kind: "rxe", ID: s.Device, Netdev: s.Netdev, Created: true, Undone: true})
}

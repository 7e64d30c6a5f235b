package steps

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"unicode"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/kinds"
)

// Device readies an RDMA device for workloads: it ensures a Soft-RoCE (rxe)
// or soft-iWARP (siw) device on a host's netdev, or, for an rdma block,
// checks an existing device's port (Type "rdma"). A device that already
// existed is used but recorded as not ours (Created false), so Undo, the
// agent's cleanup and `rlab down` never delete it.
type Device struct {
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

func (s *Device) typ() string {
	if s.Type == "" {
		return "rxe"
	}
	return s.Type
}

func (s *Device) Describe() string {
	if s.typ() == "rdma" {
		return fmt.Sprintf("rdma %s: use %s port %d of host %s as found", s.Name, s.Device, s.Port, s.Host)
	}
	return fmt.Sprintf("%s %s: create %s on %s of host %s", s.typ(), s.Name, s.Device, s.Netdev, s.Host)
}

func (s *Device) Apply(ctx context.Context, env *Env) error {
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
		if err := checkDeviceInfo(s, &info, false); err != nil {
			return err
		}
		if err := env.Note(Effect{Host: s.Host, Type: "rxe", ID: s.Device, Netdev: info.Netdev, Keep: true}); err != nil {
			return err
		}
		env.SetDevice(s.Name, &info)
		return nil
	}
	if err := env.Note(Effect{Host: s.Host, Type: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Pending: true}); err != nil {
		return err
	}
	params := proto.DeviceEnsureParams{Name: s.Device, Netdev: s.Netdev, WaitMs: s.WaitMs}
	if s.typ() != "rxe" {
		params.Type = s.typ()
	}
	info, err := rpc.Invoke(ctx, h, rpc.DeviceEnsure, params)
	if err != nil {
		return fmt.Errorf("create %s %q on %s of host %q: %w", s.typ(), s.Device, s.Netdev, s.Host, err)
	}
	s.mu.Lock()
	s.created = info.Created
	s.mu.Unlock()
	if err := checkDeviceInfo(s, &info, true); err != nil {
		// Journaled as asked: down deletes it if the run created it.
		env.Note(Effect{Host: s.Host, Type: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Created: info.Created})
		return err
	}
	if err := env.Note(Effect{Host: s.Host, Type: "rxe", ID: s.Device, Netdev: s.Netdev, Keep: s.Keep, Created: info.Created}); err != nil {
		return err
	}
	env.SetDevice(s.Name, &info)
	return nil
}

// Undo deletes the device when this run created it and it is not kept.
func (s *Device) Undo(ctx context.Context, env *Env) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.created || s.deleted || s.Keep || env.Keep {
		return nil
	}
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	_, err = rpc.Invoke(ctx, h, rpc.DeviceDelete, proto.DeviceDeleteParams{Name: s.Device})
	if err != nil {
		return fmt.Errorf("delete %s %q on host %q: %w", s.typ(), s.Device, s.Host, err)
	}
	s.deleted = true
	return env.Note(Effect{Host: s.Host, Type: "rxe", ID: s.Device, Netdev: s.Netdev, Created: true, Undone: true})
}

// checkDeviceInfo checks what a host says of the RDMA device it made or found
// before any other host's workload sees it: the address goes into a
// client's argv on another host (a perftest or rping client's server
// address, a program's self.server_address), the device name and gid index
// too (self.server_device, -x). A host may lie about its numbers, but it
// hands no other host an option or a word that is no address (SECURITY.md).
// ensured: the device was asked by name on a netdev (rxe.ensure), so the
// answer names those; a found one (rdma.use) names its own netdev.
func checkDeviceInfo(s *Device, info *proto.DeviceInfo, ensured bool) error {
	bad := func(field, why string, v any) error {
		return fmt.Errorf("%s %q on host %q: the host answered %s %.80q, %s: refusing it (a host's answer reaches other hosts' commands)", s.typ(), s.Device, s.Host, field, fmt.Sprint(v), why)
	}
	switch {
	case info.Created && s.Device != "" && info.Name != s.Device:
		return bad("name", fmt.Sprintf("not the device it was asked to create (%q)", s.Device), info.Name)
	case !kinds.ValidDeviceName(info.Name):
		// A device found on the netdev keeps its own name.
		return bad("name", "not an RDMA device name (1-63 of A-Z a-z 0-9 _ . -, not starting with -)", info.Name)
	}
	if ensured && info.Netdev != s.Netdev {
		return bad("netdev", fmt.Sprintf("not the netdev asked for (%q)", s.Netdev), info.Netdev)
	}
	if !validNetdev(info.Netdev) {
		return bad("netdev", "not a netdev name (1-15 bytes, no /, :, whitespace or control characters, not . or ..)", info.Netdev)
	}
	if info.IPv4 != "" {
		a, err := netip.ParseAddr(info.IPv4)
		if err != nil || !a.Is4() || a.String() != info.IPv4 {
			return bad("ipv4", "not an IPv4 address", info.IPv4)
		}
	}
	if info.GIDIndex < 0 || info.GIDIndex > maxGIDIndex {
		return bad("gid_index", fmt.Sprintf("not within 0-%d", maxGIDIndex), info.GIDIndex)
	}
	if info.Port < 0 || info.Port > 255 {
		return bad("port", "not within 0-255", info.Port)
	}
	// The transport and driver are copied into every workload of the
	// device (results.Workload.RDMA: results.json, summary.md, the
	// report), so one answer of megabytes grew each of them by that much
	// (SECURITY 155). The agent says "RoCE", "InfiniBand", "iWARP" or
	// "unspecified", and "rxe", "siw" or "hw".
	for _, f := range []struct{ field, v string }{{"transport", info.Transport}, {"kind", info.Driver}} {
		if f.v != "" && !plainName(f.v, "_.-") || len(f.v) > 32 {
			return bad(f.field, "not a transport or driver's name (1-32 of A-Z a-z 0-9 _ . -)", f.v)
		}
	}
	// The pair's smaller active MTU becomes both sides' -m: an IB MTU
	// (the kernel's enum ib_mtu), or 0 for unknown.
	switch info.ActiveMTU {
	case 0, 256, 512, 1024, 2048, 4096:
	default:
		return bad("active_mtu", "not an InfiniBand MTU (256, 512, 1024, 2048 or 4096)", info.ActiveMTU)
	}
	return nil
}

// maxGIDIndex bounds a GID table index (the kernel's tables are far
// smaller; a port's table size is a u32 in sysfs, but no device has more).
const maxGIDIndex = 1 << 16

// validNetdev is the kernel's dev_valid_name, with control characters
// refused too (engine/lab and the agent check the same).
func validNetdev(n string) bool {
	if n == "" || len(n) > 15 || n == "." || n == ".." {
		return false
	}
	for _, r := range n {
		if r == '/' || r == ':' || r <= ' ' || r == 0x7f || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

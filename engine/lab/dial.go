package lab

import (
	"fmt"
	"strings"
)

// Dial is the address a two-sided workload's client dials when the lab does
// not get it from an rxe device (the tcp baseline), and why that one: the
// TCP baseline must cross the link the RDMA workloads cross, not the
// management network SSH uses, or "RDMA next to TCP" compares two links.
type Dial struct {
	// Device, when set: the IPv4 address of this rxe's netdev on the server
	// host, known once the run has created it (the agent's answer).
	Device *Device
	// Addr, when RXE is nil: the address itself (a VM's data network
	// address, else the host's SSH address).
	Addr string
	// Why says where the address comes from, for the plan and the results:
	// "rxe server's netdev eth1", "VM data network rdma",
	// "SSH address: no rxe on host server".
	Why string
}

// Text is the dial for people: "10.99.0.1 (VM data network rdma)" or "the
// IPv4 of eth1 (rxe server's netdev)".
func (d Dial) Text() string {
	if d.Device != nil {
		return fmt.Sprintf("the IPv4 of %s (%s)", d.Device.Netdev, d.Why)
	}
	return fmt.Sprintf("%s (%s)", d.Addr, d.Why)
}

// ServerDial says which address the client of w dials on w's server host,
// by one rule (labs/README.md, "Which address the tcp client dials"):
//  1. the server host has rxe devices in the lab: the IPv4 address of the
//     first one's netdev, in file order (the data network the RDMA workloads
//     use; with several data netdevs, declare first the rxe whose link the
//     baseline should cross);
//  2. else a local VM: the address of its first data network;
//  3. else the host's SSH address, and Why says there is no rxe to follow.
//
// The rule reads only the lab's hosts and rxe devices, never its other
// workloads, so `--only` and a full run dial the same address.
func (l *Lab) ServerDial(w *Workload) Dial {
	h := w.ServerHost
	switch {
	case h == nil:
		return Dial{}
	case w.ServerDevice != nil: // RDMA tools: their own server rxe
		return Dial{Device: w.ServerDevice, Why: fmt.Sprintf("rxe %s's netdev", w.ServerDevice.Name)}
	}
	for _, x := range l.Devices {
		if x.Host == h {
			return Dial{Device: x, Why: fmt.Sprintf("rxe %s's netdev", x.Name)}
		}
	}
	if h.VM != nil && len(h.VM.Networks) > 0 {
		n := h.VM.Networks[0]
		a, _, _ := strings.Cut(n.Address, "/")
		return Dial{Addr: a, Why: "VM data network " + n.Name}
	}
	if h.VM != nil {
		return Dial{Why: fmt.Sprintf("no rxe or data network on VM host %s", h.Name)}
	}
	return Dial{Addr: h.Address, Why: fmt.Sprintf("SSH address: no rxe on host %s", h.Name)}
}
